"""Quantiles, sums, rare events and saturated data: intervals that hold or say so.

Formulas against scipy/statsmodels, and a reduced, seeded run of
benchmarks/coverage_power.py's quantile, sum and Wilson scenarios.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from benchmark_modules import benchmark
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

import metrickit as mk
from metrickit.compute.intervals import (
    bootstrap_ci,
    grouped_intervals,
    mean_ci,
    quantile_ci,
    sum_ci,
)
from metrickit.compute.paired import paired_t

bench = benchmark("coverage_power")


# --- quantiles -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 120), q=st.sampled_from([0.1, 0.25, 0.5, 0.75, 0.9]),
       seed=st.integers(0, 10_000))
def test_quantile_interval_is_scipys_order_statistic_interval(n, q, seed):
    x = np.random.default_rng(seed).normal(size=n)
    ours = quantile_ci(x, q)
    ref = stats.quantile_test(x, q=float(np.quantile(x, q)), p=q).confidence_interval(0.95)
    assert ours.estimate == pytest.approx(float(np.quantile(x, q)))
    # where scipy has a bound, it is ours; where it has none, ours is the extreme value
    assert ours.low == (ref.low if math.isfinite(ref.low) else x.min())
    assert ours.high == (ref.high if math.isfinite(ref.high) else x.max())
    if not (math.isfinite(ref.low) and math.isfinite(ref.high)):
        attained = stats.binom.cdf(np.searchsorted(np.sort(x), ours.high, side="right") - 1,
                                   n, q) - stats.binom.cdf(
            np.searchsorted(np.sort(x), ours.low), n, q)
        assert attained >= 0.95 or "few tasks" in ours.note


def test_quantile_over_tasks_uses_task_means_and_says_when_tasks_are_few():
    x = [1.0, 3.0, 10.0, 10.0, 2.0, 4.0, 5.0, 7.0]
    tasks = ["a", "a", "b", "b", "c", "c", "d", "d"]
    ci = quantile_ci(x, 0.5, clusters=tasks)
    assert ci.estimate == np.median([2.0, 10.0, 3.0, 6.0]) and ci.n_clusters == 4
    assert ci.note.startswith("few tasks (4) for the 0.5 quantile") and "needs 6 tasks" in ci.note
    assert "holds it 87.5% of the time" in ci.note  # 1 - 2 / 2**4
    big = quantile_ci(np.arange(40.0), 0.9)
    assert big.note == "" and big.low < big.estimate < big.high


def test_quantiles_cover_or_say_they_cannot():
    rows = {r.setting: r for r in bench.quantiles(200)}
    for r in rows.values():
        assert r.observed >= 0.93 or r.flagged >= 0.99, r
    assert rows["q=0.9, lognormal, 50 tasks"].observed >= 0.95


# --- sums ------------------------------------------------------------------------------


def test_sum_interval_is_task_count_times_the_interval_of_task_sums():
    rng = np.random.default_rng(3)
    x = rng.lognormal(0, 0.5, 60)
    tasks = np.repeat(np.arange(20), 3)
    ci = sum_ci(x, clusters=tasks)
    sums = np.bincount(tasks, weights=x)
    assert ci.estimate == pytest.approx(x.sum())
    ref = mean_ci(sums)
    assert (ci.low, ci.high) == pytest.approx((20 * ref.low, 20 * ref.high))
    assert ci.n_clusters == 20 and ci.method == "cluster-" + ref.method
    t = stats.t.ppf(0.975, 19) * sums.std(ddof=1) / math.sqrt(20) * 20
    if ref.method == "analytic":
        assert ci.high - ci.low == pytest.approx(2 * t)


def test_sum_of_few_tasks_says_so():
    ci = sum_ci([1, 0, 1, 1, 0, 1, 1, 1, 0], clusters=np.repeat(range(3), 3))
    assert ci.estimate == 6 and "few tasks (3)" in ci.note
    single = sum_ci([1.0, 0.0, 1.0, 1.0, 0.0] * 4)
    assert single.method == "wilson" and single.estimate == 12
    ref = mean_ci([1.0, 0.0, 1.0, 1.0, 0.0] * 4)
    assert (single.low, single.high) == pytest.approx((20 * ref.low, 20 * ref.high))


def test_sums_cover_or_say_they_may_not():
    for r in bench.sums(300):
        assert r.observed >= 0.93 or r.flagged >= 0.99, r


# --- rare events, single attempts --------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(1, 50), (2, 20), (3, 200), (49, 50), (0, 30), (5, 40)])
def test_rare_counts_get_the_exact_bound(k, n):
    x = np.r_[np.ones(k), np.zeros(n - k)]
    gi = grouped_intervals(np.zeros(n, dtype=np.intp), 1, x)
    wilson = proportion_confint(k, n, method="wilson")
    exact = proportion_confint(k, n, method="beta")
    low = exact[0] if 1 <= k <= 3 else wilson[0]
    high = exact[1] if 1 <= n - k <= 3 else wilson[1]
    assert (gi.low[0], gi.high[0]) == pytest.approx((max(low, 0.0), min(high, 1.0)))
    assert gi.method == ["wilson"]


def test_explicit_wilson_is_statsmodels_and_flags_rare_counts():
    ci = mean_ci([1] + [0] * 49, method="wilson")
    assert (ci.low, ci.high) == pytest.approx(proportion_confint(1, 50, method="wilson"))
    assert "Wilson's coverage can fall to 0.84" in ci.note
    assert mean_ci([1] * 25 + [0] * 25, method="wilson").note == ""


def test_rare_event_coverage_dip_is_gone():
    rows = list(bench.wilson(0))
    new = [r for r in rows if r.method != "(old)"]
    old = [r for r in rows if r.method == "(old)"]
    assert min(r.observed for r in new) >= 0.92
    assert min(r.observed for r in old) < 0.85


# --- no silent zero-width interval -------------------------------------------------------


@pytest.mark.parametrize("method", ["auto", "analytic", "bootstrap", "bca"])
@pytest.mark.parametrize("value", [0.25, 3.0])
def test_constant_values_never_give_a_silent_zero_width_interval(method, value):
    ci = mean_ci([value] * 12, method=method)
    assert ci.low == ci.high == value
    assert "no width" in ci.note


@pytest.mark.parametrize("method", ["analytic", "bootstrap", "cluster"])
def test_equal_task_means_are_flagged_under_every_clustered_method(method):
    x = [0.2, 0.8] * 6
    tasks = np.repeat(np.arange(6), 2)
    ci = mean_ci(x, method=method, clusters=tasks)
    assert ci.low == pytest.approx(ci.high)
    assert "no width" in ci.note


def test_default_interval_of_equal_task_means_says_so():
    x = np.array([0.2, 0.8] * 12)
    gi = grouped_intervals(np.zeros(24, dtype=np.intp), 1, x, clusters=np.repeat(
        np.arange(12), 2))
    assert gi.low[0] == pytest.approx(gi.high[0])
    assert "every task has the same mean" in gi.note[0]


def test_saturated_zero_one_data_keeps_a_width():
    for x in (np.ones(30), np.zeros(30)):
        ci = mean_ci(x)
        assert ci.high > ci.low
        clustered = mean_ci(np.ones(30), clusters=np.repeat(np.arange(10), 3))
        assert clustered.high > clustered.low or clustered.note


def test_paired_t_of_equal_differences_says_so():
    iv, p = paired_t(np.zeros(8))
    assert (iv.low, iv.high, p) == (0.0, 0.0, 1.0) and "no width" in iv.note
    for value in (0.5, -1.0):
        iv, p = paired_t(np.full(8, value))
        assert p == pytest.approx(2 / 2**8) and "no width" in iv.note


def test_bootstrap_of_a_constant_sample_says_so():
    ci = bootstrap_ci([2.0] * 5, np.median)
    assert ci.low == ci.high == 2.0 and "no width" in ci.note


def test_breakdown_carries_the_notes():
    import pandas as pd

    frame = pd.DataFrame({
        "candidate": ["a"] * 12 + ["b"] * 50,
        "task_name": [f"t{i // 2}" for i in range(12)] + [f"u{i}" for i in range(50)],
        "reward": [0.2, 0.8] * 6 + [1.0] + [0.0] * 49,
    })
    table = mk.breakdown(frame).set_index("candidate")
    assert "no width" in table.loc["a", "note"]
    assert table.loc["b", "ci_low"] == pytest.approx(proportion_confint(1, 50, method="beta")[0])
