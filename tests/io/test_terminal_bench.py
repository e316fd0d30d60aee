"""read_terminal_bench on a Terminal-Bench 1 run folder with the harness's real field names
and layout (tests/io/tb1_fixture.py says where each comes from)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

import metrickit as mk
from metrickit.errors import TrialSourceError
from metrickit.io.terminal_bench import read_terminal_bench

sys.path.insert(0, str(Path(__file__).parent))
from tb1_fixture import RUN_ID, write_run
from trial_schema_check import assert_trial_schema


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path)[0]


def test_every_trial_and_column(run: Path) -> None:
    trials = read_terminal_bench(run)
    listed = json.loads((run / "results.json").read_text())["results"]
    written = {t["trial_name"]: t for t in listed}
    assert len(trials) == len(written) + 1  # + the trial still running
    assert set(trials["job"]) == {RUN_ID}
    assert set(trials["agent"]) == {"terminus"}
    assert set(trials["model"]) == {"claude-sonnet-4-20250514"}
    assert set(trials["model_provider"]) == {"anthropic"}
    assert set(trials["source"]) == {"terminal-bench-core"}
    assert set(trials["eval"]) == {"terminus__claude-sonnet-4-20250514__terminal-bench-core"}
    assert mk.reward_keys(trials) == ["reward"]
    for row in trials.to_dict("records"):
        assert row["trial_dir"] == str(run / row["task_name"] / row["trial_name"])
        assert row["n_steps"] == 0
        if row["_status"] == "running":
            assert row["task_name"] == "crack-7z-hash" and row["attempt"] == 1
            assert not row["has_reward"] and not row["reward_valid"]
            continue
        t = written[row["trial_name"]]
        assert row["task_name"] == t["task_id"]
        assert row["attempt"] == int(t["trial_name"].split(".")[1].split("-of-")[0])
        failure = t["failure_mode"]
        assert (pd.isna(row["exception_type"]) if failure in ("none", "unset")
                else row["exception_type"] == failure)
        assert pd.isna(row["exception_message"])
        if t["is_resolved"] is None:
            assert row["_status"] == "null" and not row["has_reward"] and not row["reward_valid"]
            assert row["reward"] == 0.0 and row["_kind_reward"] == "missing"
        else:
            assert row["_status"] == "ok" and row["has_reward"] and row["reward_valid"]
            assert row["reward"] == float(t["is_resolved"]) and row["_kind_reward"] == "bool"
        for column, field in (("n_input_tokens", "total_input_tokens"),
                              ("n_output_tokens", "total_output_tokens")):
            assert (pd.isna(row[column]) if t[field] is None else row[column] == t[field])
        start, end = t["trial_started_at"], t["trial_ended_at"]
        if start is None:
            assert pd.isna(row["started_at"]) and pd.isna(row["total_ms"])
            continue
        assert row["started_at"] == pd.Timestamp(start)
        assert row["total_ms"] == pytest.approx(
            (pd.Timestamp(end) - pd.Timestamp(start)).total_seconds() * 1000
        )
        assert row["agent_execution_ms"] == pytest.approx(
            (pd.Timestamp(t["agent_ended_at"]) - pd.Timestamp(t["agent_started_at"]))
            .total_seconds() * 1000
        )
        if t["test_started_at"] is None:
            assert pd.isna(row["verifier_ms"])
        else:
            assert row["verifier_ms"] == pytest.approx(14250.0)


def test_accuracy_is_terminal_benchs_own(run: Path) -> None:
    trials = read_terminal_bench(run)
    accuracy = json.loads((run / "results.json").read_text())["accuracy"]
    done = trials[trials["_status"] != "running"]
    # Terminal-Bench counts an unresolved None as 0, as Harbor's 0.25 policy does
    means = mk.aggregate(done, by="eval")
    assert means == {done["eval"].iloc[0]: {"mean": pytest.approx(accuracy)}}
    passk = mk.pass_at_k(trials, k=2)
    assert passk is not None


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_schema_matches_read_harbor_job(run: Path, backend: str) -> None:
    assert_trial_schema(read_terminal_bench(run, backend=backend), backend)


def test_a_folder_of_runs_and_per_trial_files_only(tmp_path: Path) -> None:
    write_run(tmp_path / "runs", "run-a")
    second, _ = write_run(tmp_path / "runs", "run-b")
    # early in a run there is no results.json yet: the trials' own files are read
    (second / "results.json").unlink()
    trials = read_terminal_bench(tmp_path / "runs")
    a = trials[trials["job"] == "run-a"]
    b = trials[trials["job"] == "run-b"]
    assert len(a) == 7
    # the crashed trial left no file of its own: without results.json it looks running
    assert len(b) == 7 and (b["_status"] == "running").sum() == 2


def test_errors_name_the_file_and_value(run: Path, tmp_path: Path) -> None:
    results = json.loads((run / "results.json").read_text())
    results["results"][0]["is_resolved"] = "yes"
    (run / "results.json").write_text(json.dumps(results))
    with pytest.raises(TrialSourceError, match=r"results\[0\].*is_resolved is 'yes'"):
        read_terminal_bench(run)
    (run / "results.json").write_text("{not json")
    with pytest.raises(TrialSourceError, match=r"results.json: not a readable JSON"):
        read_terminal_bench(run)
    with pytest.raises(TrialSourceError, match="not a Terminal-Bench run folder"):
        read_terminal_bench(tmp_path / "nothing")


def test_metrickit_summarize_reads_a_run_folder(tmp_path: Path, capsys) -> None:
    from metrickit.cli import main

    run, _ = write_run(tmp_path)
    trials = read_terminal_bench(run)
    assert main(["summarize", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Terminal-Bench run {run}: {len(trials)} trial(s)")
    finished = trials[trials["_status"].astype(str) != "running"]
    mean = finished["reward"].mean()  # every finished trial counts (Harbor 0.25's policy)
    assert f"reward: mean {mean:.4f}" in out
