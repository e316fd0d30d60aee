"""Every default interval and test against known truth: a reduced, seeded run of
benchmarks/coverage.py (the full table is in docs/guides/how-sure.md).

Deterministic: fixed seeds, so a failure is a change in behaviour, not bad luck.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from benchmark_modules import benchmark

import metrickit as mk

coverage = benchmark("coverage")


def test_bernoulli_wilson_covers():
    rows = list(coverage.bernoulli(0))
    assert {r.method for r in rows} == {"wilson"}
    for r in rows:
        assert r.observed >= 0.93, r


def test_task_clustered_intervals_cover_or_say_they_may_not():
    rows = list(coverage.tasks(1000)) + list(coverage.tasks_continuous(500))
    for r in rows:
        assert r.method.startswith("cluster"), r
        # Short cells are the rare-success ones, and their intervals carry a note.
        assert r.observed >= 0.93 or r.flagged >= 0.5, r
    assert np.mean([r.observed for r in rows]) >= 0.945


def test_skewed_costs_are_flagged_where_t_falls_short():
    for r in coverage.lognormal(400):
        assert r.observed >= 0.93 or r.flagged >= 0.5, r


def test_compare_runs_false_positive_rate_under_a_true_null():
    rows = list(coverage.compare_runs_null(800))
    assert len(rows) == 9  # 5, 10, 30 tasks x 1, 3, 5 attempts
    for r in rows:
        assert r.observed <= 0.07, r
    assert np.mean([r.observed for r in rows]) <= 0.06


def test_ten_identical_independent_candidates_come_out_tied():
    (row,) = coverage.ties(100)
    assert row.observed >= 0.93


def test_min_detectable_difference_has_the_power_it_claims():
    for r in coverage.power(600):
        assert abs(r.observed - 0.8) <= 0.08, r


def test_tasks_needed_inverts_min_detectable_difference():
    n = mk.tasks_needed(0.1, attempts=3, base_rate=0.5, task_spread=0.1)
    assert mk.min_detectable_difference(n, 3, 0.5, task_spread=0.1) <= 0.1
    assert mk.min_detectable_difference(n - 1, 3, 0.5, task_spread=0.1) > 0.1
    with pytest.raises(mk.StatsError, match="task_spread"):
        mk.min_detectable_difference(30, 3, 0.5, task_spread=0.6)


# --- the audit's statements, each now false --------------------------------------------


def test_zero_one_data_never_gets_a_t_interval_or_leaves_its_range():
    ci = mk.mean_ci([1, 0])
    assert ci.method == "wilson" and 0 <= ci.low <= ci.high <= 1
    ones = mk.mean_ci([1] * 20)
    assert ones.high == 1 and ones.low < 0.9  # an honest width, not [1, 1]
    zeros = mk.mean_ci([0] * 20, method="wilson")
    assert zeros.low == 0.0  # was 6.9e-18, above the estimate
    equal = mk.mean_ci([0.5] * 20)
    assert "all values equal" in equal.note


def _trial_table(seed: int = 0, tasks: int = 30, attempts: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for agent, shift in (("a", 0.0), ("b", 0.0)):
        rates = rng.beta(1, 1, tasks)
        for t in range(tasks):
            for k in range(attempts):
                rows.append({"agent": agent, "task_name": f"t{t}", "attempt": k + 1,
                             "reward": float(rng.random() < rates[t] + shift)})
    return pd.DataFrame(rows)


def test_breakdown_clusters_by_task_and_reports_tasks():
    table = mk.breakdown(_trial_table(), by="agent", value="reward")
    assert set(table["method"]) == {"cluster-wilson"}
    assert table["n"].tolist() == [150, 150] and table["n_tasks"].tolist() == [30, 30]
    plain = mk.breakdown(_trial_table(), by="agent", value="reward", cluster=None)
    assert set(plain["method"]) == {"wilson"}
    # Clustering widens the interval when attempts of a task agree.
    assert ((table["ci_high"] - table["ci_low"]) > (plain["ci_high"] - plain["ci_low"])).all()


def test_compare_metrics_on_a_trial_table_clusters_and_counts_tasks():
    cmp = mk.compare_metrics(_trial_table(), {"pass": mk.pass_rate(1.0, key="reward")},
                             by="agent")
    assert set(cmp.table["n_tasks"]) == {30}
    assert all(m.startswith("cluster-wilson") for m in cmp.table["ci_method"])


def test_compare_metrics_rejects_unknown_ci_and_gives_no_interval_for_max():
    df = pd.DataFrame({"reward": [0.1, 0.5, 0.9]})
    with pytest.raises(ValueError, match="ci='wilsn'; expected one of"):
        mk.compare_metrics(df, "mean", ci="wilsn")
    table = mk.compare_metrics(df, {"top": mk.harbor_metric("max")}).table
    assert np.isnan(table["ci_low"][0]) and "no honest interval" in table["ci_method"][0]


def test_clearly_better_candidate_ranks_one_to_one_and_identical_ones_tie():
    rng = np.random.default_rng(3)
    df = pd.DataFrame({
        "candidate": ["good"] * 200 + ["bad"] * 200,
        "reward": np.r_[rng.random(200) < 0.8, rng.random(200) < 0.2].astype(float),
    })
    table = mk.compare_metrics(df, "mean", by="candidate").table.set_index("group")
    assert (table.loc["good", "rank_low"], table.loc["good", "rank_high"]) == (1, 1)
    assert table.loc["good", "p_best"] == 1.0 and not table.loc["bad", "best_group"]
    same = pd.DataFrame({
        "candidate": np.repeat([f"c{i}" for i in range(10)], 50),
        "reward": (rng.random(500) < 0.5).astype(float),
    })
    cmp = mk.compare_metrics(same, "mean", by="candidate")
    assert len(cmp.best()["mean"]) == 10 and cmp.table["best_group"].all()
    assert cmp.pairwise["p_holm"].ge(cmp.pairwise["pvalue"]).all()


def test_independent_and_general_covariance_agree():
    # Rows as units: the shortcut (per-group blocks) equals the general clustered formula.
    from metrickit.compute.ranking import MeanDraws

    rng = np.random.default_rng(0)
    groups = rng.integers(0, 4, 300)
    x, y = rng.random(300), rng.random(300)
    x[5] = np.nan
    shortcut = MeanDraws(groups, 4, None)
    general = MeanDraws(groups, 4, np.arange(300))
    for (m1, c1), (m2, c2) in [(shortcut.covariance(x, y), general.covariance(x, y))]:
        np.testing.assert_allclose(m1, m2)
        np.testing.assert_allclose(c1, c2, atol=1e-15)
    # A clustered covariance is the cluster-robust variance of mean_ci on one group.
    tasks = np.repeat(np.arange(60), 5)
    z = (rng.random(300) < np.repeat(rng.random(60), 5)).astype(float)
    _, cov = MeanDraws(np.zeros(300, dtype=np.intp), 1, tasks).covariance(z)
    ref = mk.mean_ci(z, method="cluster", clusters=tasks)
    assert np.sqrt(cov[0, 0]) == pytest.approx(ref.se)


def test_the_truly_best_is_in_the_best_group_and_a_clearly_worse_one_is_not():
    truly_best, worst = coverage.best(100)
    assert truly_best.observed >= 0.93, truly_best
    assert worst.observed <= 0.05, worst


def test_a_candidate_that_is_never_first_is_not_tied_for_best():
    from metrickit.compute.ranking import rank_intervals

    # a noisy third candidate sometimes beats the leader, so the leader's rank interval is
    # 1-2; the second is always behind the leader and never first: it may not be best
    rng = np.random.default_rng(0)
    leader = rng.normal(0.80, 0.01, 1000)
    second = leader - 0.05
    noisy = rng.normal(0.70, 0.08, 1000)
    ri = rank_intervals(np.array([0.80, 0.75, 0.70]), np.column_stack([leader, second, noisy]))
    assert (ri.rank_low[0], ri.rank_high[0]) == (1, 2)
    assert ri.rank_low[1] == 2 and ri.rank_low[2] == 1
    assert list(ri.best_group) == [True, False, True]


def test_the_gate_holds_its_level_both_ways():
    rows = list(coverage.gate(400))
    assert len(rows) == 24
    for r in rows:
        assert r.observed <= 0.06 + 0.025, r  # 400 data sets: ~0.011 Monte-Carlo error
    assert np.mean([r.observed for r in rows]) <= 0.05


# --- issue 24: one estimand, calibrated best sets, skewed data ------------------------


def _unequal_table() -> pd.DataFrame:
    """A wins on every task but attempts differ: B's hard tasks have 1 attempt, its easy
    ones 9, so B's trial mean is high while its mean over tasks is low."""
    rows = []
    for t in range(20):
        hard = t < 10
        for _ in range(1 if hard else 9):
            rows.append({"model": "B", "id": f"t{t}", "ok": 0.0 if hard else 1.0})
        for k in range(3):
            rows.append({"model": "A", "id": f"t{t}", "ok": 1.0 if not hard or k == 0 else 0.0})
    return pd.DataFrame(rows)


def test_breakdown_compare_metrics_compare_runs_and_pass1_agree_on_one_estimand():
    t = mk.trials_from_frame(_unequal_table(), task="id", reward="ok", model="model")
    table = mk.breakdown(t).set_index("candidate")
    # mean over tasks of each task's mean; Harbor's mean over trials kept beside it
    assert table.loc["A", "mean"] == pytest.approx((10 * 1 / 3 + 10) / 20)
    assert table.loc["B", "mean"] == pytest.approx(0.5)
    assert table.loc["B", "harbor_mean"] == pytest.approx(90 / 100)
    assert "Harbor's metric" in table.loc["B", "note"]
    cmp = mk.compare_metrics(t, {"ok": mk.pass_rate(1.0, key="ok")}).table.set_index("group")
    assert cmp.loc["A", "value"] == pytest.approx(table.loc["A", "mean"])
    assert cmp.loc["B", "harbor_value"] == pytest.approx(0.9)
    assert cmp.loc["A", "rank"] == 1  # the same sign as compare_runs and pass@1
    runs = mk.compare_runs(t, "A", "B")
    assert runs.difference.estimate == pytest.approx(table.loc["A", "mean"] - 0.5)
    p1 = mk.pass_at_k(t).table.set_index("candidate")
    assert p1.loc["B", "pass_at_k"] == pytest.approx(0.5)


def test_explicit_methods_keep_the_task_clustering_and_null_tasks_are_refused():
    rng = np.random.default_rng(0)
    tasks = np.repeat(np.arange(10), 8)
    x = (rng.random(80) < np.repeat(rng.random(10), 8)).astype(float)
    for method in ("analytic", "bootstrap", "wilson"):
        clustered = mk.mean_ci(x, method=method, clusters=tasks)
        plain = mk.mean_ci(x, method=method)
        assert clustered.n_clusters == 10, method
        assert clustered.high - clustered.low > 1.3 * (plain.high - plain.low), method
    with pytest.raises(mk.StatsError, match="task label"):
        mk.mean_ci(x, clusters=[None, *tasks[1:].tolist()])
    frame = pd.DataFrame({"task_name": ["a", None, "b", "b"], "reward": [1.0, 0, 1, 0],
                          "candidate": ["m"] * 4})
    with pytest.raises(mk.StatsError, match="task label"):
        mk.breakdown(frame, value="reward")


def test_one_estimand_covers_the_per_task_truth_when_hard_tasks_lose_attempts():
    rows = list(coverage.unequal_attempts(300))
    for r in rows[::2]:
        assert r.observed >= 0.93, r


def test_skewed_costs_cover_or_say_so():
    rows = list(coverage.skewed_costs(300))
    for r in rows:
        assert r.observed >= 0.93 or (r.observed >= 0.88 and r.flagged >= 0.4), r
    twenty = [r for r in rows if "tasks=20" in r.setting]
    assert all(r.observed >= 0.92 for r in twenty)


def test_identical_candidates_all_in_the_best_set():
    rows = list(coverage.identical(60))
    for r in rows:
        if r.scenario == "identical":
            assert r.observed >= 0.88, r  # 60 data sets: ~0.03 Monte-Carlo error


def test_close_candidates_rank_sets_hold_and_p_best_is_calibrated():
    best_in, ranks, p_best = coverage.close(100)
    assert best_in.observed >= 0.93 and ranks.observed >= 0.93
    assert abs(p_best.observed - p_best.nominal) <= 0.08


def test_a_clearly_worse_candidate_is_out_of_the_best_set_on_few_tasks():
    from metrickit.compute.ranking import rank_intervals

    rng = np.random.default_rng(1)
    draws = rng.multivariate_normal([0.5, 0.5, 0.2], np.eye(3) * 0.03**2, 2000)
    ri = rank_intervals(np.array([0.5, 0.5, 0.2]), draws)
    assert list(ri.best_group) == [True, True, False]
    assert list(ri.rank_low) == [1, 1, 3] and list(ri.rank_high) == [2, 2, 3]
    assert ri.p_best[2] == 0.0 and abs(ri.p_best[0] - 0.5) < 0.1


def test_identical_candidates_on_uneven_tasks_are_all_in_the_best_set():
    # the power to leave clearly worse ones out: test_ranking_calibration.py and the
    # benchmark's ``many`` scenario
    (row,) = coverage.identical_uneven(30)
    assert row.observed >= 0.87, row  # 30 data sets: ~0.04 Monte-Carlo error
