"""Peak memory on very long lines and many distinct keys.

Each case runs in a fresh process and reports its peak RSS (ru_maxrss) above the RSS after
imports (pandas, polars and metrickit are imported first in every case, so the figures
compare the calls alone), against a plain loop of ``json.loads`` over the file's lines::

    .venv/bin/python benchmarks/bench_long_line.py [--mb 150] [--json]

Files: one line of ``--mb`` MB holding one huge string value (refused: not a number),
one line holding one huge number (``0.111...``: a valid float), one line with many keys
(``--keys-mb`` MB), and the one-key-per-line files of ``bench_many_keys.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench import row, run_child

KINDS = ("json.loads loop", "read_rewards (pandas)", "read_rewards (polars)", "aggregate(path)")


def _write_line(path: Path, head: str, fill: str, size: int, tail: str) -> None:
    # in 1 MB pieces: the children inherit this process's peak RSS (ru_maxrss), so a parent
    # that held the whole line would hide every child's growth below it
    with path.open("w") as fh:
        fh.write(head)
        left = size - 10
        while left > 0:
            fh.write(fill * min(left, 1 << 20))
            left -= 1 << 20
        fh.write(tail)


def write_string_line(path: Path, size: int) -> None:
    _write_line(path, '{"a": "', "x", size, '"}\n')


def write_number_line(path: Path, size: int) -> None:
    _write_line(path, '{"a": 0.', "1", size, "}\n")


def write_keys_line(path: Path, size: int) -> None:
    with path.open("w") as fh:
        fh.write("{")
        written = i = 0
        while written < size:
            cell = f'"k{i:08d}": {(i % 7) / 4}, '
            fh.write(cell)
            written += len(cell)
            i += 1
        fh.write('"last": 1}\n')


def write_key_per_line(path: Path, keys: int) -> None:
    from bench_many_keys import write

    write(path, keys)


def child(kind: str, path: str) -> None:
    import resource

    import pandas  # noqa: F401
    import polars  # noqa: F401

    import metrickit as mk
    from metrickit.errors import RewardFileError

    def rss() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    before = rss()
    start = time.perf_counter()
    outcome = "ok"
    try:
        if kind == "json.loads loop":
            with open(path) as fh:
                for line in fh:
                    obj = json.loads(line)
                    del obj
        elif kind == "aggregate(path)":
            mk.aggregate(path)
        else:
            backend = "polars" if "polars" in kind else "pandas"
            mk.read_rewards(path, backend=backend)
    except (RewardFileError, ValueError) as exc:
        outcome = "refused: " + str(exc)[:60]
    print(json.dumps({"s": time.perf_counter() - start, "mb": rss() - before,
                      "outcome": outcome}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=150, help="size of the one-line files")
    parser.add_argument("--keys-mb", type=float, default=3,
                        help="size of the one line with many keys")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    parser.add_argument("--quick", action="store_true", help="30 MB lines, 3 MB of keys")
    args = parser.parse_args()
    if args.quick:
        args.mb, args.keys_mb = 30, 3
    size = int(args.mb * 1e6)
    cases = [
        ("one huge string value", write_string_line, size),
        ("one huge number", write_number_line, size),
        ("one line of many keys", write_keys_line, int(args.keys_mb * 1e6)),
        ("10,000 keys, one per line", write_key_per_line, 10_000),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        if not args.json:
            print(f"{'file':<36}{'method':<24}{'seconds':>8}{'peak MB':>9}{'x file':>8}"
                  f"{'x json':>8}  outcome")
        for label, write, arg in cases:
            path = Path(tmp) / "case.jsonl"
            write(path, arg)
            file_mb = path.stat().st_size / 1e6
            name = f"{label} ({file_mb:,.1f} MB)"
            got = {kind: run_child([__file__, "--child", kind, str(path)]) for kind in KINDS}
            base = got["json.loads loop"]
            for kind in KINDS:
                r = got[kind]
                if args.json:
                    if kind != "json.loads loop":
                        print(json.dumps(row(
                            f"peak memory, {name}: {kind}", r["s"], "json.loads loop",
                            base["s"], peak_mb=r["mb"], baseline_peak_mb=base["mb"],
                            note="peak = RSS growth above imports",
                        )))
                    continue
                print(f"{name:<36}{kind:<24}{r['s']:>8.2f}{r['mb']:>9.0f}"
                      f"{r['mb'] / file_mb:>8.2f}{r['mb'] / max(base['mb'], 1):>8.2f}  "
                      f"{r['outcome']}")
            path.unlink()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
