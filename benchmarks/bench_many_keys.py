"""Many distinct keys: one key per line.

A file with one distinct key per line would be a rows x keys frame (5,000 keys: 25 million
cells). ``metrickit aggregate`` and ``mk.aggregate(path)`` aggregate key by key from the
cells instead; the frame readers refuse above ``metrickit._core.schema.MAX_FILLED_CELLS``.
Each measurement runs in a fresh process and reports its peak RSS (ru_maxrss) and time,
against a plain ``json.loads`` loop into Harbor's ``aggregate_reward_dicts`` (the reference
in tests/harbor_reference.py)::

    .venv/bin/python benchmarks/bench_many_keys.py [--json]
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _bench import peak_rss_mb, row, run_child


def write(path: Path, keys: int) -> None:
    with path.open("w") as fh:
        for i in range(keys):
            fh.write(json.dumps({f"key_{i:05d}": (i % 7) / 4}) + "\n")


def child(kind: str, path: str) -> None:
    start = time.perf_counter()
    if kind == "metrickit":
        import metrickit as mk

        result = mk.aggregate(path)
    elif kind == "cli":
        from metrickit.cli import main

        main(["aggregate", "-i", path, "-o", path + ".out.json"])
        result = json.loads(Path(path + ".out.json").read_text())
    elif kind == "read_rewards":
        import metrickit as mk
        from metrickit.errors import RewardFileError

        try:
            mk.read_rewards(path)
            result = {"read": 1}
        except RewardFileError:
            result = {"refused": 1}
    else:
        from harbor_reference import harbor_aggregate

        rows = [json.loads(line) for line in open(path)]  # noqa: SIM115
        result = harbor_aggregate(rows)
    print(json.dumps({"s": time.perf_counter() - start, "mb": peak_rss_mb(), "n": len(result)}))


def main() -> None:
    as_json = "--json" in sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        for keys in (5_000, 10_000):
            path = Path(tmp) / f"keys_{keys}.jsonl"
            write(path, keys)
            size = path.stat().st_size
            base = run_child([__file__, "--child", "json", str(path)])
            for kind in ("metrickit", "cli", "read_rewards"):
                got = run_child([__file__, "--child", kind, str(path)])
                op = f"{kind} {keys:,} keys ({size // 1024} KB)"
                if as_json:
                    print(json.dumps(row(op, got["s"], "json.loads loop", base["s"],
                                         peak_mb=got["mb"], baseline_peak_mb=base["mb"])))
                else:
                    print(f"{op:42} {got['s']:6.2f} s {got['mb']:7.1f} MB peak   "
                          f"json.loads loop {base['s']:5.2f} s {base['mb']:6.1f} MB peak")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
