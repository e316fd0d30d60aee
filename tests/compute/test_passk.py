"""pass@k: Harbor's numbers and k values, k = 1, chosen k, pass^k, skipped groups."""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from benchmark_modules import benchmark
from harbor_jobs_helpers import FIXTURES, harbor_pass_at_k, write_trial
from hypothesis import example, given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit.compute.passk import (
    PassAtKSkipped,
    _pass_at_k_task,
    _pass_at_k_tasks,
    _pass_hat_k_task,
    _pass_hat_k_tasks,
    harbor_k_values,
    pass_at_k,
)

JOB_025 = Path("data/harbor_jobs/2025-06-02__10-00-00")
JOB_026 = Path("data/harbor_jobs/2025-06-03__14-30-00")


def stored_pass_at_k(job: Path) -> dict[str, dict[int, float]]:
    evals = json.loads((job / "result.json").read_text())["stats"]["evals"]
    return {key: {int(k): v for k, v in ev["pass_at_k"].items()} for key, ev in evals.items()}


@pytest.mark.parametrize(
    ("job", "policy"), [(FIXTURES / "job_0.25", "0.25"), (FIXTURES / "job_0.26", "0.26")]
)
def test_equals_what_harbor_stored(job, policy):
    # Harbor-written fixtures: 0.25 counts the errored trial as a failure (pass@2 2/3),
    # 0.26 leaves it out (pass@2 1.0).
    result = pass_at_k(mk.read_harbor_job(job), policy=policy, by="eval")
    assert result.harbor == stored_pass_at_k(job)
    other = "0.26" if policy == "0.25" else "0.25"
    other_result = pass_at_k(mk.read_harbor_job(job), policy=other, by="eval")
    assert other_result.harbor != stored_pass_at_k(job)


def test_sample_job_table_detail_and_pass_hat_k():
    result = pass_at_k(mk.read_harbor_job(JOB_025), by="eval")
    assert result.harbor == stored_pass_at_k(JOB_025)
    assert result.skipped == {} and result.notes == []
    table = result.table.set_index("k")
    assert list(table.index) == [1, 2, 4]
    assert list(table["harbor"]) == [False, True, True]
    detail = result.detail.set_index("task_name")
    assert list(detail["n"]) == [4] * 6
    # k = 1 is the mean of per-task success rates; pass^k = mean of C(c,k)/C(n,k).
    assert table.loc[1, "pass_at_k"] == pytest.approx((detail["c"] / detail["n"]).mean())
    for k in (2, 4):
        expected = sum(math.comb(c, k) / math.comb(4, k) for c in detail["c"]) / 6
        assert table.loc[k, "pass_hat_k"] == pytest.approx(expected)
        assert list(detail[f"pass^{k}"]) == pytest.approx(
            [math.comb(c, k) / math.comb(4, k) for c in detail["c"]]
        )
    assert detail.loc["parse-nginx-logs", "pass@2"] == 0.5  # n=4, c=1


def test_an_evaluation_key_in_two_runs_is_said_to_be_pooled():
    # two jobs of one configuration share Harbor's evaluation key; by="eval" pools them
    # (Harbor computes per job): the notes say so, and by=["run", "eval"] keeps each run's
    one = mk.read_harbor_job(JOB_025)
    both = pd.concat([one, one.assign(run="again")], ignore_index=True)
    pooled = pass_at_k(both, by="eval")
    assert len(pooled.notes) == 1 and "is in 2 runs" in pooled.notes[0]
    assert "by=['run', 'eval']" in pooled.notes[0]
    per_run = pass_at_k(both, by=["run", "eval"])
    assert not any("runs" in note for note in per_run.notes)
    stored = stored_pass_at_k(JOB_025)
    assert per_run.harbor == {(run, key): value for run in (one["run"].iloc[0], "again")
                              for key, value in stored.items()}
    assert pass_at_k(one, by="eval").notes == []


def test_policy_026_leaves_out_invalid_rewards():
    trials = mk.read_harbor_job(JOB_025)
    result = pass_at_k(trials, policy="0.26", by="eval")
    # The EnvironmentStartTimeoutError trial has no reward: sqlite-add-index has 3 trials.
    assert result.harbor == {
        "terminus-2__claude-sonnet-4-5__terminal-bench-mini": harbor_pass_at_k(
            _valid_pairs(trials)
        )
    }
    assert len(_valid_pairs(trials)) == 23
    assert list(result.table["k"]) == [1, 2]


def _valid_pairs(trials):
    ok = trials[trials["reward_valid"]]
    return [(t, {"reward": r}) for t, r in zip(ok["task_name"], ok["reward"], strict=True)]


def test_user_k_and_k_beyond_the_smallest_task():
    trials = mk.read_harbor_job(JOB_025)
    with pytest.warns(PassAtKSkipped, match=r"k=\[5\] exceeds the fewest trials"):
        result = pass_at_k(trials, k=[3, 5], by="eval")
    table = result.table.set_index("k")
    assert list(table.index) == [1, 2, 3, 4, 5]
    assert not table.loc[3, "harbor"]
    assert table.loc[3, "pass_at_k"] == pytest.approx(
        sum(_pass_at_k_task(4, c, 3) for c in result.detail["c"]) / 6
    )
    assert math.isnan(table.loc[5, "pass_at_k"])
    assert result.harbor == stored_pass_at_k(JOB_025)  # Harbor's own part is unchanged
    with pytest.raises(mk.StatsError, match="positive integers"):
        pass_at_k(trials, k=0)


def test_multi_key_group_is_skipped_loudly():
    trials = mk.read_harbor_job(JOB_026)
    with pytest.warns(PassAtKSkipped, match="2 reward keys") as record:
        result = pass_at_k(trials, by="eval")
    assert len(record) == 2
    assert set(result.skipped) == {"claude-code__claude-sonnet-4-5__webapp-tasks",
                                   "codex__gpt-5__webapp-tasks"}
    assert result.harbor == stored_pass_at_k(JOB_026) == {key: {} for key in result.skipped}
    assert any("running" in note for note in result.notes)
    assert len(result.table) == 0


def test_value_column_for_a_multi_key_job():
    trials = mk.read_harbor_job(JOB_026)
    trials = trials[trials["task_name"] != "deploy-pipeline"]  # its steps average to 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PassAtKSkipped)
        result = pass_at_k(trials, value="correctness", by="eval")
    table = result.table.set_index(["eval", "k"])
    claude = trials[(trials["agent"] == "claude-code")]
    per_task = claude.groupby("task_name")["correctness"].agg(["size", "sum"])
    expected = sum(_pass_at_k_task(n, int(c), 2) for n, c in per_task.to_numpy()) / len(per_task)
    assert table.loc[("claude-code__claude-sonnet-4-5__webapp-tasks", 2), "pass_at_k"] == (
        pytest.approx(expected)
    )
    assert not table["harbor"].any()


@pytest.mark.parametrize(
    ("rewards", "reason"),
    [({"reward": 0.5}, "has reward 0.5"), ({}, "has 0 reward keys")],
)
def test_non_binary_or_empty_reward_skips_the_group(tmp_path, rewards, reason):
    write_trial(tmp_path / "job", "a__1", task="a", rewards={"reward": 1.0})
    write_trial(tmp_path / "job", "a__2", task="a", rewards=rewards)
    trials = mk.read_harbor_job(tmp_path / "job")
    with pytest.warns(PassAtKSkipped, match=reason):
        result = pass_at_k(trials, by="eval")
    assert result.harbor == {"claude-code__claude-sonnet-4-5__my-dataset": {}}


@pytest.mark.parametrize(
    ("n", "expected"),
    [(1, []), (2, [2]), (4, [2, 4]), (5, [2, 4, 5]), (10, [2, 4, 5, 8, 10]),
     (16, [2, 4, 5, 8, 10, 15, 16])],
)
def test_harbor_k_values(n, expected):
    assert harbor_k_values(n) == expected


def test_estimator_examples_from_harbor():
    assert _pass_at_k_task(5, 2, 2) == pytest.approx(0.7)
    assert _pass_at_k_task(4, 1, 2) == 0.5
    assert _pass_at_k_task(3, 0, 2) == 0.0


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.data())
def test_estimator_is_the_unbiased_formula(n, data):
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    assert _pass_at_k_task(n, c, k) == pytest.approx(
        1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12
    )


def test_the_estimators_over_all_tasks_at_once_give_harbors_bits():
    # the vectorised estimators pass_at_k uses against the per-task loop in Harbor's own
    # order of float operations: every (n, c, k) up to 120 trials, bit for bit, and NaN
    # where a task has fewer than k trials
    n, c = (a.ravel().astype(np.int64) for a in np.meshgrid(np.arange(1, 121),
                                                             np.arange(0, 121)))
    n, c = n[c <= n], c[c <= n]
    for k in (1, 2, 3, 5, 8, 16, 37, 120, 121):
        for tasks, one in ((_pass_at_k_tasks, _pass_at_k_task),
                           (_pass_hat_k_tasks, _pass_hat_k_task)):
            got = tasks(n, c, k)
            want = np.array([one(int(a), int(b), k) if k <= a else math.nan
                             for a, b in zip(n, c, strict=True)])
            defined = k <= n
            assert (np.isnan(got) == ~defined).all() and (np.isnan(want) == ~defined).all()
            assert np.array_equal(got[defined].view(np.int64),
                                  want[defined].view(np.int64)), (tasks.__name__, k)


trial_st = st.tuples(
    st.sampled_from(["t1", "t2", "t3"]),
    st.sampled_from([None, {"reward": 1.0}, {"reward": 0.0}, {"reward": 1}, {"reward": 0}]),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(trial_st, min_size=1, max_size=14))
@example([("t1", None)])
@example([("t1", {"reward": 1}), ("t1", {"reward": 0.0}), ("t2", None), ("t2", {"reward": 1})])
def test_matches_harbor_reference_on_random_jobs(trials):
    with tempfile.TemporaryDirectory() as tmp:
        for i, (task, rewards) in enumerate(trials):
            write_trial(Path(tmp), f"{task}__{i:07d}", task=task, rewards=rewards,
                        started=f"2025-01-01T00:{i:02d}:00Z")
        table = mk.read_harbor_job(tmp)
    result = pass_at_k(table, by="eval")
    expected = harbor_pass_at_k(trials)
    got = result.harbor["claude-code__claude-sonnet-4-5__my-dataset"]
    assert list(got) == list(expected)
    assert list(got.values()) == pytest.approx(list(expected.values()), abs=1e-15)


def test_bad_arguments_raise_stats_errors():
    trials = mk.read_harbor_job(JOB_025)
    with pytest.raises(mk.StatsError, match=r"task='nope' is not a column; columns are \["):
        pass_at_k(trials, task="nope")
    with pytest.raises(mk.StatsError, match=r"value='nope' is not a reward column"):
        pass_at_k(trials, value="nope")
    for k in (0, -1, 1.5, True, [2, "3"]):
        with pytest.raises(mk.StatsError, match="expected positive integers"):
            pass_at_k(trials, k=k)


# --- uncertainty: intervals over tasks and the best set ----------------------------------

bench = benchmark("coverage_power")


def _frame(x: np.ndarray) -> pd.DataFrame:
    k, n_tasks, attempts = x.shape
    return pd.DataFrame({
        "candidate": np.repeat([f"c{i}" for i in range(k)], n_tasks * attempts),
        "task_name": np.tile(np.repeat([f"t{j}" for j in range(n_tasks)], attempts), k),
        "reward": x.ravel().astype(int),
    })


def _table(x: np.ndarray) -> pd.DataFrame:
    return mk.trials_from_frame(_frame(x), task="task_name", reward="reward",
                                model="candidate")


def test_pass_at_1_interval_is_breakdowns():
    trials = mk.read_harbor_job(JOB_025)
    row = pass_at_k(trials).table.set_index("k").loc[1]
    ref = mk.breakdown(trials).iloc[0]
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ref["ci_low"], ref["ci_high"]))
    assert row["note"] == "few tasks (6)" and bool(row["best_group"])


def test_pass_at_k_interval_is_wilson_over_tasks_with_trials_over_k():
    from scipy import stats
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(4)
    x = rng.random((1, 40, 6)) < rng.beta(0.6, 0.6, 40)[None, :, None]
    result = pass_at_k(_table(x), k=[3])
    row = result.table.set_index("k").loc[3]
    v = result.detail["pass@3"].to_numpy()
    p, se = v.mean(), v.std(ddof=1) / math.sqrt(40)
    n_eff = min(40 * 6 / 3, p * (1 - p) / se**2)
    # Wilson at n_eff with the t quantile is statsmodels' Wilson at that level of z
    z = stats.t.ppf(0.975, 39)
    alpha = 2 * stats.norm.sf(z)
    low, high = proportion_confint(p * n_eff, n_eff, alpha=alpha, method="wilson")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high))
    assert row["ci_low"] < row["pass_at_k"] < row["ci_high"]


def test_identical_candidates_are_all_in_the_best_group_and_worse_ones_are_not():
    rng = np.random.default_rng(7)
    rates = rng.beta(0.6, 0.6, 40)
    same = rng.random((3, 40, 8)) < rates[None, :, None]
    worse = rng.random((1, 40, 8)) < (rates * 0.2)[None, :, None]
    table = pass_at_k(_table(np.concatenate([same, worse]))).table
    for _, part in table.groupby("k"):
        flags = dict(zip(part["candidate"], part["best_group"], strict=True))
        assert flags["c3"] is False or not flags["c3"]
        assert all(flags[c] for c in ("c0", "c1", "c2"))


def test_best_group_with_a_tuple_grouping():
    rng = np.random.default_rng(8)
    frame = _frame(rng.random((2, 12, 4)) < 0.5)
    frame["agent"] = "x"
    trials = mk.trials_from_frame(frame, task="task_name", reward="reward",
                                  model="candidate", agent="agent")
    table = pass_at_k(trials, by=["agent", "model"]).table
    assert table["best_group"].all() and {"ci_low", "ci_high", "note"} <= set(table.columns)


def test_pass_at_k_intervals_cover_and_ties_catch_identical_candidates():
    rows = list(bench.passk(50))
    for r in rows:
        if r.method == "wilson over tasks":
            assert r.observed >= 0.9 or r.flagged >= 0.5, r
    apart, together = rows[-2], rows[-1]
    assert apart.observed > 0.5  # identical candidates look different most of the time
    assert together.observed >= 0.9  # and the best set keeps them together


def test_a_plain_table_without_status_counts_whole():
    # A frame without _status is a plain table (counted_trials counts it whole): pass@k
    # reads it as the trial table of the same rows would be read, not as a KeyError.
    rng = np.random.default_rng(4)
    df = pd.DataFrame({
        "candidate": np.repeat(["a", "b", "c"], 40),
        "task_name": np.tile(np.repeat([f"t{i}" for i in range(10)], 4), 3),
        "reward": (rng.random(120) < 0.5).astype(float),
    })
    trials = mk.trials_from_frame(df, task="task_name", candidate="candidate", reward="reward")
    plain, read = pass_at_k(df, k=3), pass_at_k(trials, k=3)
    assert plain.harbor == read.harbor and set(plain.harbor) == {"a", "b", "c"}
    pd.testing.assert_frame_equal(plain.table, read.table)
    pd.testing.assert_frame_equal(plain.detail, read.detail)
