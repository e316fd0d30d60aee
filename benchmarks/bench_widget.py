"""Tuning widget: slider change to redrawn figure, 100,000 cases and 50 candidates.

Median over 50 weight changes, split into recompute (recombine the cached part scores,
group means and intervals, rank), draw (update the artists, render the figure to PNG as the
inline backend shows it; this goes to the page first) and text (verdict, table, literal).
``--cases 1200 --candidates 6`` is the size of notebook 03's table.
Baseline in the same run: the naive way, `spec.score_frame` on the whole frame, a pandas
groupby and a fresh `plots.tradeoff` figure each time.

    python benchmarks/bench_widget.py [--cases 100000 --candidates 50 --changes 50] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import time

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pandas as pd


def make_cases(n: int, candidates: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cand = rng.integers(0, candidates, n)
    skill = rng.uniform(0.5, 0.95, candidates)
    speed = rng.lognormal(7, 0.8, candidates)
    price = rng.lognormal(-6, 1.0, candidates)
    return pd.DataFrame(
        {
            "candidate": np.array([f"c{i:02d}" for i in range(candidates)])[cand],
            "accuracy": (rng.random(n) < skill[cand]).astype(float),
            "latency_ms": rng.lognormal(np.log(speed[cand]), 0.3),
            "cost_usd": rng.lognormal(np.log(price[cand]), 0.2),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--json", action="store_true", help="print one JSON row for run.py")
    args = parser.parse_args()

    import matplotlib.pyplot as plt

    import metrickit as mk
    from metrickit import plots
    from metrickit.widgets import tune_spec

    frame = make_cases(args.cases, args.candidates)
    tuner = tune_spec(frame, debounce_ms=0)
    values = np.linspace(0.05, 1.0, args.changes)
    recompute, draw, text, total = [], [], [], []
    for v in values:
        start = time.perf_counter()
        tuner.w_speed.value = float(v)  # the observer runs update() synchronously
        total.append((time.perf_counter() - start) * 1000)
        recompute.append(tuner.timings["recompute_ms"])
        draw.append(tuner.timings["draw_ms"])
        text.append(tuner.timings["text_ms"])

    naive = []
    for v in values[:10]:
        start = time.perf_counter()
        spec = mk.RewardSpec.from_dict(
            {
                "weights": {"accuracy": 0.7, "speed": float(v), "cost": 0.1},
                "speed": {"reference": 2000},
                "cost": {"reference": 0.01},
            }
        )
        scored = spec.score_frame(frame)
        scored.groupby("candidate")["reward"].mean().sort_values()
        fig, ax = plt.subplots(figsize=(12, 5))
        plots.tradeoff(scored, ax=ax)
        fig.savefig(io.BytesIO(), format="png", dpi=90)
        plt.close(fig)
        naive.append((time.perf_counter() - start) * 1000)

    med = statistics.median
    row = {
        "operation": f"tuner update ({args.cases:,} cases, {args.candidates} candidates)",
        "metrickit_ms": med(total),
        "recompute_ms": med(recompute),
        "draw_ms": med(draw),
        "text_ms": med(text),
        "baseline_ms": med(naive),
        "baseline": "score_frame + groupby + fresh tradeoff figure",
    }
    if args.json:
        print(json.dumps(row))
        return
    print(f"slider change -> redrawn figure, median of {args.changes} changes")
    print(f"  total      {med(total):8.1f} ms   (target <= 100 ms)")
    print(f"  recompute  {med(recompute):8.1f} ms   (score all cases, group means, rank)")
    print(f"  draw       {med(draw):8.1f} ms   (update artists, render PNG; sent first)")
    print(f"  text       {med(text):8.1f} ms   (verdict, table, literal; sent after the image)")
    print(
        f"  baseline   {med(naive):8.1f} ms   (score_frame + groupby + new tradeoff figure, "
        f"median of 10)  ratio {med(naive) / med(total):.1f}x"
    )


if __name__ == "__main__":
    main()
