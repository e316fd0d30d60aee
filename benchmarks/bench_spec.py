"""RewardSpec.score_frame on 1,000,000 cases against calling reward() once per case.

    python benchmarks/bench_spec.py [--rows 1000000] [--json]

The baseline (what a scorer loop does) is timed on 20,000 rows and scaled per row.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import pandas as pd
import polars as pl

import metrickit as mk

SPEC = {"weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1}, "accuracy": {},
        "speed": {"reference": 2000}, "cost": {"reference": 0.01}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    latency = rng.gamma(2.0, 800.0, args.rows)
    latency[::50] = np.nan
    data = {"accuracy": rng.random(args.rows), "latency_ms": latency,
            "cost_usd": rng.gamma(2, 0.004, args.rows)}
    spec = mk.RewardSpec.from_dict(SPEC)
    rows = []
    for backend, frame in (("pandas", pd.DataFrame(data)),
                           ("polars", pl.DataFrame(data, nan_to_null=True))):
        spec.score_frame(frame.head(10))
        best = min(_timed(lambda f=frame: spec.score_frame(f)) for _ in range(3))
        rows.append((backend, best))
    sample = 20_000
    start = time.perf_counter()
    for a, lat, c in zip(data["accuracy"][:sample], data["latency_ms"][:sample],
                         data["cost_usd"][:sample], strict=True):
        mk.reward(spec, float(a), "", latency_ms=None if np.isnan(lat) else float(lat),
                  cost_usd=float(c))
    per_row = (time.perf_counter() - start) / sample
    baseline = per_row * args.rows
    for backend, seconds in rows:
        row = {"operation": f"score_frame {args.rows:,} rows ({backend})",
               "metrickit_s": seconds, "baseline_s": baseline,
               "baseline": "reward() per row (scaled from 20k)", "ratio": baseline / seconds}
        if args.json:
            print(json.dumps(row))
        else:
            print(f"{row['operation']:<40} {seconds * 1000:8.1f} ms   reward() loop "
                  f"{baseline:8.2f} s   ratio {row['ratio']:,.0f}x")


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
