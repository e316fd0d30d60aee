"""trials_from_frame (any tidy table) and concat_trials (tables of several sources as one)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest

import metrickit as mk
from metrickit.errors import TrialSourceError
from metrickit.io.terminal_bench import read_terminal_bench
from metrickit.io.tidy import concat_trials, trials_from_frame

sys.path.insert(0, str(Path(__file__).parent))
from tb1_fixture import write_run
from trial_schema_check import assert_trial_schema


def _table() -> pd.DataFrame:
    """A promptfoo-style export: two prompts x three test cases x two repeats."""
    rows = []
    for run in ("prompt-a", "prompt-b"):
        for case in ("t1", "t2", "t3"):
            for seed in (1, 2):
                rows.append({
                    "id": case, "variant": run, "seed": seed, "llm": "gpt-x",
                    "pass": (case != "t3") if run == "prompt-a" else (seed == 1),
                    "score": 0.25 * seed + (0.5 if run == "prompt-b" else 0.0),
                    "ms": 100.0 * seed, "usd": 0.001 * seed, "tok_in": 10 * seed,
                    "err": "timeout" if (run, case, seed) == ("prompt-b", "t3", 2) else None,
                })
    return pd.DataFrame(rows)


def _map(df: object) -> object:
    return trials_from_frame(
        df, task="id", candidate="variant", attempt="seed", model="llm",
        reward=["pass", "score"], latency_ms="ms", cost_usd="usd", input_tokens="tok_in",
        error="err",
    )


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_mapping_and_schema(backend: str) -> None:
    df = _table()
    native = pl.from_pandas(df) if backend == "polars" else df
    trials = _map(native)
    assert type(trials).__module__.split(".")[0] == backend
    assert_trial_schema(trials, backend)
    t = trials.to_pandas() if backend == "polars" else trials
    assert len(t) == len(df)
    assert t["eval"].tolist() == df["variant"].tolist()
    assert t["task_name"].tolist() == df["id"].tolist()
    assert t["attempt"].tolist() == df["seed"].tolist()
    assert t["model"].tolist() == df["llm"].tolist()
    assert t["pass"].tolist() == df["pass"].astype(float).tolist()
    assert set(t["_kind_pass"]) == {"bool"} and set(t["_kind_score"]) == {"float"}
    assert t["score"].tolist() == df["score"].tolist()
    assert t["total_ms"].tolist() == df["ms"].tolist()
    assert t["cost_usd"].tolist() == df["usd"].tolist()
    assert t["n_input_tokens"].tolist() == df["tok_in"].tolist()
    failed = t[t["exception_type"] == "error"]
    assert failed["exception_message"].tolist() == ["timeout"]
    assert not failed["reward_valid"].any() and failed["has_reward"].all()
    assert t["reward_valid"].sum() == len(t) - 1


def test_downstream_on_a_tidy_table() -> None:
    trials = _map(_table())
    comparison = mk.compare_runs(trials, "prompt-a", "prompt-b", by="eval", value="score")
    assert comparison.difference.estimate == pytest.approx(-0.5)
    passk = mk.pass_at_k(trials, k=2, value="pass")  # Harbor's rule fails, value= does not
    assert passk.skipped and len(passk.table) > 0


def test_attempts_are_numbered_without_an_attempt_column() -> None:
    df = pd.DataFrame({"id": ["a", "a", "b", "a"], "ok": [1, 0, 1, 1]})
    t = trials_from_frame(df, task="id", reward="ok")
    assert t["attempt"].tolist() == [1, 2, 1, 3]
    assert set(t["eval"]) == {"adhoc"}


def test_missing_rewards_follow_harbors_fill() -> None:
    df = pd.DataFrame({"id": ["a", "b", "c"], "x": [1.0, np.nan, np.nan],
                       "y": [0.5, 0.25, None]})
    t = trials_from_frame(df, task="id", reward=["x", "y"])
    assert t["_status"].tolist() == ["ok", "ok", "null"]
    assert t["x"].tolist() == [1.0, 0.0, 0.0]  # 0-filled within the evaluation
    assert t["_kind_x"].tolist() == ["float", "missing", "missing"]
    assert t["has_reward"].tolist() == [True, True, False]


@pytest.mark.parametrize(
    ("kwargs", "df", "message"),
    [
        ({"task": "nope", "reward": "ok"}, {"id": ["a"], "ok": [1]},
         r"no column for task='nope'; the table has columns \['id', 'ok'\]"),
        ({"task": "id", "reward": ["ok", "f1"]}, {"id": ["a"], "ok": [1]},
         r"no column for reward='f1'"),
        ({"task": "id", "reward": "ok"}, {"id": ["a", "b"], "ok": [1, "yes"]},
         r"reward column 'ok', row 1: 'yes' \(str\) is not a reward; expected a finite number"),
        ({"task": "id", "reward": "ok"}, {"id": ["a", "b"], "ok": [1.0, float("inf")]},
         r"reward column 'ok', row 1: inf"),
        ({"task": "id", "reward": "ok", "attempt": "n"},
         {"id": ["a", "a"], "ok": [1, 0], "n": [1, 1]},
         r"rows 0 and 1 are the same trial \(run 'table', candidate 'adhoc', task 'a', "
         r"attempt 1\)"),
        ({"task": "id", "reward": "ok", "attempt": "n"}, {"id": ["a"], "ok": [1], "n": [0]},
         r"attempt column 'n', row 0: 0 \(int\); expected an integer >= 1"),
        ({"task": "id", "reward": "ok"}, {"id": ["a", None], "ok": [1, 1]},
         r"row 1: task column 'id' is null"),
        ({"task": "id", "reward": "ok", "input_tokens": "t"},
         {"id": ["a"], "ok": [1], "t": [1.5]}, r"column 't', row 0: 1.5"),
    ],
)
def test_errors_name_column_row_and_value(kwargs: dict, df: dict, message: str) -> None:
    with pytest.raises(TrialSourceError, match=message):
        trials_from_frame(pd.DataFrame(df), **kwargs)


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_concat_harbor_terminal_bench_and_tidy(tmp_path: Path, backend: str) -> None:
    harbor = mk.read_harbor_job(mk.examples.path("harbor_jobs"), backend=backend)
    run, _ = write_run(tmp_path)
    tb = read_terminal_bench(run, backend=backend)
    tidy = _map(pl.from_pandas(_table()) if backend == "polars" else _table())
    t = concat_trials([harbor, tb, tidy])
    assert_trial_schema(t, backend)
    t = t.to_pandas() if backend == "polars" else t
    assert len(t) == len(harbor) + len(tb) + len(tidy)
    assert mk.reward_keys(t) == ["correctness", "pass", "reward", "score", "style"]
    harbor_p = harbor.to_pandas() if backend == "polars" else harbor
    rows = len(harbor_p)
    # Harbor's own rows are unchanged, its reward columns included
    for key in ("reward", "correctness", "style"):
        np.testing.assert_array_equal(t[key].iloc[:rows].to_numpy(), harbor_p[key].to_numpy())
    # a key no trial of a source's evaluations has is NA there, never 0
    assert t["pass"].iloc[:rows].isna().all()
    assert set(t["_kind_pass"].iloc[:rows]) == {"missing"}
    tb_rows = t.iloc[rows : rows + len(tb)]
    assert tb_rows[["correctness", "style", "pass", "score"]].isna().all().all()
    assert tb_rows["reward"].notna().all()


def test_concat_task_map_and_errors() -> None:
    a = trials_from_frame(pd.DataFrame({"id": ["s1"], "ok": [1], "m": ["x"]}),
                          task="id", reward="ok", model="m")
    b = trials_from_frame(pd.DataFrame({"id": ["hello-world"], "ok": [0], "m": ["y"]}),
                          task="id", reward="ok", model="m")
    t = concat_trials([a, b], task_map={"s1": "hello-world"})
    assert t["task_name"].tolist() == ["hello-world", "hello-world"]
    with pytest.raises(TrialSourceError, match="rows 0 and 1 are the same trial"):
        concat_trials([a, a])
    with pytest.raises(TrialSourceError, match="pandas and polars"):
        concat_trials([a, pl.from_pandas(b)])
    with pytest.raises(TrialSourceError, match="not a trial table"):
        concat_trials([a, pd.DataFrame({"x": [1]})])
    with pytest.raises(TrialSourceError, match="no tables"):
        concat_trials([])


@pytest.mark.parametrize("column", ["model", "task", "run"])
def test_a_lone_surrogate_is_refused_at_its_first_row(column):
    # Each distinct text is looked at once; the message still names the first row holding
    # it, whichever column it is in.
    df = pd.DataFrame({"task": [f"t{i % 7}" for i in range(60)],
                       "model": ["m1", "m2"] * 30, "run": ["r"] * 60,
                       "ok": [1, 0, 1] * 20})
    df[column] = df[column].astype(object)
    df.loc[[41, 53], column] = "bad \ud800 text"
    with pytest.raises(TrialSourceError,
                       match=rf"column '{column}', row 41: 'bad \\ud800 text' holds a lone"):
        mk.trials_from_frame(df, task="task", reward="ok", model="model", run="run")
