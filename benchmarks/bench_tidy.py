"""trials_from_frame on a large tidy table, against copying the same columns into a new
pandas frame (the floor for any conversion that keeps pandas objects).

    python benchmarks/bench_tidy.py [ROWS]

Prints the time of each and the ratio. The table: 4 candidates x 5,000 tasks x ROWS/20,000
attempts, a 0/1 reward, a float score, latency, cost, token counts and a few error texts.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

import metrickit as mk


def table(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    per = rows // 20_000 or 1
    n = 4 * 5_000 * per
    return pd.DataFrame({
        "id": np.tile(np.repeat([f"task-{i}" for i in range(5_000)], per), 4),
        "model": np.repeat(["a", "b", "c", "d"], 5_000 * per),
        "seed": np.tile(np.arange(1, per + 1), 4 * 5_000),
        "correct": rng.integers(0, 2, n),
        "f1": rng.random(n),
        "ms": rng.random(n) * 60_000,
        "usd": rng.random(n) / 10,
        "tokens_in": rng.integers(100, 10_000, n),
        "err": np.where(rng.random(n) < 0.01, "timeout", None),
    })


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    df = table(rows)
    mapping = dict(task="id", candidate="model", attempt="seed", reward=["correct", "f1"],
                   latency_ms="ms", cost_usd="usd", input_tokens="tokens_in", error="err")
    ours = best(lambda: mk.trials_from_frame(df, **mapping))
    copy = best(lambda: df.rename(columns={"id": "task_name", "model": "eval"}).copy())
    print(f"{len(df):,} rows: trials_from_frame {ours:.2f} s ({len(df) / ours:,.0f} rows/s); "
          f"plain column copy {copy:.3f} s; ratio {ours / copy:.0f}x the copy")


if __name__ == "__main__":
    main()
