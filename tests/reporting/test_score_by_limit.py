"""mk.plots.score_by_limit: each candidate's score if every trial were cut at a budget."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from plot_checks import outside, overlapping

import metrickit as mk
from metrickit.errors import MetrickitError


def _trials() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for model, speed in (("fast", 100.0), ("slow", 1000.0)):
        for i in range(20):
            for attempt in (1, 2):
                rows.append({"id": f"q{i}", "model": model, "ok": int(rng.random() < 0.7),
                             "ms": float(rng.lognormal(np.log(speed), 0.5)),
                             "usd": float(rng.uniform(0, 0.01)), "attempt": attempt})
    return mk.trials_from_frame(pd.DataFrame(rows), task="id", reward="ok", model="model",
                                latency_ms="ms", cost_usd="usd", attempt="attempt")


def test_score_at_a_budget_counts_trials_over_it_as_failed():
    t = _trials()
    budget = 300.0
    table = mk.plots.score_by_limit_table(t, budgets=[budget])
    for model in ("fast", "slow"):
        side = t[t["candidate"] == model]
        cut = np.where(side["total_ms"] > budget, 0.0, side["ok"])
        expected = pd.Series(cut).groupby(side["task_name"].to_numpy()).mean().mean()
        row = table[table["candidate"] == model].iloc[0]
        assert row["mean"] == pytest.approx(expected)
        assert row["n_over"] == int((side["total_ms"] > budget).sum())
        assert row["method"] == "cluster-wilson"
        assert row["ci_low"] <= row["mean"] <= row["ci_high"]
        assert row["n_tasks"] == 20


def test_the_largest_budget_gives_the_plain_score():
    t = _trials()
    table = mk.plots.score_by_limit_table(t, limit="cost_usd")
    last = table.groupby("candidate").tail(1).set_index("candidate")
    plain = mk.breakdown(t).set_index("candidate")
    for model in ("fast", "slow"):
        assert last.loc[model, "mean"] == pytest.approx(plain.loc[model, "mean"])
        assert last.loc[model, "ci_low"] == pytest.approx(plain.loc[model, "ci_low"])
    # 0/1 rewards: the score never falls as the budget grows
    for _, part in table.groupby("candidate"):
        assert (np.diff(part["mean"].to_numpy()) >= -1e-12).all()


def test_the_default_grid_is_log_spaced_when_values_span_decades():
    t = _trials()
    table = mk.plots.score_by_limit_table(t, n_budgets=10)
    grid = table[table["candidate"] == "fast"]["budget"].to_numpy()
    assert len(grid) == 10
    assert grid[-1] == t["total_ms"].max()
    ratios = grid[1:] / grid[:-1]
    np.testing.assert_allclose(ratios, ratios[0])


def test_unmeasured_trials_are_refused_or_counted_as_asked():
    t = _trials()
    t.loc[[0, 1], "cost_usd"] = np.nan
    with pytest.raises(MetrickitError, match="2 of 80 counted trial\\(s\\) have no 'cost_usd'"):
        mk.plots.score_by_limit_table(t, limit="cost_usd")
    failed = mk.plots.score_by_limit_table(t, limit="cost_usd", unmeasured="fail")
    kept = mk.plots.score_by_limit_table(t, limit="cost_usd", unmeasured="keep")
    assert "2 trial(s) without 'cost_usd' counted over every budget" in failed.attrs["notes"][0]
    assert failed["mean"].sum() <= kept["mean"].sum()


def test_a_limit_that_is_not_a_column_names_the_choices():
    with pytest.raises(MetrickitError, match=r"limit='latency'.*'n_output_tokens'"):
        mk.plots.score_by_limit_table(_trials(), limit="latency")


def test_running_trials_never_count():
    t = _trials()
    t["_status"] = t["_status"].astype(str)
    t.loc[0, "_status"] = "running"
    t["_status"] = pd.Categorical(t["_status"], categories=["ok", "empty", "null", "invalid",
                                                            "running"])
    table = mk.plots.score_by_limit_table(t, budgets=[1e9])
    assert table["n"].sum() == 79
    assert "1 running trial(s) not counted" in table.attrs["notes"][0]


def test_the_plot_draws_a_line_and_a_band_per_candidate():
    t = _trials()
    ax = mk.plots.score_by_limit(t, limit="total_ms")
    assert len(ax.get_lines()) == 2
    assert len(ax.collections) == 2
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "budget: time per trial (s)" or "ms" in ax.get_xlabel()
    assert [x.get_text() for x in ax.get_legend().get_texts()] == ["fast", "slow"]
    ax.figure.canvas.draw()
    assert not overlapping(ax.figure)
    assert not outside(ax.figure)


def test_the_sample_harbor_jobs():
    t = mk.examples.load("harbor_jobs")
    table = mk.plots.score_by_limit_table(t, limit="n_output_tokens", value="reward",
                                          unmeasured="fail")
    # the candidates of a multi-key evaluation have no 'reward': left out, and said so
    assert any("not shown" in n for n in table.attrs["notes"])
    assert table["candidate"].nunique() == 7
    ax = mk.plots.score_by_limit(t, table=table)
    assert len(ax.get_lines()) == 7
