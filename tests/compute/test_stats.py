"""metrickit.compute.stats against scipy and statsmodels on the same data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

import metrickit as mk
from metrickit.compute.stats import (
    StatsError,
    bootstrap_ci,
    breakdown,
    compare_runs,
    mcnemar_exact,
    mean_ci,
    paired_difference,
)

JOBS = "data/harbor_jobs"
values_st = st.lists(
    st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, allow_infinity=False),
    min_size=2,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(values_st, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
@example([0.0, 1.0], 0.95)
def test_analytic_matches_scipy_sem_and_t(values, confidence):
    ci = mean_ci(values, method="analytic", confidence=confidence)
    x = np.asarray(values)
    se = stats.sem(x)
    assert ci.se == pytest.approx(se, rel=1e-9, abs=1e-12)
    if se > 0:
        low, high = stats.t.interval(confidence, len(x) - 1, loc=x.mean(), scale=se)
        assert ci.low == pytest.approx(low, rel=1e-9, abs=1e-9)
        assert ci.high == pytest.approx(high, rel=1e-9, abs=1e-9)
    assert ci.n == len(values) and ci.method == "analytic" and ci.confidence == confidence


def test_analytic_single_value_has_no_interval():
    ci = mean_ci([0.7], method="analytic")
    assert ci.estimate == 0.7 and math.isnan(ci.se) and math.isnan(ci.low)
    auto = mean_ci([0.7])
    assert math.isnan(auto.low) and "one value" in auto.note


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=3, max_size=30),
    st.integers(0, 2**32 - 1),
)
def test_cluster_matches_statsmodels_ols(groups, seed):
    g = np.asarray(groups)
    if len(np.unique(g)) < 2:
        g[0], g[-1] = 0, 1
    y = np.random.default_rng(seed).normal(size=len(g))
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    ci = mean_ci(y, method="cluster", clusters=g)
    assert ci.se == pytest.approx(fit.bse[0], rel=1e-9)
    low, high = fit.conf_int()[0]
    assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-9, abs=1e-12)


def test_cluster_errors():
    with pytest.raises(StatsError, match="clusters="):
        mean_ci([1, 2, 3], method="cluster")
    with pytest.raises(StatsError, match="at least 2 clusters"):
        mean_ci([1, 2, 3], method="cluster", clusters=["a", "a", "a"])
    with pytest.raises(StatsError, match="2 labels for 3 values"):
        mean_ci([1, 2, 3], method="cluster", clusters=["a", "b"])


@pytest.mark.parametrize("method", ["percentile", "bca"])
@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_bootstrap_identical_to_scipy(method, statistic):
    # Same seed, same (n_resamples, n) draw: the intervals agree to rounding.
    x = np.random.default_rng(11).gamma(2.0, size=37)
    ref = stats.bootstrap(
        (x,), statistic, n_resamples=1500, method=method, rng=np.random.default_rng(5)
    )
    ci = bootstrap_ci(x, statistic, n_resamples=1500, method=method, seed=5)
    assert ci.low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
    assert ci.high == pytest.approx(ref.confidence_interval.high, rel=1e-12)
    assert ci.se == pytest.approx(ref.standard_error, rel=1e-12)
    assert ci.estimate == statistic(x)


def test_bootstrap_rowwise_statistic_equals_vectorised():
    x = np.random.default_rng(2).normal(size=25)

    def q75(a):  # no axis parameter: called once per resample
        return float(np.percentile(a, 75))

    slow = bootstrap_ci(x, q75, n_resamples=300, seed=3)
    fast = bootstrap_ci(x, lambda a, axis=-1: np.percentile(a, 75, axis=axis), n_resamples=300,
                        seed=3)
    assert (slow.low, slow.high, slow.se) == pytest.approx((fast.low, fast.high, fast.se))


@pytest.mark.slow
def test_bootstrap_large_sample_chunks_and_agrees_with_analytic():
    # n * n_resamples above the one-draw cap: resampled in chunks. With 2000 resamples the
    # Monte-Carlo relative error of a bootstrap SE is about 1/sqrt(2*2000) = 1.6 %, so 8 %
    # is a loose bound that a wrong resampler (e.g. repeated indices across chunks) breaks.
    x = np.random.default_rng(4).normal(size=30_000)
    boot = mean_ci(x, method="bootstrap", n_resamples=2000, seed=1)
    analytic = mean_ci(x, method="analytic")
    assert boot.se == pytest.approx(analytic.se, rel=0.08)
    assert boot.low == pytest.approx(analytic.low, abs=0.2 * analytic.se)
    assert boot.high == pytest.approx(analytic.high, abs=0.2 * analytic.se)


def test_bootstrap_mean_ci_methods_and_degenerate_data():
    x = [0.2, 0.4, 0.4, 0.9]
    assert mean_ci(x, method="bootstrap", seed=1) == bootstrap_ci(x, np.mean, seed=1)
    assert mean_ci(x, method="bca", seed=1).method == "bca"
    point = mean_ci([1.0, 1.0, 1.0], method="bca")
    assert (point.low, point.high, point.se) == (1.0, 1.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.data(), st.sampled_from([0.9, 0.95, 0.99]))
@example(1, None, 0.95)
def test_wilson_matches_statsmodels(n, data, confidence):
    k = data.draw(st.integers(0, n)) if data is not None else 0
    values = [1] * k + [0] * (n - k)
    ci = mean_ci(values, method="wilson", confidence=confidence)
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert (ci.low, ci.high) == pytest.approx((low, high), rel=1e-12, abs=1e-12)
    assert ci.estimate == k / n


def test_wilson_rejects_non_binary_with_position():
    with pytest.raises(StatsError, match=r"values\[2\] is 0\.5"):
        mean_ci([1, 0, 0.5], method="wilson")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_mcnemar_matches_statsmodels(pairs):
    a = np.array([p[0] for p in pairs], dtype=int)
    b = np.array([p[1] for p in pairs], dtype=int)
    table = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
             [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]
    ref = mcnemar(table, exact=True)
    statistic, pvalue = mcnemar_exact(a, b)
    assert statistic == ref.statistic
    assert pvalue == pytest.approx(ref.pvalue, rel=1e-12)


def test_mcnemar_rejects_non_binary():
    with pytest.raises(StatsError, match=r"b\[1\] is 0\.5"):
        mcnemar_exact([1, 0], [1, 0.5])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=3, max_size=30))
def test_paired_analytic_matches_ttest_rel(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    d = paired_difference(a, b, method="analytic")
    assert d.estimate == pytest.approx(a.mean() - b.mean(), abs=1e-12)
    if np.std(a - b) > 1e-9:
        ref = stats.ttest_rel(a, b).confidence_interval(0.95)
        assert (d.low, d.high) == pytest.approx((ref.low, ref.high), rel=1e-9, abs=1e-12)


def test_paired_bootstrap_resamples_pairs():
    a = np.array([1.0, 0.8, 0.9, 0.7, 1.0, 0.6])
    b = a - np.array([0.1, 0.2, 0.1, 0.3, 0.0, 0.2])
    d = paired_difference(a, b, method="bootstrap", seed=4)
    # Pairs stay together: the bootstrap of the differences themselves, not of a and b apart.
    assert d == bootstrap_ci(a - b, np.mean, seed=4)
    assert 0 < d.low < d.estimate < d.high
    with pytest.raises(StatsError, match="same items"):
        paired_difference([1, 2], [1, 2, 3])


def test_bad_input_messages():
    with pytest.raises(StatsError, match="empty"):
        mean_ci([])
    with pytest.raises(StatsError, match=r"values\[1\] is nan"):
        mean_ci([1.0, float("nan")])
    with pytest.raises(StatsError, match="method='median'"):
        mean_ci([1.0, 2.0], method="median")
    with pytest.raises(StatsError, match=r"confidence=1\.5"):
        mean_ci([1.0, 2.0], confidence=1.5)


def _toy_runs() -> pd.DataFrame:
    rows = []
    outcomes = {"a": {"t1": [1, 1], "t2": [0, 1], "t3": [1, 0], "t4": [1, 1], "t5": [0]},
                "b": {"t1": [0, 1], "t2": [0, 0], "t3": [1, 0], "t4": [0, 0], "t6": [1]}}
    for agent, tasks in outcomes.items():
        for task, values in tasks.items():
            for attempt, v in enumerate(values, start=1):
                rows.append({"agent": agent, "task_name": task, "attempt": attempt, "reward": v})
    return pd.DataFrame(rows)


def test_compare_runs_pairs_tasks_and_lists_unpaired():
    df = _toy_runs()
    result = compare_runs(df, "a", "b", by="agent", value="reward")
    assert result.only_a == ["t5"] and result.only_b == ["t6"]
    assert list(result.tasks["task_name"]) == ["t1", "t2", "t3", "t4"]
    # a minus b per task: 0.5, 0.5, 0, 1
    assert list(result.tasks["difference"]) == [0.5, 0.5, 0.0, 1.0]
    assert (result.wins, result.losses, result.ties) == (3, 0, 1)
    d = np.array([0.5, 0.5, 0.0, 1.0])
    ref = stats.ttest_1samp(d, 0)
    assert result.difference.estimate == pytest.approx(0.5)
    assert result.pvalue == pytest.approx(ref.pvalue)
    low, high = ref.confidence_interval(0.95)
    # scipy's t interval reaches past 1, which a difference of 0/1 rates cannot: it is cut.
    assert high > 1
    assert (result.difference.low, result.difference.high) == pytest.approx((low, 1.0))
    assert any("cut to the range" in note for note in result.notes)
    # Several attempts per task: trials cannot be paired one to one, so no McNemar.
    assert result.mcnemar is None
    assert any("several attempts" in note for note in result.notes)
    assert any("only one of the two runs" in note for note in result.notes)
    # Leave-one-task-out influence: overall minus the mean without the task.
    assert result.tasks["influence"].tolist() == pytest.approx(
        [0.5 - np.delete(d, i).mean() for i in range(4)]
    )
    # t1: a passes (mean 1), b fails (0.5 counts as a pass) -> no flip; t2: 0.5 vs 0.
    assert result.flips["task_name"].tolist() == ["t2", "t4"]
    assert set(result.flips["flip"]) == {"pass→fail"}
    assert "t5" in str(result) and "flips" in str(result)


def test_compare_runs_ignores_attempt_labels():
    # Permuting attempt labels within a task changes nothing (they are not pairs).
    df = _toy_runs()
    shuffled = df.copy()
    shuffled["attempt"] = shuffled.groupby(["agent", "task_name"])["attempt"].transform(
        lambda a: a[::-1].to_numpy()
    )
    one = compare_runs(df, "a", "b", by="agent", value="reward")
    two = compare_runs(shuffled, "a", "b", by="agent", value="reward")
    assert one.pvalue == two.pvalue and one.difference == two.difference


def test_compare_runs_mcnemar_only_for_single_attempts():
    rows = [
        {"agent": agent, "task_name": f"t{i}", "reward": float(v)}
        for agent, values in (("a", [1, 1, 1, 1, 0, 1]), ("b", [0, 0, 1, 0, 0, 1]))
        for i, v in enumerate(values)
    ]
    result = compare_runs(pd.DataFrame(rows), "a", "b", by="agent")
    assert result.mcnemar == mcnemar_exact([1, 1, 1, 1, 0, 1], [0, 0, 1, 0, 0, 1])
    assert result.underpowered and any("underpowered" in n for n in result.notes)


def test_compare_runs_errors():
    df = _toy_runs()
    with pytest.raises(StatsError, match="'c' is not a value of 'agent'"):
        compare_runs(df, "a", "c", by="agent")
    with pytest.raises(StatsError, match="no 'task_name' in common"):
        compare_runs(df[df["task_name"].isin(["t5", "t6"])], "a", "b", by="agent",
                     value="reward")


def test_compare_runs_on_sample_job():
    trials = mk.read_harbor_job(f"{JOBS}/2025-06-03__14-30-00")
    with pytest.raises(StatsError, match="pass value= to choose"):
        compare_runs(trials, "claude-code", "codex", by="agent")
    result = compare_runs(trials, "claude-code", "codex", by="agent", value="correctness")
    finished = trials[trials["_status"] != "running"]
    means = finished.groupby(["agent", "task_name"])["correctness"].mean()
    for _, row in result.tasks.iterrows():
        assert row["mean_a"] == means["claude-code", row["task_name"]]
        assert row["mean_b"] == means["codex", row["task_name"]]
    assert len(result.tasks) == 5 and not result.only_a and not result.only_b
    assert result.mcnemar is None  # multi-step trials average to 0.5: not binary
    assert any("running" in n for n in result.notes)
    assert any("not all 0/1" in n for n in result.notes)


def test_breakdown_matches_pandas_and_keeps_backend():
    trials = mk.read_harbor_job(f"{JOBS}/2025-06-02__10-00-00")
    table = breakdown(trials, by="task_name")
    ref = trials.groupby("task_name", sort=False)
    assert list(table["task_name"]) == list(ref.groups)
    assert list(table["n"]) == [4] * 6
    np.testing.assert_allclose(table["mean"], ref["reward"].mean().to_numpy())
    np.testing.assert_allclose(table["mean_cost_usd"], ref["cost_usd"].mean().to_numpy())
    np.testing.assert_allclose(table["mean_latency_ms"], ref["total_ms"].mean().to_numpy())
    errors = ref["exception_type"].count().to_numpy()
    assert list(table["n_errors"]) == list(errors)
    first = table.iloc[1]
    x = trials[trials["task_name"] == first["task_name"]]["reward"]
    # One task per group: its attempts are independent draws of that task's rate (Wilson).
    wilson = proportion_confint(int(x.sum()), len(x), method="wilson")
    assert (first["ci_low"], first["ci_high"]) == pytest.approx(wilson)
    assert first["method"] == "wilson" and first["n_tasks"] == 1
    polars = breakdown(mk.read_harbor_job(f"{JOBS}/2025-06-02__10-00-00", backend="polars"),
                       by="task_name")
    assert isinstance(polars, pl.DataFrame)
    np.testing.assert_allclose(polars["mean"].to_numpy(), table["mean"].to_numpy())


def test_breakdown_default_value_ignores_keys_only_other_jobs_have():
    every = mk.read_harbor_job(JOBS)  # reward, correctness and style columns
    first = every[every["job"] == "2025-06-02__10-00-00"]
    table = breakdown(first, by="eval")
    assert table["mean"].tolist() == [0.5]
    with pytest.raises(StatsError, match=r"2 reward columns \['correctness', 'style'\]"):
        breakdown(every[every["job"] == "2025-06-03__14-30-00"], by="eval")


def test_breakdown_counts_running_and_clusters():
    trials = mk.read_harbor_job(f"{JOBS}/2025-06-03__14-30-00")
    table = breakdown(trials, by=["agent", "model"], value="style", method="cluster")
    codex = table[table["agent"] == "codex"].iloc[0]
    assert codex["n"] == 9 and codex["n_running"] == 1 and codex["n_errors"] == 2
    finished = trials[(trials["agent"] == "codex") & (trials["_status"] != "running")]
    ref = mean_ci(finished["style"], method="cluster", clusters=finished["task_name"])
    assert codex["se"] == pytest.approx(ref.se) and codex["method"] == "cluster"
