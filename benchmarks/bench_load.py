"""Loading 1,000,000-line Harbor reward files: metrickit against the usual ways.

Each method runs in its own subprocess (so peak RSS is its own), best of ``--repeat`` calls.
The processes of the methods take turns, ``--rounds`` times (the order rotating), and each
method keeps its best: this machine drifts by ±15-30 % over a minute, and a baseline measured
in one quiet minute against metrickit in a busy one would say more about the minute than
about the code. Peak memory is the process's peak RSS during the first call, above its RSS
after imports (the import baseline); the largest over the rounds.

Every file shape of ``gen_rewards.py`` (``--shapes``) is read by metrickit (both backends)
and by polars with the schema given; the ``mix`` shape also by the plain loop and pandas.
The ``sparse`` shape (3 of 200 keys per row) has at most 90,000 lines: its frame is rows x
200 keys, and the frame readers refuse more than ``MAX_FILLED_CELLS`` zero-filled cells.

    python benchmarks/bench_load.py            # 1M lines (~42 MB for mix)
    python benchmarks/bench_load.py -n 200000  # quicker

Methods
-------
plain-loop      json.loads per line into dicts, then a pandas DataFrame (Harbor's metric.py style)
pandas          pandas.read_json(lines=True) after rewriting null lines to {} (it rejects them)
polars-schema   the baseline: polars.read_ndjson(path, schema=..., ignore_errors=True)
                .fill_null(0), the direct call a polars user writes (fast but unsafe: hides
                keys outside the schema, duplicates, null values)
polars-rewrite  the same read after rewriting null lines to {} with two bytes.replace
                passes (a second, labelled row; the rewrite is not needed by the call above)
metrickit       metrickit.read_rewards (strict), pandas and polars backends
metrickit-exact metrickit.read_rewards (pandas) in a process where polars cannot be imported,
                as after ``pip install metrickit`` without the ``polars`` extra: every block
                takes the exact path (the same frame); the cost of the lean install
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_rewards import SHAPES  # noqa: E402

METHODS = ["plain-loop", "pandas", "polars-schema", "polars-rewrite", "metrickit",
           "metrickit-polars", "metrickit-exact"]
SHAPE_METHODS = ["polars-schema", "polars-rewrite", "metrickit", "metrickit-polars"]
SLOW_METHODS = {"plain-loop", "pandas", "metrickit-exact"}
SPARSE_LINES = 90_000
POLARS_DIRECT = "polars.read_ndjson(path, schema, ignore_errors=True).fill_null(0) (lenient)"
POLARS_REWRITE = "null lines rewritten by 2 bytes.replace, then polars.read_ndjson (lenient)"


class _NoPolars:
    """A finder that makes polars unimportable, as if the extra were not installed."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] == "polars":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def _child(method: str, path: str, repeat: int, shape: str) -> None:
    import resource

    if method == "metrickit-exact":
        sys.meta_path.insert(0, _NoPolars())
    import pandas as pd

    import metrickit as mk

    def rss_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    baseline = rss_mb()

    def plain_loop() -> object:
        rows = []
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    rows.append(json.loads(line) or {})
        return pd.DataFrame(rows).fillna(0.0)

    def pandas_read_json() -> object:
        text = Path(path).read_text().replace("\nnull\n", "\n{}\n").replace("\nnull\n", "\n{}\n")
        if text.startswith("null\n"):
            text = "{}" + text[4:]
        import io

        return pd.read_json(io.StringIO(text), lines=True).fillna(0.0)

    def polars_schema() -> object:
        import polars as pl

        schema = {k: pl.Float64 for k in SHAPES[shape]}
        return pl.read_ndjson(path, schema=schema, ignore_errors=True).fill_null(0)

    def polars_rewrite() -> object:
        import polars as pl

        schema = {k: pl.Float64 for k in SHAPES[shape]}
        data = Path(path).read_bytes()
        data = data.replace(b"\nnull\n", b"\n{}\n").replace(b"\nnull\n", b"\n{}\n")
        if data.startswith(b"null\n"):
            data = b"{}" + data[4:]
        return pl.read_ndjson(data, schema=schema).fill_null(0.0)

    fns = {
        "plain-loop": plain_loop,
        "pandas": pandas_read_json,
        "polars-schema": polars_schema,
        "polars-rewrite": polars_rewrite,
        "metrickit": lambda: mk.read_rewards(path),
        "metrickit-polars": lambda: mk.read_rewards(path, backend="polars"),
        "metrickit-exact": lambda: mk.read_rewards(path),
    }
    # Peak memory is that of the first call alone; the timed repeats after it drop the
    # previous frame first, so no run pays for holding two results.
    start = time.perf_counter()
    frame = fns[method]()
    best = time.perf_counter() - start
    if method == "metrickit-exact" and "polars" in sys.modules:
        raise RuntimeError("metrickit-exact imported polars")
    peak = rss_mb()
    for _ in range(repeat - 1):
        del frame
        start = time.perf_counter()
        frame = fns[method]()
        best = min(best, time.perf_counter() - start)
    agg = None
    if method.startswith("metrickit"):
        agg_best = float("inf")
        for _ in range(repeat):
            start = time.perf_counter()
            mk.aggregate(frame)
            agg_best = min(agg_best, time.perf_counter() - start)
        agg = agg_best
    print(json.dumps({"method": method, "seconds": best, "peak_mb": peak - baseline,
                      "total_peak_mb": peak, "aggregate_seconds": agg}))


def _file(shape: str, lines: int) -> Path:
    data_dir = HERE / "_data"
    data_dir.mkdir(exist_ok=True)
    name = f"rewards_{lines}.jsonl" if shape == "mix" else f"rewards_{shape}_{lines}.jsonl"
    path = data_dir / name
    if not path.exists():
        # In a child process: Linux carries a parent's peak RSS (ru_maxrss) over into
        # the children it forks, so a parent that held the generated lines would
        # inflate every measurement below.
        subprocess.run(
            [sys.executable, str(HERE / "gen_rewards.py"), "-o", str(path), "-n", str(lines),
             "--shape", shape],
            check=True,
        )
    return path


def _measure(method: str, path: Path, repeat: int, shape: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--repeat", str(repeat), "--shape", shape,
         "--child", method, str(path)],
        capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _rounds(methods: list[str], path: Path, repeat: int, rounds: int, shape: str) -> dict:
    """Each method measured in ``rounds`` processes, taking turns with the others (the
    order rotating); its best time and its largest peak. The slow baselines (a plain loop,
    pandas) run in the first round only."""
    runs: dict[str, list[dict]] = {method: [] for method in methods}
    for turn in range(rounds):
        order = methods[turn % len(methods):] + methods[: turn % len(methods)]
        for method in order:
            if turn and method in SLOW_METHODS:
                continue
            calls = 1 if method in ("plain-loop", "metrickit-exact") else repeat
            runs[method].append(_measure(method, path, calls, shape))
    best = {}
    for method, measured in runs.items():
        aggregate = [m["aggregate_seconds"] for m in measured if m["aggregate_seconds"]]
        best[method] = {
            "method": method,
            "seconds": min(m["seconds"] for m in measured),
            "peak_mb": max(m["peak_mb"] for m in measured),
            "total_peak_mb": max(m["total_peak_mb"] for m in measured),
            "aggregate_seconds": min(aggregate) if aggregate else None,
        }
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", "--lines", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="calls per process (best)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="processes per method, taking turns with the other methods")
    parser.add_argument("--methods", nargs="*", default=METHODS)
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--quick", action="store_true", help="200,000 lines")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    parser.add_argument("--shape", default="mix", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child[0], args.child[1], args.repeat, args.shape)
        return
    if args.quick:
        args.lines = 200_000
    by_shape: dict[str, tuple[int, float, dict]] = {}
    for shape in args.shapes:
        lines = min(args.lines, SPARSE_LINES) if shape == "sparse" else args.lines
        path = _file(shape, lines)
        methods = args.methods if shape == "mix" else [
            m for m in args.methods if m in SHAPE_METHODS]
        results = _rounds(methods, path, args.repeat, args.rounds, shape)
        by_shape[shape] = (lines, path.stat().st_size / 1e6, results)
    if args.json:
        _emit_rows(by_shape)
        return
    if "mix" in by_shape:
        _print_methods(*by_shape["mix"])
    print()
    print(f"per shape: seconds (best of {args.rounds} x {args.repeat}), ratio = "
          "polars s / metrickit s (polars: the direct read_ndjson(path, schema=..., "
          "ignore_errors=True).fill_null(0)), peak = RSS growth of one call / file size; "
          "rewrite s: the same read after two bytes.replace passes over the null lines")
    print(f"{'shape':<10}{'lines':>10}{'MB':>7}{'polars s':>10}{'mk s':>8}{'ratio':>7}"
          f"{'peak':>7}{'mk-pl s':>9}{'ratio':>7}{'peak':>7}{'pl peak':>8}{'rewrite s':>10}")
    for shape, (lines, size_mb, r) in by_shape.items():
        base = r.get("polars-schema")
        cells = [f"{shape:<10}{lines:>10,}{size_mb:>7.1f}",
                 f"{base['seconds']:>10.3f}" if base else f"{'-':>10}"]
        for method in ("metrickit", "metrickit-polars"):
            if method not in r:
                cells.append(f"{'-':>22}")
                continue
            s = r[method]["seconds"]
            ratio = f"{base['seconds'] / s:.2f}x" if base else "-"
            cells.append(f"{s:>{8 if method == 'metrickit' else 9}.3f}{ratio:>7}"
                         f"{r[method]['peak_mb'] / size_mb:>6.2f}x")
        cells.append(f"{base['peak_mb'] / size_mb:>7.2f}x" if base else f"{'':>8}")
        rewrite = r.get("polars-rewrite")
        cells.append(f"{rewrite['seconds']:>10.3f}" if rewrite else "")
        print("".join(cells))


def _print_methods(lines: int, size_mb: float, results: dict) -> None:
    print(f"mix: {lines:,} lines, {size_mb:.1f} MB")
    print(f"{'method':<18}{'seconds':>9}{'MB/s':>9}{'peak MB':>9}{'x file':>8}"
          f"{'vs plain':>10}{'vs polars':>11}")
    plain = results.get("plain-loop", {}).get("seconds")
    polars = results.get("polars-schema", {}).get("seconds")
    for method, r in results.items():
        s = r["seconds"]
        vs_plain = f"{plain / s:.1f}x" if plain else "-"
        vs_polars = f"{polars / s:.2f}x" if polars else "-"
        print(f"{method:<18}{s:>9.3f}{size_mb / s:>9.1f}{r['peak_mb']:>9.0f}"
              f"{r['peak_mb'] / size_mb:>8.2f}{vs_plain:>10}{vs_polars:>11}")
    if "metrickit-exact" in results and "metrickit" in results:
        exact, fast = results["metrickit-exact"]["seconds"], results["metrickit"]["seconds"]
        print(f"without polars (pip install metrickit, no extra): {exact / fast:.1f}x the "
              f"time of read_rewards with polars ({fast:.3f} s -> {exact:.3f} s)")
    for method in ("metrickit", "metrickit-polars"):
        if method in results and results[method]["aggregate_seconds"] is not None:
            r = results[method]
            print(f"aggregate after {method}: {r['aggregate_seconds'] * 1000:.1f} ms "
                  f"= {100 * r['aggregate_seconds'] / r['seconds']:.1f} % of the load time")


def _emit_rows(by_shape: dict) -> None:
    """Rows for benchmarks/run.py: each strict metrickit load against its usual counterpart,
    and per shape against polars with the schema given."""
    from _bench import emit, row

    pairs = [
        ("metrickit", "plain-loop", "read_rewards (pandas)", "json.loads loop + DataFrame"),
        ("metrickit", "pandas", "read_rewards (pandas)", "pandas.read_json(lines=True)"),
        ("metrickit", "polars-schema", "read_rewards (pandas)", POLARS_DIRECT),
        ("metrickit-polars", "polars-schema", "read_rewards (polars)", POLARS_DIRECT),
        ("metrickit-polars", "polars-rewrite", "read_rewards (polars)", POLARS_REWRITE),
        ("metrickit-exact", "polars-schema", "read_rewards without polars (exact path)",
         POLARS_DIRECT),
    ]
    rows = []
    for shape, (lines, size_mb, results) in by_shape.items():
        for mine, base, label, base_label in pairs:
            if mine in results and base in results:
                peak = results[mine]["peak_mb"]
                rows.append(row(
                    f"load {lines:,} reward lines, shape {shape} ({size_mb:.0f} MB): {label}",
                    results[mine]["seconds"], base_label, results[base]["seconds"],
                    peak_mb=results[mine]["total_peak_mb"],
                    baseline_peak_mb=results[base]["total_peak_mb"],
                    note=f"peak above imports = {peak / size_mb:.2f}x the file; whole-process "
                         "peak RSS (ru_maxrss) shown",
                ))
    emit(rows)


if __name__ == "__main__":
    main()
