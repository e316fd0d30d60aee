"""Metrics as column operations and compare_metrics."""

from __future__ import annotations

import math

import narwhals as nw
import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

import metrickit as mk


@pytest.fixture
def runs(data_dir):
    df = mk.read_rewards(data_dir / "rewards" / "sample_3000.jsonl")
    df["agent"] = np.array(["a", "b", "c"])[np.arange(len(df)) % 3]
    return df


BUILTINS = [
    mk.harbor_metric("mean"),
    mk.harbor_metric("sum"),
    mk.pass_rate(0.5),
    mk.pass_rate(1.0, key="correctness"),
    mk.weighted({"correctness": 0.7, "style": 0.3}),
    mk.quantile(0.9, key="style"),
    mk.quantile(0.25),
    mk.filled_count(),
    mk.metric("lenient", nw.col("correctness") >= 0.5),
    mk.metric("spread", lambda df: df["style"].max() - df["style"].min()),
]


@pytest.mark.parametrize("m", BUILTINS, ids=lambda m: m.name)
def test_same_result_on_pandas_and_polars(data_dir, m):
    path = data_dir / "rewards" / "sample_3000.jsonl"
    pandas_frame = mk.read_rewards(path)
    polars_frame = mk.read_rewards(path, backend="polars")
    assert isinstance(polars_frame, pl.DataFrame)
    assert m(pandas_frame) == m(polars_frame)


def test_builtins_against_plain_numpy(runs):
    c, s = runs["correctness"].to_numpy(), runs["style"].to_numpy()
    e = runs["efficiency"].to_numpy()
    assert mk.pass_rate(0.5)(runs) == np.mean((c >= 0.5) & (s >= 0.5) & (e >= 0.5))
    assert mk.pass_rate(1.0, key="correctness")(runs) == np.mean(c >= 1.0)
    assert mk.weighted({"correctness": 0.7, "style": 0.3})(runs) == pytest.approx(
        np.mean(0.7 * c + 0.3 * s), rel=1e-12
    )
    assert mk.quantile(0.9, key="style")(runs) == np.quantile(s, 0.9)
    filled = sum(int((runs[mk.kind_column(k)] == "missing").sum()) for k in mk.reward_keys(runs))
    assert mk.filled_count()(runs) == filled
    assert mk.harbor_metric("mean")(runs) == mk.aggregate(runs)


def test_bad_metric_results_are_named():
    df = mk.read_rewards([{"r": 1}, {"r": 0}])
    with pytest.raises(mk.MetricError, match=r"metric 'text' returned 'high' \(str\)"):
        mk.metric("text", lambda df: "high")(df)
    with pytest.raises(mk.MetricError, match=r"metric 'nan' returned nan"):
        mk.metric("nan", lambda df: float("nan"))(df)
    with pytest.raises(mk.MetricError, match=r"metric 'bad' returned \{'x': 'y'\}"):
        mk.metric("bad", lambda df: {"x": "y", "z": 1})(df)
    with pytest.raises(mk.MetricError, match=r"metric 'boom' raised ZeroDivisionError"):
        mk.metric("boom", lambda df: 1 / 0)(df)
    with pytest.raises(mk.MetricError, match=r"metric 'missing' raised ColumnNotFoundError.*nope"):
        mk.metric("missing", nw.col("nope") > 0)(df)


def test_compare_metrics_table_ranks_and_agreement(runs):
    cmp = mk.compare_metrics(
        runs,
        {
            "mean": "mean",
            "strict": mk.pass_rate(1.0, key="correctness"),
            "lenient": nw.col("correctness") >= 0.5,
            "filled": mk.filled_count(),
        },
        by="agent",
    )
    table = cmp.table
    assert set(table.columns) >= {"group", "metric", "value", "ci_low", "ci_high", "n", "rank"}
    assert set(table["group"]) == {"a", "b", "c"}
    assert (table["n"] == 1000).all()
    lenient = table[table["metric"] == "lenient"].set_index("group")
    for agent in "abc":
        values = (runs.loc[runs["agent"] == agent, "correctness"] >= 0.5).to_numpy()
        assert lenient.loc[agent, "value"] == values.mean()
        assert lenient.loc[agent, "ci_low"] <= values.mean() <= lenient.loc[agent, "ci_high"]
    # ranks: 1 is best; 'filled' is lower-is-better
    for label, part in table.groupby("metric"):
        order = part.sort_values("value", ascending=label == "filled")["group"].tolist()
        assert part.set_index("group").loc[order[0], "rank"] == 1
    # Kendall's tau equals scipy's on the pivoted values
    wide = cmp.pivot()
    row = cmp.agreement[
        (cmp.agreement.metric_a == "lenient") & (cmp.agreement.metric_b == "filled")
    ]
    expected = sps.kendalltau(wide["lenient"], -wide["filled"]).statistic
    assert row["kendall_tau"].iloc[0] == pytest.approx(expected)


def test_compare_whole_frame_and_free_function_bootstrap():
    df = mk.read_rewards([{"r": float(x)} for x in np.linspace(0, 1, 50)])
    cmp = mk.compare_metrics(df, [mk.metric("top", lambda d: d["r"].max())], free_resamples=50)
    (row,) = cmp.table.itertuples()
    assert row.group == "all" and row.value == 1.0 and row.ci_method == "bootstrap-rows"
    assert row.ci_low <= row.value


@given(st.lists(st.integers(0, 1000).map(lambda i: i / 1000), min_size=2, max_size=60))
@settings(max_examples=50, deadline=None)
def test_mean_interval_matches_scipy_t(values):
    df = pd.DataFrame({"r": values})
    cmp = mk.compare_metrics(df, [mk.metric("m", "r")], ci="analytic")
    row = cmp.table.iloc[0]
    x = np.asarray(values)
    if np.ptp(x) == 0:
        assert row.ci_low == pytest.approx(row.value) or math.isnan(row.ci_low)
        return
    low, high = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert row.ci_low == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert row.ci_high == pytest.approx(high, rel=1e-9, abs=1e-12)


def test_an_expression_that_aggregates_gets_its_value_and_says_why_it_has_no_interval():
    trials = mk.read_harbor_job(mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00")
    cmp = mk.compare_metrics(trials, {"agg": nw.col("reward").mean(), "rows": nw.col("reward")},
                             by="eval")
    table = cmp.table.set_index("metric")
    assert table.loc["agg", "value"] == table.loc["rows", "value"] == trials["reward"].mean()
    assert np.isnan(table.loc["agg", "ci_low"]) and "not one per row" in table.loc[
        "agg", "ci_method"]
    assert table.loc["rows", "ci_low"] < table.loc["rows", "value"] < table.loc["rows", "ci_high"]
    assert any("'agg': no rank interval" in n for n in cmp.notes)


def _repeated(seed: int, n_tasks: int, attempts: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    level = rng.lognormal(0, 1, (n_tasks, 1))
    x = level * rng.lognormal(0, 0.3, (n_tasks, attempts))
    x[0, 1:] = 50.0  # one task's extra attempts would pull a quantile over trials up
    return pd.DataFrame({"task_name": np.repeat([f"t{i}" for i in range(n_tasks)], attempts),
                         "reward": x.ravel()})


def test_quantile_value_and_interval_are_over_task_means():
    from metrickit.compute.intervals import quantile_ci

    df = _repeated(1, 40)
    c = mk.compare_metrics(df, [mk.quantile(0.9, key="reward"), mk.metric(
        "median", "reward", agg="median")], by=None)
    for metric, q in (("q0.9", 0.9), ("median", 0.5)):
        row = c.table.set_index("metric").loc[metric]
        iv = quantile_ci(df["reward"], q, clusters=df["task_name"])
        assert (row["value"], row["ci_low"], row["ci_high"]) == (iv.estimate, iv.low, iv.high)
        assert row["ci_method"].startswith("order-statistic")
        assert row["harbor_value"] == np.quantile(df["reward"], q)  # over trials
    assert mk.quantile(0.9).q == 0.9


def test_quantile_of_few_tasks_carries_the_note():
    c = mk.compare_metrics(_repeated(2, 8), [mk.quantile(0.9, key="reward")], by=None)
    assert "few tasks (8) for the 0.9 quantile" in c.table["ci_method"].iloc[0]
    none = mk.compare_metrics(_repeated(2, 8), [mk.quantile(0.9, key="reward")], by=None,
                              ci="none").table.iloc[0]
    assert none["value"] == c.table["value"].iloc[0]  # the same estimand without interval


def test_sum_interval_is_sum_ci_over_tasks():
    from metrickit.compute.intervals import sum_ci

    df = _repeated(3, 12)
    c = mk.compare_metrics(df, [mk.metric("total", "reward", agg="sum")], by=None)
    row = c.table.iloc[0]
    iv = sum_ci(df["reward"], clusters=df["task_name"])
    assert (row["value"], row["ci_low"], row["ci_high"]) == pytest.approx(
        (iv.estimate, iv.low, iv.high))
    assert row["ci_method"].startswith(iv.method)


def test_compare_metrics_quantile_and_sum_cover_or_say_so():
    # reduced seeded version of benchmarks/coverage_power.py's quantile and sum cells,
    # through compare_metrics (the old percentile bootstrap covered 0.62-0.89, no note)
    rng = np.random.default_rng(7)
    truth_q = float(np.exp(1.0 * sps.norm.ppf(0.9)))
    shown = 0
    for _ in range(60):
        df = pd.DataFrame({"task_name": [f"t{i}" for i in range(10)],
                           "reward": rng.lognormal(0, 1, 10)})
        row = mk.compare_metrics(df, [mk.quantile(0.9, key="reward")], by=None).table.iloc[0]
        shown += (row["ci_low"] <= truth_q <= row["ci_high"]) or "few tasks" in row["ci_method"]
    assert shown == 60
    covered = 0
    for _ in range(60):
        rates = rng.beta(0.6, 0.6, 30)
        x = (rng.random((30, 3)) < rates[:, None]).astype(float)
        df = pd.DataFrame({"task_name": np.repeat(np.arange(30), 3), "reward": x.ravel()})
        row = mk.compare_metrics(df, [mk.metric("s", "reward", agg="sum")], by=None).table
        covered += row["ci_low"].iloc[0] <= 45 <= row["ci_high"].iloc[0]
    assert covered >= 54


def test_a_metric_can_state_its_own_interval_and_notes():
    from metrickit.compute.intervals import Interval

    def state(frame, confidence):
        n = len(frame)
        return mk.StatedInterval(Interval(0.5, 0.25, 0.75, math.nan, n, "mine", confidence,
                                          note="my caveat"),
                                 harbor_value=0.4, notes=("about mine",))

    m = mk.Metric("own", values=lambda nf: {"own": np.zeros(len(nf))}, stated=state)
    c = mk.compare_metrics(_repeated(4, 5), [m], by=None)
    row = c.table.iloc[0]
    assert (row["value"], row["ci_low"], row["ci_high"], row["harbor_value"]) == (
        0.5, 0.25, 0.75, 0.4)
    assert row["ci_method"] == "mine (my caveat)"
    assert "about mine" in c.notes
