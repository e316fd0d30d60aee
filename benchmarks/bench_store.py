"""The run store at scale: 10,000 runs and 10 million trials in one DuckDB file.

    python benchmarks/bench_store.py                  # 10,000 runs x 1,000 trials
    python benchmarks/bench_store.py --runs 1000      # quicker

Measures, on a store filled batch by batch through ``RunStore.add``:

- ``runs()`` (the list of every run) against its goal of 0.1 s;
- ``trials(run)`` of one run against its goal of 0.5 s, and against the baseline a user
  would otherwise write: the same run kept as its own Parquet file, read with
  ``pandas.read_parquet`` (the ratio is baseline time / store time);
- adding: trials per second, and the size of the file.

Times are the median of ``--repeat`` calls, each in a fresh ``RunStore`` (a new
connection, as a script or a CI job would open it).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import metrickit as mk


def template(n: int, seed: int) -> pd.DataFrame:
    """A trial table of ``n`` trials (two candidates, ``n / 2`` tasks each), with times,
    tokens and cost, from ``trials_from_frame``."""
    rng = np.random.default_rng(seed)
    half = n // 2
    df = pd.DataFrame({
        "task": [f"task-{i:04d}" for i in range(half)] * 2,
        "model": ["model-a"] * half + ["model-b"] * (n - half),
        "reward": (rng.random(n) < 0.6).astype(int),
        "ms": rng.lognormal(8, 1, n),
        "cost": rng.lognormal(-5, 1, n),
        "tokens_in": rng.integers(1000, 90000, n),
        "tokens_out": rng.integers(100, 9000, n),
    })
    return mk.trials_from_frame(df, task="task", reward="reward", model="model",
                                latency_ms="ms", cost_usd="cost", input_tokens="tokens_in",
                                output_tokens="tokens_out")


def fill(store: mk.RunStore, runs: int, per_run: int, batch: int) -> float:
    base = template(per_run, 0)
    start = time.perf_counter()
    for first in range(0, runs, batch):
        ids = [f"run-{i:05d}" for i in range(first, min(first + batch, runs))]
        table = pd.concat([base] * len(ids), ignore_index=True)
        table["run"] = pd.array(np.repeat(ids, len(base)), dtype="string")
        store.add(table)
    return time.perf_counter() - start


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--trials-per-run", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=250, help="runs per add() call")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="metrickit-store-"))
    try:
        path = folder / "runs.duckdb"
        store = mk.RunStore(path)
        total = args.runs * args.trials_per_run
        fill_s = fill(store, args.runs, args.trials_per_run, args.batch)
        middle = f"run-{args.runs // 2:05d}"
        one = mk.RunStore(path).trials(middle)
        parquet = folder / f"{middle}.parquet"
        one.to_parquet(parquet)

        runs_s = median_time(lambda: mk.RunStore(path).runs(), args.repeat)
        trials_s = median_time(lambda: mk.RunStore(path).trials(middle), args.repeat)
        base_s = median_time(lambda: pd.read_parquet(parquet), args.repeat)
        size = path.stat().st_size
        print(f"store: {args.runs:,} runs, {total:,} trials, {size / 2**20:,.0f} MB "
              f"({size / total:.0f} bytes/trial)")
        print(f"add:              {fill_s:8.1f} s   {total / fill_s:,.0f} trials/s "
              f"(batches of {args.batch} runs)")
        print(f"runs():           {runs_s * 1000:8.1f} ms  goal 100 ms  "
              f"{'met' if runs_s <= 0.1 else 'NOT met'}")
        print(f"trials(one run):  {trials_s * 1000:8.1f} ms  goal 500 ms  "
              f"{'met' if trials_s <= 0.5 else 'NOT met'}")
        print(f"baseline pandas.read_parquet of that run's own file: {base_s * 1000:.1f} ms; "
              f"ratio {base_s / trials_s:.2f}x (baseline time / store time)")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
