"""A reward key that no trial of an evaluation has is missing (NA) there, never 0.

Harbor zero-fills a key that some trials of an evaluation lack; it never aggregates a key
over an evaluation in which no trial has it. Every analysis says "missing" for such cells
instead of drawing or averaging a 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

import metrickit as mk

TASKS = [f"t{i}" for i in range(8)]


def _table(backend: str = "pandas"):
    """Candidates a and b have a ``correct`` key; c's evaluation never reports one."""
    rng = np.random.default_rng(7)
    rows = []
    for run in ("a", "b", "c"):
        for task in TASKS:
            for attempt in (1, 2):
                rows.append({
                    "id": task, "run": run, "seed": attempt,
                    "correct": None if run == "c" else int(rng.integers(0, 2)),
                    "reward": int(rng.integers(0, 2)),
                })
    df = pd.DataFrame(rows)
    df["correct"] = df["correct"].astype("Int64")
    if backend == "polars":
        df = pl.from_pandas(df)
    return df, mk.trials_from_frame(df, task="id", candidate="run", attempt="seed",
                                    reward=["correct", "reward"])


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_the_trial_table_holds_na_not_zero(backend):
    _, t = _table(backend)
    frame = t.to_pandas() if backend == "polars" else t
    c = frame[frame["eval"] == "c"]
    assert c["correct"].isna().all() and (c["_kind_correct"] == "missing").all()
    assert frame.loc[frame["eval"] != "c", "correct"].notna().all()
    if backend == "polars":  # polars' own missing value, not a NaN
        assert t.filter(pl.col("eval") == "c")["correct"].null_count() == len(c)


def test_aggregate_by_evaluation_sees_only_the_evaluations_keys():
    df, t = _table()
    out = mk.aggregate(t, by="eval")
    assert set(out["c"]) == {"mean"}  # one key, reward: Harbor names it after the metric
    assert out["a"]["correct"] == pytest.approx(df.loc[df["run"] == "a", "correct"].mean())


def test_breakdown_says_missing():
    df, t = _table()
    table = mk.breakdown(t, by="eval", value="correct").set_index("eval")
    assert np.isnan(table.loc["c", "mean"]) and np.isnan(table.loc["c", "ci_low"])
    assert "missing (NA)" in table.loc["c", "note"]
    assert table.loc["a", "mean"] == pytest.approx(df.loc[df["run"] == "a", "correct"].mean())


def test_pass_at_k_leaves_the_evaluation_out_and_says_why():
    _, t = _table()
    result = mk.pass_at_k(t, k=2, value="correct", by="eval")
    assert set(result.table["eval"]) == {"a", "b"}
    assert any("'c'" in note and "missing (NA)" in note for note in result.notes)


def test_compare_runs_refuses_a_run_without_the_key_and_drops_na_trials():
    _, t = _table()
    with pytest.raises(mk.StatsError, match=r"missing \(NA\) for every trial of 'c'"):
        mk.compare_runs(t, "a", "c", by="eval", value="correct")
    both = mk.compare_runs(t, "a", "b", by="eval", value="correct")
    assert both.n_tasks == len(TASKS)
    # a third run's NA trials never enter a comparison of the other two
    mixed = t.assign(group=np.where(t["eval"] == "b", "b", "a+c"))
    result = mk.compare_runs(mixed, "a+c", "b", by="group", value="correct")
    assert any("16 trial(s) left out" in note for note in result.notes)
    assert result.difference.estimate == pytest.approx(both.difference.estimate)


def test_compare_metrics_has_no_row_for_a_key_an_evaluation_lacks():
    _, t = _table()
    table = mk.compare_metrics(t, ["mean"], by="eval").table
    assert set(table.loc[table["group"] == "c", "metric"]) == {"mean"}
    assert set(table.loc[table["group"] == "a", "metric"]) == {"mean[correct]", "mean[reward]"}


def test_task_heatmap_leaves_missing_cells_blank():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _, t = _table()
    ax = mk.plots.task_heatmap(t, by="eval", value="correct")
    cells = ax.images[0].get_array()
    columns = [label.get_text() for label in ax.get_xticklabels()]
    masked = np.ma.getmaskarray(cells)
    assert masked[:, columns.index("c")].all()  # drawn as "not measured", not as 0
    assert not masked[:, columns.index("a")].any()
    plt.close(ax.figure)


def test_the_tuner_leaves_unscored_cases_out_and_says_so():
    pytest.importorskip("ipywidgets")
    _, t = _table()
    cases = t.assign(candidate=t["eval"], accuracy=t["correct"], latency_ms=100.0,
                     cost_usd=0.01)
    tuner = mk.widgets.tune_spec(cases, by="candidate", accuracy="accuracy")
    assert set(tuner.ranking["candidate"]) == {"a", "b"}
    assert "no 'accuracy' at all for c" in tuner.message.value.replace("&#x27;", "'")
    with pytest.raises(mk.MetrickitError, match=r"missing \(NA\) in every row"):
        mk.widgets.tune_spec(cases[cases["eval"] == "c"], by="candidate", accuracy="accuracy")
