"""read_harbor_job, job_metrics and summarize_job on Harbor-written and sample job folders."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from harbor_jobs_helpers import FIXTURES, fixture_trial, write_trial
from harbor_reference import aggregate_reward_dicts
from hypothesis import given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit.cli import main
from metrickit.compute.jobs import job_metrics
from metrickit.errors import HarborJobError
from metrickit.io.harbor import read_job_result

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "data" / "harbor_jobs"
JOB_025 = JOBS / "2025-06-02__10-00-00"
JOB_026 = JOBS / "2025-06-03__14-30-00"
JOB_BENCH = JOBS / "2025-07-14__09-00-00"  # 6 agent/model pairs x 40 tasks x 4 attempts


def stored_metrics(job: Path) -> dict[str, dict]:
    evals = read_job_result(job)["stats"]["evals"]
    return {key: (ev["metrics"][0] if ev["metrics"] else {}) for key, ev in evals.items()}


def job_from_fixtures(tmp_path: Path, names: list[str]) -> Path:
    job = tmp_path / "job"
    for name in names:
        obj = fixture_trial(name)
        folder = job / name.removesuffix(".json")
        folder.mkdir(parents=True)
        (folder / "result.json").write_text(json.dumps(obj, indent=4))
    return job


# --- Harbor-written files (not skipped) --------------------------------------------------


def test_harbor_written_job_025_metrics_reproduced_by_aggregate():
    trials = mk.read_harbor_job(FIXTURES / "job_0.25")
    assert mk.aggregate(trials, by="eval") == stored_metrics(FIXTURES / "job_0.25")
    assert mk.aggregate(trials, by="eval") == {
        "claude-code__claude-sonnet-4-5__my-dataset": {"mean": 0.3333333333333333}
    }


def test_harbor_written_job_026_metrics_need_the_026_policy():
    trials = mk.read_harbor_job(FIXTURES / "job_0.26")
    assert job_metrics(trials, policy="0.26") == stored_metrics(FIXTURES / "job_0.26")
    assert job_metrics(trials) == {
        "claude-code__claude-sonnet-4-5__my-dataset": {"mean": 0.3333333333333333}
    }


def test_harbor_written_trial_fields(tmp_path):
    job = job_from_fixtures(
        tmp_path,
        ["trial_0.25.json", "trial_0.25_exception.json", "trial_0.25_multistep.json",
         "trial_0.26_exception.json"],
    )
    t = mk.read_harbor_job(job).set_index("job", append=False)
    t = t.set_index(t["trial_dir"].map(lambda p: Path(p).name))
    single = t.loc["trial_0.25"]
    assert single["eval"] == "claude-code__claude-sonnet-4-5__my-dataset"
    assert (single["agent"], single["agent_version"]) == ("claude-code", "2.0.1")
    assert (single["model"], single["model_provider"], single["source"]) == (
        "claude-sonnet-4-5", "anthropic", "my-dataset")
    assert (single["task_name"], single["trial_name"]) == ("hello-world", "hello-world__AbCdEfG")
    assert single["reward"] == 1.0 and single["_kind_reward"] == "float"
    assert (single["n_input_tokens"], single["n_cache_tokens"], single["n_output_tokens"]) == (
        1000, 200, 300)
    assert single["cost_usd"] == 0.0123
    assert single["started_at"] == pd.Timestamp("2025-01-01T00:00:00.123456", tz="UTC")
    assert single["environment_setup_ms"] == 29_000.0
    assert single["agent_setup_ms"] == 30_000.0
    assert single["agent_execution_ms"] == 180_000.0
    assert single["verifier_ms"] == 60_000.0
    assert single["total_ms"] == pytest.approx(299_876.544)
    assert pd.isna(single["exception_type"]) and single["n_steps"] == 0
    # An exception AND a reward: both kept.
    exc = t.loc["trial_0.25_exception"]
    assert exc["exception_type"] == "AgentTimeoutError"
    assert exc["exception_message"].startswith("Agent execution timed out")
    assert exc["has_reward"] and exc["reward"] == 0.0 and exc["_status"] == "ok"
    assert exc["reward_valid"]  # AgentTimeoutError keeps the reward valid (0.26 policy)
    # Multi-step: Harbor's compute_token_cost_totals() is (30, None, 12, 0.01).
    multi = t.loc["trial_0.25_multistep"]
    assert (multi["n_input_tokens"], multi["n_output_tokens"], multi["cost_usd"]) == (30, 12, 0.01)
    assert pd.isna(multi["n_cache_tokens"])
    assert multi["reward"] == 0.5 and multi["n_steps"] == 2
    assert multi["agent_execution_ms"] == 60_000.0  # only step 1 has timings
    assert multi["verifier_ms"] == 30_000.0
    assert t.loc["trial_0.26_exception"]["reward_valid"]  # read from the serialized field
    assert str(t["started_at"].dtype) == "datetime64[us, UTC]"


# --- the sample jobs in data/ ------------------------------------------------------------


def test_sample_job_025_reproduces_stored_metrics():
    trials = mk.read_harbor_job(JOB_025)
    assert len(trials) == 24
    assert mk.aggregate(trials, by="eval") == stored_metrics(JOB_025) == {
        "terminus-2__claude-sonnet-4-5__terminal-bench-mini": {"mean": 0.5}
    }
    assert job_metrics(trials, policy="0.26") == {
        "terminus-2__claude-sonnet-4-5__terminal-bench-mini": {"mean": 12 / 23}
    }
    assert list(trials["attempt"].value_counts().sort_index()) == [6, 6, 6, 6]
    assert trials["started_at"].is_monotonic_increasing
    assert int(trials["exception_type"].notna().sum()) == 4
    assert int((trials["exception_type"].notna() & trials["has_reward"]).sum()) == 3
    stats = read_job_result(JOB_025)["stats"]
    assert int(trials["n_input_tokens"].sum()) == stats["n_input_tokens"]
    assert trials["cost_usd"].sum() == pytest.approx(stats["cost_usd"], rel=1e-12)


def test_sample_job_026_running_multistep_and_policies():
    trials = mk.read_harbor_job(JOB_026)
    assert len(trials) == 20
    assert job_metrics(trials, policy="0.26") == stored_metrics(JOB_026)
    running = trials[trials["_status"] == "running"]
    assert len(running) == 1
    row = running.iloc[0]
    # Described from its config.json and the finished trials of the same agent config.
    assert (row["task_name"], row["agent"], row["model"]) == ("paginate-api", "codex", "gpt-5")
    assert row["eval"] == "codex__gpt-5__webapp-tasks" and row["attempt"] == 2
    assert not row["has_reward"] and pd.isna(row["started_at"])
    # Running trials never count; under 0.25 the invalid and reward-less trials do.
    codex = trials[(trials["agent"] == "codex") & (trials["_status"] != "running")]
    zero_filled = aggregate_reward_dicts(
        [None if not r.has_reward else {"correctness": r.correctness, "style": r.style}
         for r in codex.itertuples()], "mean", lambda v: sum(v) / len(v))
    assert mk.aggregate(trials, by="eval")["codex__gpt-5__webapp-tasks"] == zero_filled
    assert job_metrics(trials)["codex__gpt-5__webapp-tasks"] == zero_filled
    multi = trials[trials["n_steps"] == 2]
    assert len(multi) == 4
    assert set(multi["step_exception_type"].dropna()) == {"VerifierTimeoutError"}
    assert not multi[multi["step_exception_type"].notna()]["reward_valid"].any()
    assert set(trials["_kind_correctness"].astype(str)) == {"int", "float", "missing"}


def test_a_job_reached_twice_is_refused_not_counted_twice(tmp_path):
    with pytest.raises(HarborJobError, match="reached twice, so each of its trials"):
        mk.read_harbor_job([JOB_025, JOB_025])
    # a folder of jobs and one of its own jobs: the job is reached twice
    with pytest.raises(HarborJobError, match=re.escape(f"reached twice (as {JOB_025} and ")):
        mk.read_harbor_job([JOBS, JOB_025.parent / ".." / JOBS.name / JOB_025.name])
    link = tmp_path / "same"
    link.symlink_to(JOB_025, target_is_directory=True)
    with pytest.raises(HarborJobError, match="trials would be counted twice"):
        mk.read_harbor_job([JOB_025, link])


def test_folder_of_jobs_and_list_of_jobs_agree():
    every = mk.read_harbor_job(JOBS)
    listed = mk.read_harbor_job([JOB_025, JOB_026, JOB_BENCH])
    # one row per trial folder (a folder with a config.json), running trials included
    folders = [t for job in (JOB_025, JOB_026, JOB_BENCH) for t in job.iterdir()
               if (t / "config.json").is_file()]
    assert len(every) == len(folders) == 24 + 20 + 6 * 40 * 4
    assert list(every["job"].unique()) == [JOB_025.name, JOB_026.name, JOB_BENCH.name]
    pd.testing.assert_frame_equal(every, listed)
    assert set(every.columns) >= {"reward", "correctness", "style", "_kind_style"}
    # a key that no trial of an evaluation has is missing (NA) there, never 0
    first = every[every["job"] == JOB_025.name]
    assert first["correctness"].isna().all()
    assert (first["_kind_correctness"] == "missing").all()
    # within an evaluation that has the key, a trial without it is Harbor's 0
    for _, trials in every.groupby("eval"):
        has = trials["_kind_correctness"] != "missing"
        if has.any():
            assert (trials.loc[~has, "correctness"] == 0).all()


def test_polars_backend_same_content():
    pd_frame = mk.read_harbor_job(JOBS)
    pl_frame = mk.read_harbor_job(JOBS, backend="polars")
    assert isinstance(pl_frame, pl.DataFrame)
    assert pl_frame.columns == list(pd_frame.columns)
    for col in ("eval", "task_name", "attempt", "reward", "style", "n_input_tokens", "cost_usd",
                "total_ms", "has_reward"):
        left = pl_frame[col].to_list()
        right = [None if pd.isna(v) else v for v in pd_frame[col].tolist()]
        assert left == right or np.allclose(
            np.array(left, dtype=float), np.array(right, dtype=float), equal_nan=True
        ), col
    assert pl_frame["started_at"].dtype == pl.Datetime("us", "UTC")
    assert mk.aggregate(pl_frame, by="eval") == mk.aggregate(pd_frame, by="eval")
    assert job_metrics(pl_frame, policy="0.26") == job_metrics(pd_frame, policy="0.26")


def test_generator_reproduces_committed_data(tmp_path):
    out = tmp_path / "jobs"
    subprocess.run(
        [sys.executable, str(ROOT / "data" / "make_harbor_jobs.py"), "-o", str(out)],
        check=True, capture_output=True,
    )
    made = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    committed = sorted(p.relative_to(JOBS) for p in JOBS.rglob("*") if p.is_file())
    assert made == committed
    for rel in made:
        assert (out / rel).read_bytes() == (JOBS / rel).read_bytes(), rel


def _harbor_python() -> list[str] | None:
    if importlib.util.find_spec("harbor") is not None:
        return [sys.executable]
    configured = os.environ.get("METRICKIT_HARBOR_PYTHON")
    return configured.split() if configured else None


@pytest.mark.skipif(
    _harbor_python() is None,
    reason="needs Harbor (Python >= 3.12): pip install harbor, or set METRICKIT_HARBOR_PYTHON "
    "to a Python that can import it",
)
def test_sample_jobs_match_harbor_models_field_by_field():
    proc = subprocess.run(
        [*_harbor_python(), str(ROOT / "tests" / "harbor_layout_check.py"), str(JOBS)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 problem(s)" in proc.stdout


# --- errors -----------------------------------------------------------------------------


def test_truncated_result_raises_naming_the_file(tmp_path):
    job = tmp_path / "job"
    write_trial(job, "a__1", task="a", rewards={"reward": 1.0})
    bad = write_trial(job, "a__2", task="a", rewards={"reward": 0.0}) / "result.json"
    bad.write_text(bad.read_text()[:500])
    pattern = r"a__2/result.json:\d+: is not valid JSON .*truncated"
    with pytest.raises(HarborJobError, match=pattern):
        mk.read_harbor_job(job)
    frame, problems = mk.read_harbor_job(job, errors="report")
    assert len(problems) == 1 and problems[0].source == str(bad)
    assert list(frame["_status"].astype(str)) == ["ok", "invalid"]
    assert frame.iloc[1]["trial_name"] == "a__2"
    with pytest.raises(mk.AggregationError, match="invalid row"):
        mk.aggregate(frame)
    with pytest.raises(HarborJobError, match="invalid row"):
        job_metrics(frame)
    assert mk.aggregate(frame[frame["_status"] != "invalid"]) == {"mean": 1.0}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda o: o["agent_result"].update(n_input_tokens="12"),
         r"field 'agent_result.n_input_tokens' is '12' \(str\); expected an integer or null"),
        (lambda o: o["verifier_result"]["rewards"].update(reward="high"),
         r"verifier_result.rewards: value of 'reward' is 'high' \(str\); expected a finite number"),
        (lambda o: o.pop("task_name"), r"field 'task_name' is missing"),
        (lambda o: o["agent_info"].update(version=2), r"field 'agent_info.version' is 2 \(int\)"),
        (lambda o: o.update(started_at="yesterday"), r"field 'started_at' is 'yesterday'"),
        (lambda o: o.update(step_results={"a": 1}), r"field 'step_results' is \{'a': 1\}"),
        (lambda o: o["verifier_result"].update(rewards=[1]), r"expected an object of named"),
    ],
)
def test_bad_fields_name_file_field_and_value(tmp_path, edit, message):
    folder = write_trial(tmp_path / "job", "a__1", task="a", rewards={"reward": 1.0})
    obj = json.loads((folder / "result.json").read_text())
    edit(obj)
    (folder / "result.json").write_text(json.dumps(obj))
    with pytest.raises(HarborJobError, match=message) as info:
        mk.read_harbor_job(tmp_path / "job")
    assert "a__1/result.json" in str(info.value)


def test_every_bad_file_is_reported(tmp_path):
    job = tmp_path / "job"
    for i in range(3):
        (write_trial(job, f"a__{i}", task="a", rewards=None) / "result.json").write_text("")
    with pytest.raises(HarborJobError, match="and 2 more bad trial file"):
        mk.read_harbor_job(job)
    _, problems = mk.read_harbor_job(job, errors="report")
    assert [Path(p.source).parent.name for p in problems] == ["a__0", "a__1", "a__2"]
    assert all("is empty" in p.message for p in problems)


def test_paths_that_are_not_jobs(tmp_path):
    with pytest.raises(HarborJobError, match="no such folder"):
        mk.read_harbor_job(tmp_path / "missing")
    (tmp_path / "f.jsonl").write_text("{}\n")
    with pytest.raises(HarborJobError, match=r"is a file.*read_rewards"):
        mk.read_harbor_job(tmp_path / "f.jsonl")
    with pytest.raises(HarborJobError, match="no Harbor job found"):
        mk.read_harbor_job(tmp_path)
    trial = write_trial(tmp_path / "job", "a__1", task="a", rewards=None)
    with pytest.raises(HarborJobError, match="single trial folder"):
        mk.read_harbor_job(trial)
    with pytest.raises(HarborJobError, match="empty list"):
        mk.read_harbor_job([])
    with pytest.raises(ValueError, match=r"policy='0\.27'"):
        job_metrics(mk.read_harbor_job(tmp_path / "job"), policy="0.27")


def test_reward_key_clashing_with_a_column(tmp_path):
    write_trial(tmp_path / "job", "a__1", task="a", rewards={"agent": 1.0, "reward": 0.0})
    with pytest.raises(HarborJobError, match=r"reward key 'agent' .* clashes"):
        mk.read_harbor_job(tmp_path / "job")


def test_older_layouts_load(tmp_path):
    job = tmp_path / "job"
    folder = write_trial(job, "a__1", task="a", rewards=None, model=None, source=None)
    obj = json.loads((folder / "result.json").read_text())
    obj["verifier_result"] = {"reward": 1.0, "data": None}  # early Harbor VerifierResult
    obj["started_at"] = "2025-01-01T00:00:00"  # naive: taken as UTC
    for key in ("environment_setup", "agent_setup", "step_results", "agent_result"):
        obj.pop(key)
    (folder / "result.json").write_text(json.dumps(obj))
    old_multi = write_trial(job, "b__1", task="b", rewards=None, model=None, source=None,
                            base="trial_0.25_multistep.json")
    obj = json.loads((old_multi / "result.json").read_text())
    obj.pop("verifier_result")  # no trial-level reward: Harbor's step mean is used
    (old_multi / "result.json").write_text(json.dumps(obj))
    t = mk.read_harbor_job(job)
    assert list(t["eval"]) == ["claude-code__adhoc", "claude-code__adhoc"]
    assert list(t["reward"]) == [1.0, 0.5]
    assert t.iloc[0]["started_at"] == pd.Timestamp("2025-01-01", tz="UTC")
    assert pd.isna(t.iloc[0]["n_input_tokens"]) and pd.isna(t.iloc[0]["environment_setup_ms"])


def test_many_trials_with_progress_bar(tmp_path, capsys):
    # 3,000 trials (Harbor-written result.json, ~4 KB each); speed is measured in
    # benchmarks/bench_jobs.py, not asserted here.
    job = tmp_path / "job"
    text = (FIXTURES / "trial_0.25.json").read_text()
    job.mkdir()
    for i in range(3000):
        folder = job / f"task-{i % 300}__{i:07d}"
        folder.mkdir()
        (folder / "result.json").write_text(
            text.replace("hello-world", f"task-{i % 300}").replace('"reward": 1.0',
                                                                   f'"reward": {i % 2}.0'))
    trials = mk.read_harbor_job(job)
    assert len(trials) == 3000
    assert mk.aggregate(trials) == {"mean": 0.5}
    assert list(trials["attempt"].value_counts()) == [300] * 10
    assert "reading trials" in capsys.readouterr().err  # tqdm writes to stderr


job_trial_st = st.tuples(
    st.sampled_from(["claude-code", "codex"]),
    st.sampled_from(["t1", "t2"]),
    st.sampled_from([None, {"reward": 1.0}, {"reward": 0}, {"a": 1, "b": 0.25}, {"b": 0.5}, {}]),
    st.sampled_from([None, "AgentTimeoutError", "ApiRateLimitError"]),
)


@settings(max_examples=25, deadline=None)
@given(st.lists(job_trial_st, min_size=1, max_size=10))
def test_job_metrics_match_harbor_rules_on_random_jobs(specs):
    """Both policies against harbor/metrics/base.py applied to the trials Harbor would pass."""
    with tempfile.TemporaryDirectory() as tmp:
        for i, (agent, task, rewards, exc) in enumerate(specs):
            write_trial(Path(tmp), f"{task}__{i:07d}", task=task, rewards=rewards, agent=agent,
                        exception=exc, started=f"2025-01-01T00:{i:02d}:00Z")
        trials = mk.read_harbor_job(tmp)
    assert len(trials) == len(specs)  # row count preserved
    mean = lambda v: sum(v) / len(v)  # noqa: E731
    for agent in dict.fromkeys(s[0] for s in specs):
        key = f"{agent}__claude-sonnet-4-5__my-dataset"
        mine = [s for s in specs if s[0] == agent]
        assert job_metrics(trials)[key] == aggregate_reward_dicts(
            [s[2] for s in mine], "mean", mean)
        valid = [s[2] for s in mine if s[2] and s[3] != "ApiRateLimitError"]
        expected = aggregate_reward_dicts(valid, "mean", mean) if valid else {}
        assert job_metrics(trials, policy="0.26")[key] == expected


# --- summary and CLI --------------------------------------------------------------------


def test_summarize_job_text_and_cli(capsys):
    text = mk.summarize_job(JOB_025)
    assert "terminus-2__claude-sonnet-4-5__terminal-bench-mini" in text
    assert "trials: 24 finished, 0 running; tasks: 6" in text
    assert "Harbor metrics (0.25): {'mean': 0.5}" in text
    assert "pass@2 0.6667, pass@4 0.8333" in text
    assert "errors: 4 (AgentTimeoutError 2, NonZeroAgentExitCodeError 1, " in text
    assert "reward: mean 0.5000 [" in text and "cluster-wilson" in text and "tasks=6" in text
    assert main(["summarize", str(JOB_026)]) == 0
    out = capsys.readouterr().out
    assert "codex__gpt-5__webapp-tasks" in out and "9 finished, 1 running" in out
    assert "pass@k: not computed" in out and "2 reward keys" in out
    assert "policy 0.26 (the job result.json has schema_version" in out
    assert "Harbor metrics (0.26): {'correctness': 0.6666666666666666, 'style': 0.5625}" in out
    # Over the trials policy 0.26 counts: the mean over tasks with its interval, and
    # Harbor's mean over trials beside it where the two differ (tasks lost attempts)
    assert "correctness: mean 0.6000 [" in out and "policy 0.26" in out
    assert "Harbor's mean over trials 0.6667" in out
    assert "pass@k: none" not in out
    assert "cost $" in out


def test_summarize_reports_errors_through_cli(tmp_path, capsys):
    (write_trial(tmp_path / "job", "a__1", task="a", rewards=None) / "result.json").write_text("{")
    assert main(["summarize", str(tmp_path / "job")]) == 1
    assert "a__1/result.json" in capsys.readouterr().err


def test_timestamps_are_timezone_aware_utc():
    trials = mk.read_harbor_job(JOB_025)
    row = trials.iloc[0]
    raw = json.loads((Path(row["trial_dir"]) / "result.json").read_text())
    assert raw["started_at"].endswith("Z")
    expected = datetime.fromisoformat(raw["started_at"].replace("Z", "+00:00"))
    first = row["started_at"].to_pydatetime()
    assert first == expected and first.utcoffset().total_seconds() == 0
    assert row["finished_at"] > row["started_at"]


def test_field_errors_name_the_line_of_the_field(tmp_path):
    # Harbor writes result.json indented, one key per line: a bad field's error names its
    # line when the key occurs once in the file, and line 0 (unknown) rather than a wrong
    # line when it is missing or occurs several times.
    job = tmp_path / "job"
    folder = write_trial(job, "a__1", task="a", rewards={"reward": 1.0})
    path = folder / "result.json"
    obj = json.loads(path.read_text())
    obj["agent_result"]["n_input_tokens"] = "many"
    path.write_text(json.dumps(obj, indent=4))
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if '"many"' in text)
    bad_reward = write_trial(job, "a__2", task="a", rewards={"reward": "x"}) / "result.json"
    reward_line = next(
        i for i, text in enumerate(bad_reward.read_text().splitlines(), 1) if '"x"' in text
    )
    _, problems = mk.read_harbor_job(job, errors="report")
    assert [(Path(p.source).parent.name, p.line) for p in problems] == [
        ("a__1", line),
        ("a__2", reward_line),
    ]
    # a key that occurs twice: no line rather than a guess
    obj["agent_result"]["n_input_tokens"] = 5
    obj["agent_result"]["cost_usd"] = "lots"
    obj["metadata_copy"] = {"cost_usd": 1}
    path.write_text(json.dumps(obj, indent=4))
    bad_reward.unlink()
    _, problems = mk.read_harbor_job(job, errors="report")
    assert [(p.line, "cost_usd" in p.message) for p in problems] == [(0, True)]


def test_field_lines_are_never_guessed():
    from metrickit.io.harbor_trials import _field_line, _key_line

    raw = b'{\n "step_results": [\n  {},\n  5\n ],\n "a": {"my\\"n_tokens": 1},\n "x": 2\n}'
    assert _field_line(raw, "field 'step_results[1]' is 5; expected an object") == 0
    assert _key_line(raw, "n_tokens") == 0  # only inside another key's string
    assert _key_line(raw, "x") == 7
    utf8 = '{\n "ключ": 1,\n "b": 2\n}'.encode()
    assert _key_line(utf8, "ключ") == 2
    both = '{\n "é": 1,\n "c": {"\\u00e9": 2}\n}'.encode()
    assert _key_line(both, "é") == 0  # two spellings, two places: unknown


# --- a job in progress (issue 13, defect 2) ---------------------------------------------


def _job_with_unconfigured_trial(tmp_path: Path) -> Path:
    """The sample job plus a trial folder Harbor has created but not configured yet."""
    import shutil

    job = tmp_path / JOB_025.name
    shutil.copytree(JOB_025, job)
    for part in ("agent", "verifier", "artifacts"):
        (job / "new-task__Zz9Yy8X" / part).mkdir(parents=True)
    return job


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_running_trial_without_config_never_counts_nor_crashes(tmp_path, backend):
    job = _job_with_unconfigured_trial(tmp_path)
    trials = mk.read_harbor_job(job, backend=backend)
    assert len(trials) == 25
    key = "terminus-2__claude-sonnet-4-5__terminal-bench-mini"
    # it was KeyError: nan (both policies, both backends)
    assert job_metrics(trials) == {key: {"mean": 0.5}} == stored_metrics(JOB_025)
    assert job_metrics(trials, policy="0.26") == {key: {"mean": 0.5217391304347826}}
    assert job_metrics(trials, metric="max") == {key: {"max": 1}}
    assert mk.pass_at_k(trials).harbor == mk.pass_at_k(mk.read_harbor_job(JOB_025)).harbor
    assert mk.aggregate(trials, by="eval") == stored_metrics(JOB_025)
    table = mk.breakdown(trials, by=["eval"])  # was a polars TypeError on the null eval
    assert list(table["eval"]) == [key] and list(table["n"]) == [24]


def test_summarize_job_in_progress(tmp_path, capsys):
    job = _job_with_unconfigured_trial(tmp_path)
    assert main(["summarize", str(job)]) == 0  # was exit 1 with a KeyError traceback
    out = capsys.readouterr().out
    assert "1 running trial(s) without config.json yet" in out
    assert "trials: 24 finished, 0 running; tasks: 6" in out
    assert "Harbor metrics (0.25): {'mean': 0.5}" in out
