"""Every public analysis runs with its defaults on the trial table of every reader (and of
a tidy table), groups by candidate, and agrees on which trials count."""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metrickit as mk

REALDATA = Path(__file__).resolve().parents[1].parent / "shared" / "realdata"


def _tidy() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"task": [f"q{i}" for i in range(12)] * 2,
                       "model": ["a"] * 12 + ["b"] * 12,
                       "ok": (rng.random(24) < 0.6).astype(int),
                       "ms": rng.uniform(100, 900, 24)})
    return mk.trials_from_frame(df, task="task", reward="ok", model="model", latency_ms="ms")


NAMES = ("harbor_jobs", "inspect_logs", "lm_eval_output", "terminal_bench_run", "tidy")


@functools.cache
def _table(name: str) -> pd.DataFrame:
    """Read when a test asks (not at collection, which every xdist worker does)."""
    return _tidy() if name == "tidy" else mk.examples.load(name)


def _value(trials: pd.DataFrame) -> str | None:
    """None where the table has one reward key with values (the default picks it)."""
    keys = [k for k in mk.reward_keys(trials)
            if (trials["_kind_" + k].astype(str) != "missing").any()]
    return None if len(keys) == 1 else ("reward" if "reward" in keys else keys[0])


@pytest.mark.parametrize("name", NAMES)
def test_every_analysis_runs_with_its_defaults(name, tmp_path):
    trials = _table(name)
    value = _value(trials)
    kw = {} if value is None else {"value": value}
    candidates = list(dict.fromkeys(trials["candidate"]))
    table = mk.breakdown(trials, **kw)
    assert "candidate" in table.columns and set(table["candidate"]) == set(candidates)
    metric = value or mk.reward_keys(trials)[0]
    cmp = mk.compare_metrics(trials, {"mean": metric})
    assert set(cmp.table["group"]) <= set(candidates)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mk.PassAtKSkipped)  # not 0/1 or several keys
        mk.pass_at_k(trials, **kw)
    valued = table[table["mean"].notna()]["candidate"].tolist()
    if len(valued) >= 2:
        a, b = valued[:2]
        try:
            mk.compare_runs(trials, a, b, **kw)
        except mk.StatsError as exc:  # two candidates of different datasets
            assert "no task" in str(exc) or "in common" in str(exc), exc
    ax = mk.plots.candidate_bars(trials, column=metric)
    assert len(ax.get_yticklabels()) == len(valued)
    mk.plots.task_heatmap(trials, value=metric)
    path = mk.report(trials, tmp_path / "report.html", value=metric)
    assert path.exists()
    assert table["n"].sum() <= len(trials)


@pytest.mark.parametrize("name", NAMES)
def test_the_tuner_runs_with_its_defaults(name):
    pytest.importorskip("ipywidgets")
    trials = _table(name)
    value = _value(trials)
    # with several reward keys the tuner asks which one is the accuracy
    tuner = mk.widgets.tune_spec(trials, **({} if value is None else {"accuracy": value}))
    assert set(tuner.ranking["candidate"]) <= set(trials["candidate"])


@pytest.mark.skipif(not REALDATA.is_dir(), reason="../shared/realdata not present (a user's "
                    "clone has no outside data)")
def test_real_data_names_the_right_candidates(tmp_path):
    tb = mk.load(REALDATA / "terminal_bench_1")
    assert tb["candidate"].nunique() == 3
    jobs = sorted((REALDATA / "harbor_jobs" / "thinharness-preflight").glob("*/job"))
    thin = mk.load(jobs)
    assert thin["candidate"].nunique() == 6
    for _, part in thin.groupby("candidate"):
        assert part["kwarg_harness"].nunique() == 1  # no candidate pools the two harnesses
    by_harness = mk.breakdown(thin, by="kwarg_harness")
    assert sorted(by_harness["kwarg_harness"]) == ["pi", "thinharness"]
    assert by_harness["n_tasks"].tolist() == [3, 3]
    otel = pd.read_json(REALDATA / "otel-bench" / "results.json")
    if "results" in otel.columns:  # an object holding the list
        otel = pd.json_normalize(otel["results"].tolist())
    t = mk.trials_from_frame(otel, task="TaskName", reward="Reward", model="ModelName")
    assert t["candidate"].nunique() == 14
    assert len(mk.breakdown(t)) == 14
    # and again from the saved trial table, through mk.load and the report's defaults
    t.to_csv(tmp_path / "otel.csv", index=False)
    again = mk.load(tmp_path / "otel.csv")
    assert sorted(again["candidate"].unique()) == sorted(t["candidate"].unique())
    page = mk.report(again, tmp_path / "otel.md").read_text()
    assert "1,014 trials · 14 candidates" in page
