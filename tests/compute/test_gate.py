"""The regression gate: paired by task, decided with a margin; seeded data with known truth."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import metrickit as mk


def _side(rates: np.ndarray, *, attempts: int = 1, seed: int = 0, cost: float | None = None,
          prefix: str = "t") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = len(rates)
    x = (rng.random((n, attempts)) < rates[:, None]).astype(int)
    df = pd.DataFrame({
        "task": np.repeat([f"{prefix}{i}" for i in range(n)], attempts),
        "attempt": np.tile(np.arange(1, attempts + 1), n),
        "reward": x.ravel(),
    })
    if cost is not None:
        df["cost"] = cost + rng.normal(0, 0.001, len(df))
    return mk.trials_from_frame(df, task="task", reward="reward", attempt="attempt",
                                cost_usd="cost" if cost is not None else None)


def test_a_clear_regression_exits_1():
    rates = np.random.default_rng(1).uniform(0.3, 0.9, 200)
    result = mk.gate(_side(rates, seed=101), _side(rates - 0.25, seed=102), margin=0.05)
    assert result.verdict == "regression" and result.exit_code == 1
    (v,) = result.values
    assert v.n_tasks == 200 and v.high < -0.05
    assert v.low < -0.25 < v.high  # the truth
    assert v.pass_to_fail  # the tasks that flipped are named


def test_an_equal_candidate_with_enough_tasks_passes():
    rates = np.random.default_rng(3).choice([0.0, 1.0], 2000, p=[0.3, 0.7])
    rates = np.clip(rates + np.random.default_rng(4).normal(0, 0.05, 2000), 0, 1)
    result = mk.gate(_side(rates, seed=5), _side(rates, seed=6), margin=0.05)
    assert result.verdict == "pass" and result.exit_code == 0
    assert result.values[0].low > -0.05


def test_too_few_tasks_is_inconclusive_and_says_how_many_would_settle_it():
    rates = np.full(8, 0.5)
    result = mk.gate(_side(rates, attempts=3, seed=7), _side(rates, attempts=3, seed=8),
                     margin=0.05)
    assert result.verdict == "inconclusive" and result.exit_code == 3
    needed = result.values[0].tasks_needed
    assert needed is not None and needed > 8
    assert "would settle it" in result.to_markdown()


def test_pairs_only_the_tasks_both_ran():
    rates = np.full(30, 0.6)
    base = _side(rates, seed=1)
    cand = _side(rates[:20], seed=2)
    extra = _side(np.full(5, 0.1), seed=3, prefix="new")
    cand = mk.concat_trials([cand, extra])
    (v,) = mk.gate(base, cand, margin=0.1).values
    assert v.n_tasks == 20
    assert len(v.only_baseline) == 10 and v.only_candidate == [f"new{i}" for i in range(5)]


def test_lower_is_better_for_cost_and_several_values_give_one_verdict_each():
    rates = np.random.default_rng(9).uniform(0.4, 0.8, 400)
    base = _side(rates, seed=10, cost=0.010)
    cand = _side(rates, seed=11, cost=0.050)  # same accuracy, five times the cost
    result = mk.gate(base, cand, value=["reward", "cost_usd"],
                     margin={"reward": 0.1, "cost_usd": 0.005})
    by_value = {v.value: v for v in result.values}
    assert by_value["cost_usd"].direction == "lower"
    assert by_value["cost_usd"].verdict == "regression"
    assert by_value["reward"].verdict == "pass"
    assert result.verdict == "regression"
    cheaper = mk.gate(cand, base, value="cost_usd", margin=0.005)
    assert cheaper.verdict == "pass"


def test_running_trials_never_count_and_json_is_valid():
    rates = np.full(40, 0.5)
    base = _side(rates, seed=1)
    cand = _side(rates, seed=2).copy()
    cand["_status"] = cand["_status"].astype(str)
    cand.loc[0, "_status"] = "running"
    cand["_status"] = pd.Categorical(cand["_status"], categories=base["_status"].cat.categories)
    result = mk.gate(base, cand, margin=0.1)
    (v,) = result.values
    assert v.n_tasks == 39 and "t0" in v.only_baseline
    assert any("running" in n for n in v.notes)
    data = json.loads(result.to_json())
    assert data["verdict"] == result.verdict and data["values"][0]["n_tasks"] == 39


def test_a_side_with_several_candidates_is_refused():
    t = mk.read_harbor_job(mk.examples.path("harbor_jobs") / "2025-07-14__09-00-00")
    with pytest.raises(mk.StatsError, match="candidates"):
        mk.gate(t, t)


def test_false_alarms_on_equal_candidates_stay_under_alpha():
    # A reduced, seeded version of benchmarks/coverage.py's gate scenario.
    rng = np.random.default_rng(12)
    alarms = 0
    reps = 200
    for rep in range(reps):
        rates = rng.beta(1, 1, 30)
        result = mk.gate(_side(rates, seed=2 * rep), _side(rates, seed=2 * rep + 1),
                         margin=0.02)
        alarms += result.verdict == "regression"
    assert alarms / reps <= 0.05 + 0.03  # alpha plus Monte-Carlo slack at 200 data sets
