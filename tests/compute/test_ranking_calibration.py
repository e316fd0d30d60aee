"""The best set from shuffling results within tasks: exact for identical candidates, and
with the power to leave clearly worse candidates out on few tasks (issue 24, item 2).

Reduced, seeded versions of benchmarks/coverage.py's ``identical`` and ``many`` scenarios;
the full ones are in the benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from benchmark_modules import benchmark

import metrickit as mk
from metrickit.compute.intervals import grouped_intervals
from metrickit.compute.ranking import (
    MeanDraws,
    best_group,
    permutation_best_set,
    rank_intervals,
)

REALDATA = Path(__file__).parents[3] / "shared" / "realdata"

coverage = benchmark("coverage")


def _cells(x: np.ndarray, groups: np.ndarray, units: np.ndarray, k: int
           ) -> tuple[np.ndarray, np.ndarray]:
    draws = MeanDraws(groups, k, units)
    sums, counts = draws.unit_sums(x)
    ran = counts > 0
    return np.where(ran, sums / np.where(ran, counts, 1.0), 0.0), ran


def test_identical_candidates_on_uneven_tasks_are_all_in_the_best_set():
    # 5 identical candidates, U-shaped difficulty, hard tasks lose attempts: the shuffles
    # are exact, so all five stay in at least 95 % of the time (up to simulation noise)
    all_in = 0
    reps = 80
    for r in range(reps):
        rng = np.random.default_rng([21, r])
        x, groups, units, _ = coverage._uneven_table(rng, np.zeros(5), 20)
        cell, ran = _cells(x, groups, units, 5)
        all_in += bool(permutation_best_set(cell, ran, n_permutations=400, seed=r).all())
    assert all_in / reps >= 0.9


def test_a_clearly_worse_candidate_leaves_where_normal_draws_keep_everyone():
    k = 14
    rng = np.random.default_rng([16, 2])
    x, groups, units, truth = coverage._uneven_table(rng, np.linspace(-0.8, -3.5, k), 24,
                                                     attempts=3)
    names = [f"c{i}" for i in range(k)]
    draws = MeanDraws(groups, k, units, n_draws=1000, seed=0)
    estimate = grouped_intervals(groups, k, x, clusters=units).mean
    ri, _ = best_group(names, estimate, draws, x)
    normal = rank_intervals(estimate, draws.means(x), df=23)
    assert normal.best_group.all()  # the t-widened max over all pairs: no power here
    assert not ri.best_group.all() and ri.best_group[int(np.argmax(estimate))]
    out = ~ri.best_group
    assert truth[out].max() < truth.max() / 2  # those left out are clearly worse
    assert (ri.rank_low[out] >= 2).all() and (ri.rank_low[~out] == 1).all()


def test_rank_intervals_takes_the_best_set_it_is_given_and_keeps_the_leader():
    rng = np.random.default_rng(0)
    draws = rng.normal([0.5, 0.4, 0.3], 0.01, (500, 3))
    ri = rank_intervals(np.array([0.5, 0.4, 0.3]), draws,
                        best=np.array([False, True, True]))
    assert list(ri.best_group) == [True, True, True]
    assert list(ri.rank_low) == [1, 1, 1]


def test_lower_is_better_flips_the_best_set():
    rng = np.random.default_rng(1)
    k, n_tasks = 4, 30
    level = rng.normal(0, 1, (n_tasks, 1))
    x = level + np.array([0.0, 0.0, 1.5, 1.5]) + rng.normal(0, 0.3, (n_tasks, k))
    groups = np.tile(np.arange(k), n_tasks)
    units = np.repeat(np.arange(n_tasks), k)
    draws = MeanDraws(groups, k, units, seed=0)
    ri, _ = best_group(list("abcd"), x.mean(axis=0), draws, x.ravel(),
                       higher_is_better=False)
    assert list(ri.best_group) == [True, True, False, False]


@pytest.mark.skipif(not (REALDATA / "otel-bench" / "results.json").exists(),
                    reason="the real otel-bench results are not here (../shared/realdata)")
def test_otel_bench_best_set_leaves_the_weakest_models_out():
    frame = pd.DataFrame(json.loads((REALDATA / "otel-bench" / "results.json").read_text()))
    trials = mk.trials_from_frame(frame, task="TaskName", reward="Reward", model="ModelName")
    table = mk.compare_metrics(trials, {"reward": "Reward"}).table.set_index("group")
    assert len(table) == 14
    best = table[table["best_group"]]
    assert 2 <= len(best) < 14
    leader = table["value"].idxmax()
    assert leader in best.index
    out = table[~table["best_group"]]
    assert out["value"].max() < table["value"].max() / 2
    assert (out["rank_low"] >= 2).all()
