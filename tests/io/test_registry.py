"""The reader registry: which reader reads a path, told from its top-level layout alone, and
``mk.load`` on one path or several."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import polars as pl
import pytest
from pandas.testing import assert_frame_equal
from polars.testing import assert_frame_equal as assert_polars_equal

import metrickit as mk
from metrickit.errors import MetrickitWarning, TrialSourceError
from metrickit.io.registry import FORMATS, MIXED, detect, sources

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
JOBS = DATA / "harbor_jobs"
JOB = JOBS / "2025-06-02__10-00-00"  # 24 trials
BENCH = JOBS / "2025-07-14__09-00-00"  # 960 trials, some with _status "null"
OTHER = DATA / "other_formats"
TB_RUN = OTHER / "terminal_bench_run" / "2025-08-15__19-28-24"
LM_MODEL = OTHER / "lm_eval_output" / "tiny__dummy-lm"
REAL = Path(__file__).resolve().parents[2].parent / "shared" / "realdata"

real = pytest.mark.skipif(not REAL.is_dir(), reason=f"no real data at {REAL} (a user's clone "
                          "has none; it lives beside the repository)")


# -- detection on the repository's data --------------------------------------------------------


@pytest.mark.parametrize(("path", "expected", "n_sources"), [
    (JOBS, "harbor", 3),
    (JOB, "harbor", 1),
    (BENCH, "harbor", 1),
    (OTHER / "inspect_logs", "inspect", 2),
    (OTHER / "lm_eval_output", "lm-eval", 1),
    (LM_MODEL, "lm-eval", 1),
    (OTHER / "terminal_bench_run", "terminal-bench", 1),
    (TB_RUN, "terminal-bench", 1),
    (OTHER, MIXED, 4),
    (DATA / "rewards", "rewards", 9),
    (DATA / "rewards" / "runs", "rewards", 3),
], ids=lambda v: v.relative_to(ROOT).as_posix() if isinstance(v, Path) else str(v))
def test_detects_the_sample_data(path, expected, n_sources):
    assert detect(path) == expected
    assert len(sources(path)) == n_sources


@pytest.mark.parametrize("path", sorted((DATA / "rewards").glob("*.jsonl"))
                         + sorted((OTHER / "inspect_logs").glob("*.eval"))
                         + sorted(LM_MODEL.glob("results_*.json")),
                         ids=lambda p: p.name)
def test_detects_the_sample_files(path):
    expected = {".jsonl": "rewards", ".eval": "inspect", ".json": "lm-eval"}[path.suffix]
    assert detect(path) == expected


def test_load_reads_each_sample_format_as_its_reader_does():
    pytest.importorskip("inspect_ai")
    assert_frame_equal(mk.load(JOBS, progress=False), mk.read_harbor_job(JOBS, progress=False))
    assert_frame_equal(mk.load(TB_RUN), mk.read_terminal_bench(TB_RUN))
    assert_frame_equal(mk.load(OTHER / "lm_eval_output"),
                       mk.read_lm_eval_samples(OTHER / "lm_eval_output"))
    assert_frame_equal(mk.load(OTHER / "inspect_logs"), mk.read_inspect_log(OTHER / "inspect_logs"))
    rewards = DATA / "rewards" / "multi_dim.jsonl"
    assert_frame_equal(mk.load(rewards), mk.read_rewards(rewards))
    assert "load" in mk.__all__


def test_a_folder_of_several_formats_is_the_union_of_its_children():
    pytest.importorskip("inspect_ai")
    both = mk.load(OTHER)
    parts = [mk.read_inspect_log(OTHER / "inspect_logs"),
             mk.read_lm_eval_samples(OTHER / "lm_eval_output"), mk.read_terminal_bench(TB_RUN)]
    assert len(both) == sum(len(p) for p in parts)
    assert set(both["eval"]) == {e for p in parts for e in p["eval"]}
    assert both["candidate"].nunique() == sum(p["candidate"].nunique() for p in parts)


# -- the real data beside the repository -------------------------------------------------------


@real
@pytest.mark.parametrize(("relative", "expected", "n_trials"), [
    ("harbor_jobs/thinharness-preflight", "harbor", 6),
    ("harbor_jobs/saud008-tb2.1", "harbor", 1),
    ("terminal_bench_1", "terminal-bench", 240),
    ("inspect_ai", "inspect", None),
    ("inspect_ai_test_logs", "inspect", None),
])
def test_detects_the_real_data(relative, expected, n_trials):
    path = REAL / relative
    assert detect(path) == expected
    if expected == "inspect":
        pytest.importorskip("inspect_ai")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MetrickitWarning)  # Inspect logs without samples
        trials = mk.load(path, progress=False)
    assert len(trials) == (n_trials if n_trials is not None else len(trials)) > 0


@real
def test_thinharness_jobs_are_read_from_their_wrapper_folders():
    # every job folder is called "job", one per wrapper folder: a folder of folders of jobs
    found = sources(REAL / "harbor_jobs" / "thinharness-preflight")
    assert [s.path.name for s in found] == ["job"] * 6
    trials = mk.load(REAL / "harbor_jobs" / "thinharness-preflight")
    assert trials["candidate"].nunique() == 6  # harness=pi/thinharness on 3 cells


@real
def test_otel_bench_results_are_a_table_to_map_not_an_inspect_log():
    path = REAL / "otel-bench" / "results.json"
    with pytest.raises(TrialSourceError) as info:
        detect(path)
    text = str(info.value)
    assert "trials_from_frame" in text and "TaskName" in text
    assert "Inspect AI log (read_inspect_log): a .json without top-level 'eval'" in text
    assert sum(line.startswith("  - ") for line in text.splitlines()) == len(FORMATS)


# -- a Harbor job is told by its own files, never by what its trials hold ----------------------


def _job_with_artefact(tmp_path: Path, *, own_files: bool = True) -> Path:
    job = tmp_path / JOB.name
    shutil.copytree(JOB, job)
    trial = next(p for p in sorted(job.iterdir()) if p.is_dir())
    # an agent's artefact that looks like lm-eval output, inside a trial folder
    (trial / "results_foo.json").write_text(json.dumps({"results": {"t": {"acc": 1.0}}}))
    (trial / "agent").mkdir(exist_ok=True)
    (trial / "agent" / "results_2025.json").write_text("{}")
    if not own_files:  # a job that has not written its own files yet
        for name in ("config.json", "result.json", "job.log", "lock.json"):
            (job / name).unlink(missing_ok=True)
    return job


@pytest.mark.parametrize("own_files", [True, False])
def test_a_job_whose_trial_holds_results_json_is_read_as_harbor(tmp_path, capsys, own_files):
    # metrickit summarize globbed results_*.json recursively: it read this job as lm-eval
    # output (refusing it, or reading the trial's artefact instead of the 24 trials)
    job = _job_with_artefact(tmp_path, own_files=own_files)
    assert detect(job) == "harbor"
    trials = mk.load(job, progress=False)
    assert len(trials) == 24
    expected = mk.read_harbor_job(JOB, progress=False)
    assert trials["reward"].tolist() == expected["reward"].tolist()
    from metrickit.cli import main

    assert main(["summarize", str(job)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Harbor job {job}: 24 trial(s)")
    assert "trials: 24 finished, 0 running; tasks: 6" in out


def test_a_trial_folder_is_refused_naming_its_job(tmp_path):
    trial = next(p for p in sorted(JOB.iterdir()) if p.is_dir())
    with pytest.raises(TrialSourceError, match="single Harbor trial folder: pass the job folder"):
        detect(trial)


def test_lm_eval_results_are_found_one_level_down_never_deeper(tmp_path):
    deep = tmp_path / "a" / "b"
    shutil.copytree(LM_MODEL, deep / LM_MODEL.name)
    assert detect(deep) == "lm-eval"  # an output_path: results in its model folders
    assert detect(tmp_path / "a") == "lm-eval"  # a folder of output paths
    with pytest.raises(TrialSourceError, match="deeper than a folder is searched"):
        detect(tmp_path)


# -- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("make", ["empty folder", "text file", "csv without task_name",
                                  "json list", "missing"])
def test_a_path_of_no_format_is_refused_listing_every_format(tmp_path, make):
    path = tmp_path / "thing"
    if make == "empty folder":
        path.mkdir()
    elif make == "text file":
        path = tmp_path / "notes.txt"
        path.write_text("hello\n")
    elif make == "csv without task_name":
        path = tmp_path / "t.csv"
        pd.DataFrame({"question": ["a"], "ok": [1]}).to_csv(path, index=False)
    elif make == "json list":
        path = tmp_path / "results.json"
        path.write_text(json.dumps([{"TaskName": "a", "Reward": 1}]))
    with pytest.raises(TrialSourceError) as info:
        mk.load(path)
    text = str(info.value)
    if make == "missing":
        assert text == f"{path}: no such file or folder"
        return
    lines = text.splitlines()
    assert lines[0] == f"{path}: not a source metrickit reads; it is not"
    assert [line.split(" (")[0] for line in lines[1:]] == [
        f"  - {fmt.title}" for fmt in FORMATS.values()]
    if make in ("csv without task_name", "json list"):
        assert "mk.trials_from_frame" in text
    if make == "empty folder":
        assert "no Harbor job found" in text and "nor does it hold Inspect AI logs" in text


def test_a_job_reached_twice_is_refused(tmp_path):
    with pytest.raises(TrialSourceError, match="reached twice"):
        mk.load([JOB, JOBS], progress=False)
    with pytest.raises(TrialSourceError, match="reached twice"):
        mk.load([JOB, JOB], progress=False)


def test_rewards_and_trials_are_not_mixed():
    with pytest.raises(TrialSourceError, match=r"reward JSONL .* load them separately"):
        mk.load([DATA / "rewards" / "multi_dim.jsonl", JOB])
    # several reward files are one reward frame
    frame = mk.load([DATA / "rewards" / "multi_dim.jsonl", DATA / "rewards" / "single_dim.jsonl"])
    assert len(frame) == 8 and "_source" in frame.columns


def test_a_case_table_beside_reward_files_is_named_not_read(tmp_path):
    shutil.copy(DATA / "rewards" / "multi_dim.jsonl", tmp_path)
    shutil.copy(DATA / "cases" / "tickets.jsonl", tmp_path)
    with pytest.warns(MetrickitWarning, match="tickets.jsonl .*not rewards"):
        found = sources(tmp_path)
    assert [s.path.name for s in found] == ["multi_dim.jsonl"]


# -- trial tables ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet"])
def test_a_saved_trial_table_round_trips(tmp_path, name):
    trials = mk.concat_trials([mk.read_harbor_job(BENCH, progress=False),
                               mk.read_terminal_bench(TB_RUN)])
    assert (trials["_status"] == "null").any()
    path = tmp_path / name
    if name.endswith(".parquet"):
        trials.to_parquet(path)
    else:
        trials.to_csv(path, index=False)
    assert detect(path) == "trial-table"
    back = mk.load(path)
    assert_frame_equal(back, mk.load([BENCH, TB_RUN], progress=False), check_exact=True)
    assert list(back.columns) == list(trials.columns)
    assert (back["_status"] == "null").sum() == (trials["_status"] == "null").sum()
    for column in trials.columns:
        if column != "candidate":  # computed anew across the sources
            assert back[column].dtype == trials[column].dtype, column


@pytest.mark.parametrize("name", ["t.csv", "t.parquet"])
def test_a_saved_polars_trial_table_round_trips(tmp_path, name):
    trials = mk.read_harbor_job(BENCH, progress=False, backend="polars")
    path = tmp_path / name
    trials.write_csv(path) if name.endswith(".csv") else trials.write_parquet(path)
    assert_polars_equal(mk.load(path, backend="polars"), trials)
    pandas = mk.read_harbor_job(BENCH, progress=False)
    assert_frame_equal(mk.load(path), pandas, check_exact=True)


def test_a_changed_saved_table_is_refused_naming_column_row_and_value(tmp_path):
    trials = mk.read_harbor_job(JOB, progress=False)
    trials["_status"] = trials["_status"].astype(str)
    trials.loc[3, "_status"] = "done"
    trials.to_csv(tmp_path / "t.csv", index=False)
    with pytest.raises(TrialSourceError, match=r"column '_status', row 3: 'done' is not one of"):
        mk.load(tmp_path / "t.csv")


def test_tidy_tables_need_task_name_and_the_value_column(tmp_path):
    tidy = pd.DataFrame({"task_name": ["01", "02", "01", "02"], "system": ["x", "x", "y", "y"],
                         "score": [1.0, 0.0, 1.0, 1.0]})
    tidy.to_csv(tmp_path / "tidy.csv", index=False)
    trials = mk.load(tmp_path / "tidy.csv", value="score", candidate="system")
    assert trials["eval"].tolist() == trials["system"].tolist() == ["x", "x", "y", "y"]
    assert trials["task_name"].tolist() == ["01", "02", "01", "02"]  # ids stay text
    with pytest.raises(TrialSourceError, match=r"tidy.csv: .*reward='reward'.*value="):
        mk.load(tmp_path / "tidy.csv")
    tidy.to_json(tmp_path / "tidy.jsonl", orient="records", lines=True)
    assert detect(tmp_path / "tidy.jsonl") == "trial-table"
    polars = mk.load(tmp_path / "tidy.jsonl", value="score", candidate="system", backend="polars")
    assert isinstance(polars, pl.DataFrame) and polars["system"].to_list() == ["x", "x", "y", "y"]
