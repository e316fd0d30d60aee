"""The report's statistics at 10,000 and 100,000 tasks: time and peak memory.

    python benchmarks/bench_report_scale.py [--tasks 10000,100000] [--candidates 4]
                                            [--baseline] [--json]

The report (``metrickit report``) computes its ranking with
:func:`metrickit.compute.metrics.compare_metrics` (the headline, and again for a reward
spec) and its trade-off table with :func:`metrickit.reporting.plots.candidate_means`
(:func:`metrickit.compute.ranking.candidate_table`: means, intervals and P(front)).
It also compares each
candidate with the leader (:func:`metrickit.compute.paired.compare_runs`) and computes
pass@k (:func:`metrickit.compute.passk.pass_at_k`); those two rows run against what a
user would write for the same headline numbers in the same run (pandas groupby with
scipy's ``ttest_rel``, and with scipy's ``comb``), which do less: no McNemar test, notes
or per-task tables, no intervals or best set. This
benchmark calls those functions on a generated trial table (``--candidates`` candidates, 2
attempts per task, 0/1 rewards, lognormal latency and cost) and prints, per call, the
wall time (a run without tracing) and the peak memory Python allocated during it (a
second run under ``tracemalloc``), next to the size of the trial table itself.

``--baseline`` also runs each call at the smallest ``--tasks`` size the old way, in the
same process: the skewed-data interval's bootstrap-t drawing all ``resamples x tasks``
indices at once and never switching to Hall's interval (``BLOCK_CELLS`` and
``BOOTSTRAP_T_MAX`` set out of reach), and prints the ratios (old / new). At 100,000 tasks
the old way needs about 3 GB, so it is not run there.

Why the switch at ``BOOTSTRAP_T_MAX`` = 10,000 tasks is safe (seeded, 400 data sets a
cell, 2,000 resamples; coverage of the 95 % interval of the mean): Hall's transformation
interval and the bootstrap-t agree within 0.003 wherever both were run (lognormal σ = 1 /
1.5 / 2 and Weibull shape 0.5 at 20, 200 and 2,000 tasks: e.g. σ = 2, 2,000 tasks: 0.912
and 0.912; σ = 1.5, 20 tasks: 0.858 and 0.880), and the default (either one united with
the lognormal Cox interval) covers 0.96-0.99 at 10,000 and 50,000 tasks for σ ≤ 2.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def trial_table(n_tasks: int, n_candidates: int, attempts: int = 2, seed: int = 0) -> Any:
    """A trial table: every candidate runs every task ``attempts`` times."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    rates = np.clip(rng.beta(2, 2, n_tasks)[:, None] + np.linspace(-0.05, 0.05, n_candidates),
                    0, 1)
    shape = (n_tasks, n_candidates, attempts)
    reward = (rng.random(shape) < rates[..., None]).astype(float)
    task = np.broadcast_to(np.arange(n_tasks)[:, None, None], shape).ravel()
    cand = np.broadcast_to(np.arange(n_candidates)[None, :, None], shape).ravel()
    return pd.DataFrame({
        "candidate": np.array([f"c{i}" for i in range(n_candidates)])[cand],
        "task_name": np.array([f"t{i}" for i in range(n_tasks)])[task],
        "reward": reward.ravel(),
        "total_ms": rng.lognormal(8, 1, reward.size),
        "cost_usd": rng.lognormal(-4, 1, reward.size),
    })


def measure(fn: Any) -> tuple[float, float]:
    """Wall time (s, untraced) and peak traced memory (MB) of ``fn()``."""
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak / 2**20


def old_way(fn: Any) -> tuple[float, float]:
    """:func:`measure` with the bootstrap-t unblocked and never replaced (the old code)."""
    from metrickit.compute import intervals

    saved = intervals.BLOCK_CELLS, intervals.BOOTSTRAP_T_MAX
    intervals.BLOCK_CELLS, intervals.BOOTSTRAP_T_MAX = 1 << 62, 1 << 62
    try:
        return measure(fn)
    finally:
        intervals.BLOCK_CELLS, intervals.BOOTSTRAP_T_MAX = saved


def plain_paired_t(frame: Any) -> Any:
    """What a user writes for a paired comparison of two candidates over tasks: per-task
    means side by side, then scipy's paired t test (no McNemar, no notes, no task table)."""
    from scipy import stats

    per = frame.groupby(["candidate", "task_name"])["reward"].mean().unstack("candidate")
    both = per[["c1", "c0"]].dropna()
    return stats.ttest_rel(both["c1"], both["c0"])


def plain_pass_at_k(frame: Any) -> Any:
    """What a user writes for pass@k: trials and successes per candidate and task, the
    unbiased estimator ``1 - C(n-c, k) / C(n, k)`` with scipy's ``comb``, averaged per
    candidate (k = 1 and 2; no intervals, no best set, no per-task table)."""
    from scipy.special import comb

    per = frame.groupby(["candidate", "task_name"])["reward"].agg(["size", "sum"])
    n, c = per["size"].to_numpy(), per["sum"].to_numpy()
    return {k: (1 - comb(n - c, k) / comb(n, k)).reshape(-1) for k in (1, 2)}


def main(argv: list[str] | None = None) -> int:
    from _bench import emit, row

    from metrickit.compute.metrics import compare_metrics
    from metrickit.compute.paired import compare_runs
    from metrickit.compute.passk import pass_at_k
    from metrickit.reporting.plots import candidate_means

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="10000,100000")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--baseline", action="store_true",
                        help="also run the old unbounded path at the smallest size")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    sizes = [int(t) for t in args.tasks.split(",")]
    small = trial_table(200, args.candidates)  # warm up: imports and first-call costs
    compare_metrics(small, {"reward": "reward"}, cluster="task_name")
    candidate_means(small, ["reward", "total_ms", "cost_usd"], cluster="task_name",
                    maximize=("reward",), minimize=("total_ms", "cost_usd"))
    for n_tasks in sizes:
        frame = trial_table(n_tasks, args.candidates)
        size = frame.memory_usage(deep=True).sum() / 2**20
        calls = {
            "compare_metrics (ranking)": lambda f=frame: compare_metrics(
                f, {"reward": "reward"}, cluster="task_name"),
            "candidate_means (P(front))": lambda f=frame: candidate_means(
                f, ["reward", "total_ms", "cost_usd"], cluster="task_name",
                maximize=("reward",), minimize=("total_ms", "cost_usd")),
        }
        # against what a user would write for the same numbers, in the same run
        plain = {
            "compare_runs (c1 vs c0)": (lambda f=frame: compare_runs(f, "c1", "c0", value="reward"),
                                        lambda f=frame: plain_paired_t(f),
                                        "groupby + unstack + scipy.stats.ttest_rel"),
            "pass_at_k (k = 1, 2)": (lambda f=frame: pass_at_k(f, value="reward"),
                                     lambda f=frame: plain_pass_at_k(f),
                                     "groupby + scipy.special.comb"),
        }
        for name, (fn, base, label) in plain.items():
            fn(), base()  # first-call costs (imports) out of both
            seconds, peak = measure(fn)
            plain_s, plain_peak = measure(base)
            rows.append(row(f"{name}, {n_tasks:,} tasks x {args.candidates}", seconds, label,
                            plain_s, peak_mb=peak, baseline_peak_mb=plain_peak,
                            note=f"{len(frame):,} trials, table {size:.1f} MB"))
            if not args.json:
                print(f"{name:<28} {n_tasks:>8,} tasks  {seconds:7.2f} s  peak {peak:8.1f} MB "
                      f"against {label}: {plain_s:.2f} s, ratio {plain_s / seconds:.2f}x")
        for name, fn in calls.items():
            seconds, peak = measure(fn)
            old = old_way(fn) if args.baseline and n_tasks == min(sizes) else None
            rows.append(row(f"{name}, {n_tasks:,} tasks x {args.candidates}", seconds,
                            "old unbounded bootstrap-t" if old else "table size",
                            old[0] if old else 0.0, peak_mb=peak,
                            baseline_peak_mb=old[1] if old else size,
                            note=f"{len(frame):,} trials, table {size:.1f} MB"))
            if not args.json:
                print(f"{name:<28} {n_tasks:>8,} tasks  {seconds:7.2f} s  peak {peak:8.1f} MB "
                      f"(table {size:6.1f} MB, {peak / size:4.1f}x)")
                if old:
                    print(f"{'  old way':<28} {n_tasks:>8,} tasks  {old[0]:7.2f} s  peak "
                          f"{old[1]:8.1f} MB  (old/new: time {old[0] / seconds:5.1f}x, "
                          f"memory {old[1] / peak:5.1f}x)")
    if args.json:
        emit(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
