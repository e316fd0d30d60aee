"""Aggregating a reward file larger than comfortable: scan_rewards against read_rewards.

Generates (seeded) a Harbor reward JSONL file of at least 2 GB in ``benchmarks/_data/``
and runs ``aggregate`` on it three ways, each in its own subprocess so that peak RSS
(``ru_maxrss``, the whole process, imports included) is its own:

scan            ``mk.aggregate(mk.scan_rewards(path))``: streaming, strict, bit-identical
eager-pandas    ``mk.aggregate(mk.read_rewards(path))`` (the whole file in memory)
eager-polars    ``mk.aggregate(mk.read_rewards(path, backend="polars"))``

The file mixes the generator's rows (3 keys, ``null`` lines, ``{}``, missing keys, ints
and floats) and ends with rows carrying a fourth key, ``judge``, that first appears after
tens of millions of rows, which a reader inferring its schema from the first rows drops.

    python benchmarks/bench_scan.py            # >= 2 GB (about 50M lines)
    python benchmarks/bench_scan.py --quick    # 200 MB
    python benchmarks/bench_scan.py --json     # JSON rows for run.py
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _bench import emit, peak_rss_mb, row, run_child  # noqa: E402
from gen_rewards import generate  # noqa: E402

METHODS = ["scan", "eager-pandas", "eager-polars"]
BLOCK_LINES = 1_000_000
DISTINCT_BLOCKS = 6


def make_file(path: Path, target_bytes: int, *, seed: int = 0) -> Path:
    """At least ``target_bytes`` of reward JSONL: seeded 1M-line blocks, then late keys.

    Writing 50M distinct lines with the per-line generator would take minutes, so
    ``DISTINCT_BLOCKS`` blocks are generated (seeds ``seed..``) and laid out in a seeded
    random order.
    """
    if path.exists() and path.stat().st_size >= target_bytes:
        return path
    rng = np.random.default_rng(seed)
    blocks = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(DISTINCT_BLOCKS):
            block = Path(tmp) / f"block{i}.jsonl"
            generate(block, BLOCK_LINES, seed=seed + i)
            blocks.append(block.read_bytes())
    late = rng.random(100_000)
    tail = "".join(
        f'{{"correctness": {int(v > 0.5)}, "judge": {round(float(v), 4)!r}}}\n'
        if i % 3
        else "null\n"
        for i, v in enumerate(late)
    ).encode()
    written = 0
    tmp_path = path.with_suffix(".partial")
    with open(tmp_path, "wb") as fh:
        while written + len(tail) < target_bytes:
            block = blocks[int(rng.integers(len(blocks)))]
            fh.write(block)
            written += len(block)
        fh.write(tail)
    tmp_path.rename(path)
    return path


def _child(method: str, path: str) -> None:
    import metrickit as mk

    import_mb = peak_rss_mb()
    start = time.perf_counter()
    if method == "scan":
        result = mk.aggregate(mk.scan_rewards(path))
    elif method == "eager-pandas":
        result = mk.aggregate(mk.read_rewards(path))
    else:
        result = mk.aggregate(mk.read_rewards(path, backend="polars"))
    seconds = time.perf_counter() - start
    print(json.dumps({"method": method, "seconds": seconds, "peak_mb": peak_rss_mb(),
                      "import_mb": import_mb, "result": result}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gb", type=float, default=2.0, help="file size in GB (1e9 bytes)")
    parser.add_argument("--quick", action="store_true", help="a 0.2 GB file")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    parser.add_argument("--methods", nargs="*", default=METHODS)
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--make", nargs=2, metavar=("PATH", "BYTES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    if args.make:
        make_file(Path(args.make[0]), int(args.make[1]))
        print(json.dumps({"made": args.make[0]}))
        return
    gb = 0.2 if args.quick else args.gb
    data_dir = HERE / "_data"
    data_dir.mkdir(exist_ok=True)
    path = data_dir / f"rewards_scan_{gb:g}gb.jsonl"
    # Generated in a child process: Linux carries a parent's peak RSS (ru_maxrss) over
    # into the children it forks, which would inflate every measurement below.
    run_child([__file__, "--make", str(path), str(int(gb * 1e9))])
    size_mb = path.stat().st_size / 1e6
    results = {m: run_child([__file__, "--child", m, str(path)]) for m in args.methods}
    answers = {json.dumps(r["result"], sort_keys=True) for r in results.values()}
    if len(answers) != 1:
        raise SystemExit(f"methods disagree: {[r['result'] for r in results.values()]}")
    if args.json:
        scan = results["scan"]
        rows = [
            row(
                f"aggregate a {size_mb / 1000:.1f} GB reward file (scan_rewards, streaming)",
                scan["seconds"],
                f"read_rewards ({m.split('-')[1]}) + aggregate",
                results[m]["seconds"],
                peak_mb=scan["peak_mb"],
                baseline_peak_mb=results[m]["peak_mb"],
                note=f"peak RSS {scan['peak_mb'] / size_mb:.3f}x the file",
            )
            for m in ("eager-pandas", "eager-polars")
            if m in results and "scan" in results
        ]
        emit(rows)
        return
    print(f"file: {path.name}, {size_mb:,.0f} MB; result: {results[args.methods[0]]['result']}")
    print(f"{'method':<14}{'seconds':>9}{'MB/s':>9}{'peak RSS MB':>13}{'x file':>8}"
          f"{'time vs scan':>14}")
    scan_s = results.get("scan", {}).get("seconds")
    for method, r in results.items():
        rel = f"{r['seconds'] / scan_s:.2f}x" if scan_s else "-"
        print(f"{method:<14}{r['seconds']:>9.2f}{size_mb / r['seconds']:>9.1f}"
              f"{r['peak_mb']:>13.0f}{r['peak_mb'] / size_mb:>8.3f}{rel:>14}")


if __name__ == "__main__":
    main()
