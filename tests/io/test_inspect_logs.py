"""read_inspect_log on logs written by a real, offline Inspect AI run (tests/io/inspect_fixture.py),
checked column by column against the same logs read with Inspect's own API."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import metrickit as mk
from metrickit.errors import TrialSourceError
from metrickit.io.inspect_logs import read_inspect_log

sys.path.insert(0, str(Path(__file__).parent))
from trial_schema_check import assert_trial_schema

# slow: the session fixture runs an Inspect eval (~3-5 s); inspect_ai is imported by the
# tests that use it, not at collection (3.5 s in every xdist worker)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                       reason="needs inspect-ai: pip install 'metrickit[inspect]'")]


@pytest.fixture(scope="session")
def logs(inspect_fixture_logs: Path) -> dict[str, Path]:
    """The logs of one real Inspect run (the session's ``inspect_fixture_logs``: made once,
    read-only; a test that changes a log copies it first)."""
    return {name: inspect_fixture_logs / name for name in ("eval", "json", "partial")}


def _expected_rows(folder: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """What each row must hold, from Inspect's full log read (not the summaries)."""
    from inspect_ai.log import list_eval_logs, read_eval_log
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    for info in list_eval_logs(str(folder)):
        log = read_eval_log(info)
        model = log.eval.model.split("/", 1)[1]
        for s in log.samples or []:
            rewards: dict[str, float] = {}
            for name, score in (s.scores or {}).items():
                if isinstance(score.value, dict):
                    for key, v in score.value.items():
                        rewards[f"{name}.{key}"] = to_float(v)
                else:
                    rewards[name] = to_float(score.value)
            usage = list(s.model_usage.values())
            out[(model, str(s.id), s.epoch)] = {
                "rewards": rewards,
                "error": s.error.message if s.error else None,
                "limit": s.limit,
                "uuid": s.uuid,
                "total_ms": s.total_time * 1000,
                "working_ms": s.working_time * 1000,
                "n_input_tokens": sum(u.input_tokens for u in usage) if usage else None,
                "n_output_tokens": sum(u.output_tokens for u in usage) if usage else None,
                "cost_usd": sum(u.total_cost or 0 for u in usage) if usage else None,
                "started_at": s.started_at,
                "completed_at": s.completed_at,
                "task": log.eval.task,
                "run_id": log.eval.run_id,
                "agent": log.eval.solver or "+".join(st.solver for st in log.plan.steps),
            }
    return out


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_every_column_matches_inspects_own_read(logs: dict[str, Path], fmt: str) -> None:
    import pandas as pd

    trials = read_inspect_log(logs[fmt])
    expected = _expected_rows(logs[fmt])
    assert len(trials) == len(expected) == 2 * 4 * 3
    assert set(trials["model"]) == {"model", "other"}
    assert set(trials["model_provider"]) == {"mockllm"}
    reward_keys = ["exact", "graded.correct", "graded.f1"]
    assert mk.reward_keys(trials) == reward_keys
    for row in trials.to_dict("records"):
        want = expected[(row["model"], row["task_name"], row["attempt"])]
        assert row["source"] == want["task"] == "tiny"
        assert row["agent"] == want["agent"] == "maybe_fail"
        assert row["eval"] == f"maybe_fail__{row['model']}__tiny"
        assert row["job"] == want["run_id"]
        assert row["trial_name"] == want["uuid"]
        assert row["trial_dir"].endswith("." + fmt)
        assert row["total_ms"] == pytest.approx(want["total_ms"])
        assert row["agent_execution_ms"] == pytest.approx(want["working_ms"])
        for column in ("n_input_tokens", "n_output_tokens", "cost_usd"):
            if want[column] is None:  # a sample that failed before calling the model
                assert pd.isna(row[column]), column
            else:
                assert row[column] == pytest.approx(want[column]), column
        assert pd.isna(row["n_cache_tokens"])
        assert row["started_at"] == pd.Timestamp(want["started_at"])
        assert row["finished_at"] == pd.Timestamp(want["completed_at"])
        for column in ("agent_version", "step_exception_type", "verifier_ms"):
            assert pd.isna(row[column]), column
        assert row["n_steps"] == 0  # as Harbor's single-step trials
        if want["error"]:
            assert (row["task_name"], row["attempt"]) == ("s3", 2)
            assert row["_status"] == "null" and not row["has_reward"] and not row["reward_valid"]
            assert row["exception_type"] == "RuntimeError"
            assert row["exception_message"] == want["error"]
            assert want["rewards"] == {}
            assert all(row[k] == 0 and row["_kind_" + k] == "missing" for k in reward_keys)
            continue
        assert row["_status"] == "ok" and row["has_reward"] and row["reward_valid"]
        assert {k: row[k] for k in reward_keys} == pytest.approx(want["rewards"])
        assert row["_kind_exact"] == "bool"
        assert row["_kind_graded.correct"] == "float"  # C/P/I converted by value_to_float
        if want["limit"]:
            assert row["task_name"] == "s4"
            assert row["exception_type"] == "token_limit"
            assert row["exception_message"].startswith("Token limit exceeded")
        else:
            assert pd.isna(row["exception_type"]) and pd.isna(row["exception_message"])


# inspect_ai.analysis calls drop_duplicates(inplace=True), which pandas 3.1 deprecates
@pytest.mark.filterwarnings(
    "ignore:The inplace keyword in DataFrame.drop_duplicates:pandas.errors.Pandas4Warning"
)
def test_per_model_means_equal_samples_df(logs: dict[str, Path]) -> None:
    from inspect_ai.analysis import EvalModel, SampleSummary, samples_df
    from inspect_ai.scorer import value_to_float

    df = samples_df(str(logs["eval"]), columns=SampleSummary + EvalModel)
    to_float = value_to_float()
    ok = df[df["error"].fillna("") == ""]
    trials = read_inspect_log(logs["eval"])
    scored = trials[trials["_status"] == "ok"]
    for model, group in ok.groupby("model"):
        mine = scored[scored["model"] == model.split("/", 1)[1]]
        assert len(mine) == len(group) == 11
        assert mine["exact"].mean() == pytest.approx(group["score_exact"].astype(float).mean())
        graded = group["score_graded"].map(json.loads)  # samples_df keeps dicts as JSON text
        correct = graded.map(lambda d: to_float(d["correct"])).mean()
        f1 = graded.map(lambda d: to_float(d["f1"])).mean()
        assert mine["graded.correct"].mean() == pytest.approx(correct)
        assert mine["graded.f1"].mean() == pytest.approx(f1)


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_schema_matches_read_harbor_job(logs: dict[str, Path], backend: str) -> None:
    trials = read_inspect_log(logs["eval"], backend=backend)
    assert_trial_schema(trials, backend)


def test_pandas_and_polars_hold_the_same_values(logs: dict[str, Path]) -> None:
    a = read_inspect_log(logs["json"])
    b = read_inspect_log(logs["json"], backend="polars").to_pandas()
    assert list(a.columns) == list(b.columns)
    for column in a.columns:
        left, right = a[column].astype(object).tolist(), b[column].astype(object).tolist()
        for x, y in zip(left, right, strict=True):
            assert (_na(x) and _na(y)) or x == y, (column, x, y)


def _na(x: Any) -> bool:
    import pandas as pd

    return x is None or (isinstance(x, float) and math.isnan(x)) or x is pd.NA or x is pd.NaT


def test_eval_and_json_formats_read_alike(logs: dict[str, Path]) -> None:
    a = read_inspect_log(logs["eval"]).drop(columns=["trial_dir"])
    b = read_inspect_log(logs["json"]).drop(columns=["trial_dir"])
    key = ["model", "task_name", "attempt"]
    a = a.sort_values(key, ignore_index=True)
    b = b.sort_values(key, ignore_index=True)
    assert a.equals(b)


def test_running_and_errored_logs(logs: dict[str, Path]) -> None:
    from metrickit.errors import MetrickitWarning

    # error: epochs 1-2 ran, epoch 3 never did: no rows for it (a row would count as 0
    # under Harbor 0.25's policy), a warning with the count and the eval's error
    with pytest.warns(MetrickitWarning, match=r"Failed.*ended 'error' before running 4 of "
                      r"the 12 .*planned.*out of credit") as caught:
        trials = read_inspect_log(logs["partial"])
    assert len(caught) == 1
    running = trials[trials["trial_dir"].str.endswith(".eval")]
    failed = trials[trials["trial_dir"].str.endswith(".json")]
    # started: epoch 1 was written, epochs 2-3 of the 4 samples are still to come
    assert (running["attempt"] == 1).sum() == 4
    assert (running["_status"] == "running").sum() == 8
    assert set(running.loc[running["_status"] == "running", "attempt"]) == {2, 3}
    assert not running.loc[running["_status"] == "running", "has_reward"].any()
    assert len(failed) == 8 and set(failed["attempt"]) == {1, 2}
    assert not failed["exception_type"].isin(["eval_error", "eval_cancelled"]).any()
    # the two logs are copies of one eval (one eval_id): two runs, one per file
    assert running["run"].nunique() == failed["run"].nunique() == 1
    assert running["run"].iloc[0] != failed["run"].iloc[0]


def test_downstream_analysis_on_an_inspect_table(logs: dict[str, Path]) -> None:
    trials = read_inspect_log(logs["eval"])
    # Harbor's own pass@k needs a single reward key; value= picks one for the table, so
    # Harbor's rule only shows in `skipped`, without a warning
    passk = mk.pass_at_k(trials, k=[1, 2, 3], value="exact")
    assert all("3 reward keys" in reason for reason in passk.skipped.values())
    assert len(passk.table) > 0
    comparison = mk.compare_runs(trials, "model", "other", by="model", value="graded.f1")
    per_task = trials.groupby(["model", "task_name"])["graded.f1"].mean().unstack(0)
    assert comparison.difference.estimate == pytest.approx(
        (per_task["model"] - per_task["other"]).mean()
    )
    table = mk.breakdown(trials, by="model", value="graded.correct")
    assert len(table) == 2


def test_a_score_inspect_cannot_convert_is_refused(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

    info = list_eval_logs(str(logs["eval"]))[0]
    log = read_eval_log(info)
    assert log.samples is not None and log.samples[0].scores is not None
    log.samples[0].scores["exact"].value = "maybe"
    out = tmp_path / Path(info.name).name
    write_eval_log(log, str(out))
    with pytest.raises(TrialSourceError, match=r"sample 's1' epoch 1: score 'exact'.*'maybe'"):
        read_inspect_log(out)


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(TrialSourceError, match="no such file"):
        read_inspect_log(tmp_path / "nope.eval")
    with pytest.raises(TrialSourceError, match="no Inspect log"):
        read_inspect_log(tmp_path)
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(TrialSourceError, match="not an Inspect log"):
        read_inspect_log(tmp_path / "x.txt")


def test_metrickit_summarize_reads_an_inspect_log(logs: dict[str, Path]) -> None:
    log = next(logs["eval"].glob("*.eval"))
    trials = read_inspect_log(log)
    out = subprocess.run([sys.executable, "-m", "metrickit.cli", "summarize", str(log)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Inspect AI log {log}: {len(trials)} trial(s)")
    for label in trials["candidate"].unique():
        assert f"\n{label}\n" in out.stdout


def _variants(logs: dict[str, Path], folder: Path, changes: dict[str, Any]) -> None:
    """Copies of the ``mockllm/model`` log, each a run of its own (a new ``eval_id``), with
    its header changed as ``changes`` says (name -> function of the log's ``eval`` spec)."""
    from inspect_ai.log import list_eval_logs, read_eval_log, write_eval_log

    (info,) = [i for i in list_eval_logs(str(logs["eval"]))
               if read_eval_log(i, header_only=True).eval.model == "mockllm/model"]
    folder.mkdir()
    for name, change in changes.items():
        log = read_eval_log(info)
        log.eval.eval_id = f"run-{name}"
        change(log.eval)
        write_eval_log(log, str(folder / f"2025-01-01T00-00-00+00-00_tiny_{name}.eval"))


def test_a_recorded_setting_that_changes_answers_keeps_runs_apart(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    # a temperature sweep, a model argument and a task argument are other candidates; a
    # retry or connection setting (how the model is called) is not
    def temperature(value: float) -> Any:
        return lambda spec: setattr(spec.model_generate_config, "temperature", value)

    def connections(spec: Any) -> None:
        spec.model_generate_config.max_connections = 3

    def grader(spec: Any) -> None:
        from inspect_ai.model import GenerateConfig
        from inspect_ai.model._model_config import ModelConfig

        spec.model_roles = {"grader": ModelConfig(
            model="mockllm/judge", config=GenerateConfig(temperature=0.0, max_retries=2))}

    _variants(logs, tmp_path / "logs", {
        "plain": lambda spec: None,
        "connections": connections,
        "cold": temperature(0.0),
        "cold2": temperature(0.0),
        "warm": temperature(0.7),
        "device": lambda spec: spec.model_args.update(device="cpu"),
        "hard": lambda spec: spec.task_args.update(difficulty="hard", n=3),
        "judged": grader,
    })
    trials = read_inspect_log(tmp_path / "logs")
    runs = trials.groupby("run", observed=True)["candidate"].first()
    assert runs["run-plain"] == runs["run-connections"]
    assert runs["run-cold"] == runs["run-cold2"]
    assert len({runs[r] for r in ("run-plain", "run-cold", "run-warm", "run-device",
                                  "run-hard", "run-judged")}) == 6
    assert "generate.temperature=0.7" in runs["run-warm"]
    settings = trials.drop_duplicates("run").set_index("run")
    kwargs = {run: json.loads(text) for run, text in settings["agent_kwargs"].items()}
    # the fixture's mockllm got a callable, which the log records as null
    base = {"model_args.custom_outputs": None}
    assert kwargs["run-plain"] == kwargs["run-connections"] == base
    assert kwargs["run-warm"] == base | {"generate.temperature": 0.7}
    assert kwargs["run-device"] == base | {"model_args.device": "cpu"}
    assert kwargs["run-judged"] == base | {"model_roles.grader.model": "mockllm/judge",
                                           "model_roles.grader.generate.temperature": 0.0}
    assert settings.loc["run-warm", "kwarg_generate.temperature"] == "0.7"
    assert pd_isna(settings.loc["run-plain", "kwarg_generate.temperature"])
    # a task run with other arguments is other tasks: nothing pairs with the plain task
    assert settings.loc["run-hard", "source"] == "tiny[difficulty=hard, n=3]"
    assert settings.loc["run-hard", "dataset"] == "tiny[difficulty=hard, n=3]"
    warm = mk.compare_runs(trials, "run-plain", "run-warm", by="run", value="exact")
    assert warm.n_tasks == 4
    with pytest.raises(ValueError, match="task"):
        mk.compare_runs(trials, "run-plain", "run-hard", by="run", value="exact")


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))
