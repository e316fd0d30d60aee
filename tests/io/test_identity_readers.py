"""Every reader fills the identity columns (run, job, agent_kwargs, dataset, dataset_version,
harness_version) from what its files record, so candidates are what was run: issue #23.

The acceptance checks read real outside data in ../shared/realdata (see its README.md) and
skip where it is absent, as it is in a user's clone; the rest use the readers' fixtures.
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pytest
from harbor_jobs_helpers import write_trial

import metrickit as mk
from metrickit.errors import HarborJobError, MetrickitWarning, TrialSourceError
from metrickit.io.tidy import concat_trials, trials_from_frame

sys.path.insert(0, str(Path(__file__).parent))
from tb1_fixture import write_run
from trial_schema_check import assert_trial_schema

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT / ".." / "shared" / "realdata"
EXAMPLE_JOB = ROOT / "data" / "harbor_jobs" / "2025-06-02__10-00-00"


def real(*parts: str) -> Path:
    path = REAL.joinpath(*parts)
    if not path.exists():
        pytest.skip("../shared/realdata not present")
    return path


def stored_metrics(job: Path) -> dict[str, dict[str, Any]]:
    evals = json.loads((job / "result.json").read_text())["stats"]["evals"]
    return {key: (ev["metrics"][0] if ev["metrics"] else {}) for key, ev in evals.items()}


# --- Harbor ----------------------------------------------------------------------------


def thinharness_jobs() -> list[Path]:
    return sorted(real("harbor_jobs", "thinharness-preflight").glob("*/job"))


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_thinharness_six_jobs_are_six_candidates(backend: str) -> None:
    jobs = thinharness_jobs()
    assert len(jobs) == 6 and {j.name for j in jobs} == {"job"}
    trials = mk.read_harbor_job(jobs, backend=backend)
    assert_trial_schema(trials, backend)
    t = trials.to_pandas() if backend == "polars" else trials
    names = [json.loads((j / "config.json").read_text())["job_name"] for j in jobs]
    # run and job are the job_name each config.json records, not the folder name "job"
    assert sorted(t["run"].unique()) == sorted(names) == sorted(t["job"].unique())
    assert t["candidate"].nunique() == 6
    assert sorted(t["kwarg_harness"].unique()) == ["pi", "thinharness"]
    # no candidate pools the two harnesses; each harness ran the 3 tasks
    assert (t.groupby("candidate")["kwarg_harness"].nunique() == 1).all()
    assert t.groupby("kwarg_harness")["task_name"].nunique().to_dict() == {
        "pi": 3, "thinharness": 3}
    for row in t.itertuples():
        kwargs = json.loads(row.agent_kwargs)
        assert kwargs["harness"] == row.kwarg_harness and kwargs["mode"] == "fake"
        assert f"harness={row.kwarg_harness}" in row.candidate
    # the dataset and the ref the job's config.json gives it
    assert set(t["dataset"]) == {"terminal-bench/terminal-bench-2-1"} == set(t["source"])
    assert set(t["dataset_version"]) == {
        "sha256:7d7bdc1cbedad549fc1140404bd4dc45e5fd0ea7c4186773687d177ad3a0699a"}
    assert t["harness_version"].isna().all()  # these jobs wrote no lock.json
    assert set(t["format"]) == {"harbor"}
    # Harbor's own key and its per-job answer are unchanged
    assert set(t["eval"]) == {
        "matched-subscription-smoke__gpt-5.6-sol__terminal-bench/terminal-bench-2-1"}
    for job, name in zip(jobs, names, strict=True):
        one = t[t["run"] == name]
        assert mk.aggregate(one, by="eval") == stored_metrics(job)


def test_saud008_records_its_harbor_version() -> None:
    job = real("harbor_jobs", "saud008-tb2.1", "2026-09-30__08-59-24")
    t = mk.read_harbor_job(job)
    assert t["harness_version"].tolist() == ["0.18.0"]
    # no job_name in its config.json: the folder's name
    assert t["run"].tolist() == t["job"].tolist() == ["2026-09-30__08-59-24"]
    assert t["agent_kwargs"].isna().all()  # kwargs {} record nothing
    assert t["candidate"].tolist() == ["claude-code · gpt-5.6"]
    assert mk.aggregate(t, by="eval") == stored_metrics(job)


def test_two_folders_with_one_job_name_stay_two_runs(tmp_path: Path) -> None:
    copies = [tmp_path / machine / EXAMPLE_JOB.name for machine in ("east", "west")]
    for copy in copies:
        shutil.copytree(EXAMPLE_JOB, copy)
    t = mk.read_harbor_job(copies)
    assert set(t["job"]) == {EXAMPLE_JOB.name}
    assert sorted(t["run"].unique()) == [f"east/{EXAMPLE_JOB.name}", f"west/{EXAMPLE_JOB.name}"]
    # attempts are numbered per job folder, 1-4 each, never 1-8 across the two
    assert t.groupby(["run", "eval", "task_name"])["attempt"].max().eq(4).all()
    assert t["attempt"].max() == 4
    # one recorded configuration: one candidate, pooled from the two runs
    assert t["candidate"].nunique() == 1
    for run in t["run"].unique():
        assert mk.aggregate(t[t["run"] == run], by="eval") == stored_metrics(EXAMPLE_JOB)


def test_one_job_name_in_one_parent_falls_back_to_the_paths(tmp_path: Path) -> None:
    from metrickit.io.harbor_trials import run_names

    jobs = [tmp_path / "p" / "a", tmp_path / "p" / "b", tmp_path / "q" / "c"]
    assert run_names(jobs, ["x", "x", "y"]) == [str(jobs[0]), str(jobs[1]), "y"]
    assert run_names(jobs, ["x", "y", "x"]) == ["p/x", "y", "q/x"]


def _job(tmp_path: Path, config: dict[str, Any] | None, lock: dict[str, Any] | None = None,
         name: str = "job") -> Path:
    job = tmp_path / name
    write_trial(job, "a__1", task="a", rewards={"reward": 1.0}, source="my-dataset")
    if config is not None:
        (job / "config.json").write_text(json.dumps(config))
    if lock is not None:
        (job / "lock.json").write_text(json.dumps(lock))
    return job


@pytest.mark.parametrize(("entry", "version"), [
    ({"name": "my-dataset", "version": "2.0"}, "2.0"),   # registry dataset, older Harbor
    ({"name": "my-dataset", "ref": "sha256:ab"}, "sha256:ab"),  # newer Harbor
    ({"name": "other", "version": "9"}, None),            # another dataset's version
    ({"path": "datasets/my-dataset"}, None),              # a local dataset has none
])
def test_dataset_version_from_the_job_config(
    tmp_path: Path, entry: dict[str, Any], version: str | None
) -> None:
    job = _job(tmp_path, {"job_name": "nightly", "datasets": [entry]},
               {"harbor": {"version": "0.26.1"}})
    t = mk.read_harbor_job(job)
    assert t["dataset"].tolist() == ["my-dataset"]
    assert t["dataset_version"].tolist() == [version if version else pd.NA]
    assert t["harness_version"].tolist() == ["0.26.1"]
    assert t["run"].tolist() == t["job"].tolist() == ["nightly"]


@pytest.mark.parametrize(("config", "lock", "message"), [
    ({"job_name": 7}, None, r"config.json: field 'job_name' is 7 \(int\); expected a string"),
    ({"datasets": "x"}, None, r"field 'datasets' is 'x'"),
    ({"datasets": [{"name": "d", "version": ["1"]}]}, None,
     r"field 'datasets\[0\].version' is \['1'\]"),
    (None, {"harbor": {"version": 18}}, r"lock.json: field 'harbor.version' is 18"),
])
def test_bad_job_files_name_file_field_and_value(
    tmp_path: Path, config: dict[str, Any] | None, lock: dict[str, Any] | None, message: str
) -> None:
    job = _job(tmp_path, config, lock)
    with pytest.raises(HarborJobError, match=message):
        mk.read_harbor_job(job)


def test_agent_kwargs_of_finished_and_running_trials(tmp_path: Path) -> None:
    job = tmp_path / "job"
    done = write_trial(job, "a__1", task="a", rewards={"reward": 1.0})
    obj = json.loads((done / "result.json").read_text())
    obj["config"]["agent"]["kwargs"] = {"harness": "pi", "max_turns": 30}
    (done / "result.json").write_text(json.dumps(obj))
    running = job / "b__1"
    running.mkdir()
    (running / "config.json").write_text(json.dumps({
        "trial_name": "b__1", "task": {"path": "tasks/b", "source": "my-dataset"},
        "agent": {"name": "claude-code", "model_name": obj["config"]["agent"]["model_name"],
                  "kwargs": {"harness": "pi", "max_turns": 30}},
    }))
    t = mk.read_harbor_job(job)
    assert t["_status"].tolist() == ["ok", "running"]
    assert t["agent_kwargs"].tolist() == ['{"harness":"pi","max_turns":30}'] * 2
    assert t["kwarg_max_turns"].tolist() == ["30", "30"]
    assert t["candidate"].nunique() == 1  # the running trial is of the same candidate
    obj["config"]["agent"]["kwargs"] = ["pi"]
    (done / "result.json").write_text(json.dumps(obj))
    with pytest.raises(HarborJobError, match=r"a__1/result.json.*'config.agent.kwargs' is "
                                             r"\['pi'\] \(list\)"):
        mk.read_harbor_job(job)


# --- Terminal-Bench 1 --------------------------------------------------------------------


def test_terminal_bench_real_runs_are_three_candidates() -> None:
    t = mk.read_terminal_bench(real("terminal_bench_1"))
    assert len(t) == 240
    assert t["candidate"].nunique() == 3
    droid = t[t["agent"] == "Factory Droid"]
    # two runs of one agent with no model recorded never pool: their labels name the run
    assert sorted(droid["candidate"].unique()) == [
        "Factory Droid · run tb_rc2_g5_1", "Factory Droid · run tb_rc2_sonnet_1"]
    assert sorted(t["run"].unique()) == sorted(t["job"].unique()) == [
        "2025-08-15__19-28-24", "tb_rc2_g5_1", "tb_rc2_sonnet_1"]
    assert set(t["dataset"]) == {"terminal-bench-core"}
    assert set(t["dataset_version"]) == {"0.1.1"}
    assert set(t["format"]) == {"terminal-bench"}
    commits = t.groupby("run")["harness_version"].first().to_dict()
    assert commits["tb_rc2_g5_1"] == "7bb4b7156d9cbfc9ca4005a8b32a966dd5113d52"
    means = {c: round(m, 4) for c, m in t.groupby("candidate")["reward"].mean().items()}
    assert means == {"mini-swe-agent · claude-sonnet-4-0": 0.075,
                     "Factory Droid · run tb_rc2_sonnet_1": 0.5375,
                     "Factory Droid · run tb_rc2_g5_1": 0.4875}


def test_terminal_bench_agent_kwargs_and_versions(tmp_path: Path) -> None:
    run = write_run(tmp_path)[0]
    meta = json.loads((run / "run_metadata.json").read_text())
    meta.update(agent_kwargs={"max_episodes": 50}, dataset_version="0.1.1",
                commit_hash="abc123")
    (run / "run_metadata.json").write_text(json.dumps(meta))
    t = mk.read_terminal_bench(run)
    assert set(t["agent_kwargs"]) == {'{"max_episodes":50}'}
    assert set(t["kwarg_max_episodes"]) == {"50"}
    assert set(t["dataset_version"]) == {"0.1.1"} and set(t["harness_version"]) == {"abc123"}
    assert set(t["run"]) == {meta["run_id"]}
    meta["agent_kwargs"] = "max_episodes=50"
    (run / "run_metadata.json").write_text(json.dumps(meta))
    with pytest.raises(TrialSourceError, match=r"run_metadata.json: field 'agent_kwargs' is "
                                               r"'max_episodes=50' \(str\)"):
        mk.read_terminal_bench(run)


# --- Inspect AI --------------------------------------------------------------------------


NO_SAMPLES = "2025-05-12T20-28-13-04-00_no-samples.json"


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_inspect_log_without_samples_gives_no_rows(backend: str) -> None:
    pytest.importorskip("inspect_ai")
    log = real("inspect_ai", NO_SAMPLES)
    with pytest.warns(MetrickitWarning) as caught:
        t = mk.read_inspect_log(log, backend=backend)
    (warning,) = caught
    text = str(warning.message)
    # names the file and quotes the header's own results
    assert str(log) in text and "no samples" in text and "'cancelled'" in text
    assert "3 of 3 samples completed" in text and "match: accuracy 0.6667, stderr 0.3333" in text
    assert len(t) == 0
    assert_trial_schema(t, backend)


def test_inspect_real_logs_fill_the_identity_columns() -> None:
    pytest.importorskip("inspect_ai")
    folder = real("inspect_ai")
    with pytest.warns(MetrickitWarning, match="no samples"):
        t = mk.read_inspect_log(folder)
    from inspect_ai.log import list_eval_logs, read_eval_log

    headers = [read_eval_log(i, header_only=True) for i in list_eval_logs(str(folder))]
    with_samples = [h for h in headers if not h.location.endswith(NO_SAMPLES)]
    assert sorted(t["run"].unique()) == sorted(h.eval.eval_id for h in with_samples)
    assert len(t) == 8  # 3 + 3 + 1 + 1 samples; the sample-less log adds none
    for h in with_samples:
        rows = t[t["run"] == h.eval.eval_id]
        assert set(rows["job"]) == {h.eval.run_id}
        # a task's arguments join its name: other arguments, other tasks
        args = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}"
                         for k, v in sorted(h.eval.task_args.items()))
        task = f"{h.eval.task}[{args}]" if args else h.eval.task
        assert set(rows["dataset"]) == {task} == set(rows["source"])
        assert set(rows["dataset_version"]) == {str(h.eval.task_version)}
        assert set(rows["harness_version"]) == {h.eval.packages["inspect_ai"]}
        assert set(rows["format"]) == {"inspect"}
    assert t["candidate"].nunique() == 4
    assert "inspect_evals/mmlu_0_shot[cot=false, language=EN_US, subjects=[]]" in set(t["source"])
    # one solver and model on two tasks: two candidates, told apart by the dataset
    same = t[t["model"] == "gpt-4o-mini"]
    assert sorted(same["candidate"].unique()) == [
        "system_message+generate · gpt-4o-mini · dataset=popularity",
        "system_message+generate · gpt-4o-mini · dataset=security_guide"]


def test_inspect_cancelled_eval_adds_no_rows_for_samples_it_never_ran(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(real("inspect_ai", "2025-05-12T20-28-13-04-00_popularity.json")))
    assert log.status == "cancelled" and log.samples is not None and len(log.samples) == 3
    log.samples = log.samples[:2]
    out = tmp_path / "2025-05-12T20-28-13-04-00_popularity_Cut.json"
    write_eval_log(log, str(out))
    with pytest.warns(MetrickitWarning, match=r"_Cut.json: the eval ended 'cancelled' before "
                                              r"running 1 of the 3 .*accuracy 0.6667"):
        t = mk.read_inspect_log(out)
    # the two samples it holds; no null row (that Harbor 0.25's policy would count as 0)
    assert len(t) == 2 and set(t["_status"]) == {"ok"}
    # so the mean is over the two samples it ran, not three with a made-up 0
    (answer,) = mk.aggregate(t, by="eval").values()
    assert answer == {"mean": pytest.approx(t["match"].mean())}


def test_inspect_solver_args_are_agent_kwargs(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(real("inspect_ai", "2025-05-12T20-28-26-04-00_security-guide.json")))
    log.eval.solver = "agent_loop"
    log.eval.solver_args = {"max_attempts": 3, "style": "terse"}
    out = tmp_path / "solver.json"
    write_eval_log(log, str(out))
    t = mk.read_inspect_log(out)
    assert set(t["agent"]) == {"agent_loop"}
    assert set(t["agent_kwargs"]) == {'{"max_attempts":3,"style":"terse"}'}
    assert set(t["kwarg_max_attempts"]) == {"3"} and set(t["kwarg_style"]) == {"terse"}


# --- lm-evaluation-harness ---------------------------------------------------------------


@pytest.fixture(scope="module")
def lm_eval_runs(tmp_path_factory: pytest.TempPathFactory, shared_tmp: Any) -> dict[str, Path]:
    pytest.importorskip("lm_eval")
    from lm_eval_fixture import run_lm_eval

    return {
        "plain": run_lm_eval(tmp_path_factory.mktemp("lm_plain"), once=shared_tmp),
        "group": run_lm_eval(tmp_path_factory.mktemp("lm_group"), group=True, once=shared_tmp),
    }


@pytest.mark.slow
def test_lm_eval_run_is_one_candidate_of_its_tasks(lm_eval_runs: dict[str, Path]) -> None:
    out = lm_eval_runs["plain"]
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    t = mk.read_lm_eval_samples(out)
    assert set(t["run"]) == {str(results_file)}
    assert t["candidate"].nunique() == 1 and t["eval"].nunique() == 2
    assert set(t["dataset"]) == {"tiny_gen+tiny_mc"}  # no group: the tasks, sorted
    assert sorted(t["source"].unique()) == ["tiny_gen", "tiny_mc"]  # doc ids are per task
    assert t["task_group"].isna().all()
    assert t["dataset_version"].isna().all()  # "Yaml": lm-eval's placeholder, no version
    assert set(t["harness_version"]) == {results["lm_eval_version"]}
    assert set(t["format"]) == {"lm-eval"}
    assert set(t["agent_kwargs"]) == {'{"num_fewshot":0,"pretrained":"tiny/dummy-lm"}'}
    assert set(t["kwarg_pretrained"]) == {"tiny/dummy-lm"}
    assert set(t["kwarg_num_fewshot"]) == {"0"}


@pytest.mark.slow
def test_lm_eval_group_is_the_dataset(lm_eval_runs: dict[str, Path]) -> None:
    out = lm_eval_runs["group"]
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    assert results["group_subtasks"] == {"tiny_suite": ["tiny_mc", "tiny_gen"]}
    t = mk.read_lm_eval_samples(out)
    assert set(t["dataset"]) == {"tiny_suite"}
    assert set(t["task_group"]) == {"tiny_suite"}
    assert set(t["dataset_version"]) == {str(results["versions"]["tiny_suite"])} == {"1.0"}
    assert sorted(t["source"].unique()) == ["tiny_gen", "tiny_mc"]
    assert t["candidate"].nunique() == 1


@pytest.mark.slow
def test_lm_eval_runs_with_different_model_args_never_pool(
    lm_eval_runs: dict[str, Path], tmp_path: Path
) -> None:
    out = lm_eval_runs["plain"]
    (results_file,) = out.rglob("results_*.json")
    copy = tmp_path / "other" / results_file.parent.name
    shutil.copytree(results_file.parent, copy)
    other = json.loads((copy / results_file.name).read_text())
    # lm-eval before 0.4.5 wrote model_args as the command-line text
    other["config"]["model_args"] = "pretrained=tiny/dummy-lm,dtype=float16"
    (copy / results_file.name).write_text(json.dumps(other))
    t = mk.read_lm_eval_samples([out, copy.parent])
    assert t["run"].nunique() == 2 and t["candidate"].nunique() == 2
    assert set(t["kwarg_dtype"].dropna()) == {"float16"}
    assert t.groupby("candidate")["kwarg_dtype"].nunique(dropna=False).eq(1).all()
    same = dict(other, config=dict(other["config"], model_args={"pretrained": "tiny/dummy-lm"}))
    (copy / results_file.name).write_text(json.dumps(same))
    pooled = mk.read_lm_eval_samples([out, copy.parent])
    assert pooled["run"].nunique() == 2 and pooled["candidate"].nunique() == 1


@pytest.mark.slow
def test_lm_eval_runs_with_other_generation_or_shots_never_pool(
    lm_eval_runs: dict[str, Path], tmp_path: Path
) -> None:
    # a temperature sweep (--gen_kwargs) and a few-shot sweep (--num_fewshot) are one
    # candidate per setting; a seed or batch size is how the run was made, and pools
    out = lm_eval_runs["plain"]
    (results_file,) = out.rglob("results_*.json")
    plain = json.loads(results_file.read_text())

    def variant(name: str, change: Any) -> Path:
        copy = tmp_path / name / results_file.parent.name
        shutil.copytree(results_file.parent, copy)
        results = json.loads(json.dumps(plain))
        change(results)
        (copy / results_file.name).write_text(json.dumps(results))
        return copy.parent

    folders = {
        "warm": variant("warm", lambda r: r["config"].update(gen_kwargs="temperature=0.7")),
        "warm2": variant("warm2", lambda r: r["config"].update(gen_kwargs={"temperature": "0.7"})),
        "shots": variant("shots", lambda r: r["n-shot"].update({t: 5 for t in r["n-shot"]})),
        "mixed": variant("mixed", lambda r: r["n-shot"].update(tiny_mc=5)),
        "seed": variant("seed", lambda r: r["config"].update(random_seed=7, batch_size=8)),
    }
    t = mk.read_lm_eval_samples([out, *folders.values()])
    run = {name: str(next(folder.rglob("results_*.json"))) for name, folder in folders.items()}
    run["plain"] = str(results_file)
    candidate = t.groupby("run", observed=True)["candidate"].first()
    assert candidate[run["warm"]] == candidate[run["warm2"]]  # text and object alike
    assert candidate[run["seed"]] == candidate[run["plain"]]
    assert len({candidate[run[n]] for n in ("plain", "warm", "shots", "mixed")}) == 4
    kwargs = {r: json.loads(text)
              for r, text in t.drop_duplicates("run").set_index("run")["agent_kwargs"].items()}
    assert kwargs[run["warm"]]["gen_kwargs.temperature"] == "0.7"
    assert kwargs[run["shots"]]["num_fewshot"] == 5
    assert {k: v for k, v in kwargs[run["mixed"]].items() if k.startswith("num_")} == {
        "num_fewshot.tiny_gen": 0, "num_fewshot.tiny_mc": 5}
    # the same documents, so the sweep's runs pair task by task
    assert mk.compare_runs(t, run["plain"], run["shots"], by="run", value="acc").n_tasks > 0


# --- tidy tables -------------------------------------------------------------------------


OTEL_ARGS = dict(task="TaskName", reward="Reward", model="ModelName", cost_usd="CostUSD",
                 input_tokens="InputTokens", output_tokens="OutputTokens", error="Error")


def test_otel_bench_has_fourteen_candidates(tmp_path: Path) -> None:
    df = pd.read_json(real("otel-bench", "results.json"))
    assert isinstance(df, pd.DataFrame) and len(df) == 1014
    t = trials_from_frame(df, **OTEL_ARGS)
    assert t["candidate"].nunique() == 14 and set(t["run"]) == {"table"}
    assert set(t["format"]) == {"table"}
    # the tool writes "" for no error: only real messages are errors
    assert t["exception_type"].notna().sum() == (df["Error"].str.strip() != "").sum() == 260
    assert len(mk.breakdown(t, by="candidate")) == 14
    csv = tmp_path / "otel.csv"
    df.to_csv(csv, index=False)
    again = trials_from_frame(pd.read_csv(csv), **OTEL_ARGS)
    assert again["candidate"].nunique() == 14
    assert again["exception_type"].notna().sum() == 260


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_tidy_identity_arguments(backend: str) -> None:
    df = pd.DataFrame({
        "id": ["q1", "q2", "q1", "q2", "q1"],
        "day": ["mon", "mon", "tue", "tue", "tue"],
        "prompt": ["a", "a", "a", "a", "b"],
        "ver": ["1.0"] * 5, "bench": ["qa"] * 5, "bv": ["v2"] * 5,
        "topic": ["math", "art", "math", "art", "math"],
        "kw": ['{"temp": 0}', '{"temp": 0}', '{"temp": 0}', '{"temp": 0}', None],
        "ok": [1, 0, 1, 1, 0],
    })
    native = pl.from_pandas(df) if backend == "polars" else df
    trials = trials_from_frame(native, task="id", reward="ok", run="day", candidate="prompt",
                               agent_version="ver", dataset="bench", dataset_version="bv",
                               group="topic", agent_kwargs="kw")
    assert_trial_schema(trials, backend)
    t = trials.to_pandas() if backend == "polars" else trials
    assert t["run"].tolist() == df["day"].tolist()
    assert t["variant"].tolist() == t["eval"].tolist() == df["prompt"].tolist()
    assert t["agent_version"].tolist() == ["1.0"] * 5
    assert set(t["dataset"]) == {"qa"} and set(t["dataset_version"]) == {"v2"}
    assert t["task_group"].tolist() == df["topic"].tolist()
    assert t["agent_kwargs"].tolist()[:4] == ['{"temp":0}'] * 4 and pd.isna(t["agent_kwargs"][4])
    # prompt "a" on two days pools into one candidate named by the table's label
    assert t["candidate"].tolist() == ["a", "a", "a", "a", "b"]


def test_tidy_kwargs_dicts_and_the_errors() -> None:
    df = pd.DataFrame({"id": ["q1", "q1"], "ok": [1, 0],
                       "kw": [{"b": 1, "a": "x"}, {"a": "x", "b": 2}]})
    t = trials_from_frame(df, task="id", reward="ok", agent_kwargs="kw")
    assert t["agent_kwargs"].tolist() == ['{"a":"x","b":1}', '{"a":"x","b":2}']
    assert t["candidate"].tolist() == ["run table · b=1", "run table · b=2"]
    assert t["attempt"].tolist() == [1, 1]  # two candidates, one attempt each
    bad = pd.DataFrame({"id": ["q1", "q2"], "ok": [1, 0], "kw": ['{"a": 1}', "[1, 2]"]})
    with pytest.raises(TrialSourceError, match=r"agent_kwargs column 'kw', row 1: '\[1, 2\]' "
                                               r"is not a JSON object"):
        trials_from_frame(bad, task="id", reward="ok", agent_kwargs="kw")
    bad = pd.DataFrame({"id": ["q1"], "ok": [1], "kw": [3]})
    with pytest.raises(TrialSourceError, match=r"agent_kwargs column 'kw', row 0: 3 \(int\)"):
        trials_from_frame(bad, task="id", reward="ok", agent_kwargs="kw")
    bad = pd.DataFrame({"id": ["q1", "q2"], "ok": [1, 0], "r": ["x", None]})
    with pytest.raises(TrialSourceError, match=r"row 1: run column 'r' is null"):
        trials_from_frame(bad, task="id", reward="ok", run="r")
    same = pd.DataFrame({"id": ["q1", "q1"], "ok": [1, 0], "r": ["x", "x"], "n": [1, 1]})
    with pytest.raises(TrialSourceError, match=r"rows 0 and 1 are the same trial \(run 'x'"):
        trials_from_frame(same, task="id", reward="ok", run="r", attempt="n")
    apart = trials_from_frame(same.assign(r=["x", "y"]), task="id", reward="ok", run="r",
                              attempt="n")
    assert apart["run"].tolist() == ["x", "y"]


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_concat_recomputes_candidates_across_tables(backend: str) -> None:
    def table(run: str, kwargs: str) -> Any:
        df = pd.DataFrame({"id": ["q1", "q2"], "ok": [1, 0], "m": ["x", "x"],
                           "r": [run, run], "kw": [kwargs, kwargs]})
        native = pl.from_pandas(df) if backend == "polars" else df
        return trials_from_frame(native, task="id", reward="ok", model="m", run="r",
                                 agent_kwargs="kw")

    a, b = table("mon", '{"temp": 0}'), table("tue", '{"temp": 1}')
    c = table("wed", '{"temp": 0}')
    # within each table its one candidate is "x"; stacked, the labels must tell them apart
    for one in (a, b, c):
        assert set(one["candidate"]) == {"x"}
    stacked = concat_trials([a, b, c])
    assert_trial_schema(stacked, backend)
    s = stacked.to_pandas() if backend == "polars" else stacked
    assert s.groupby("run")["candidate"].first().to_dict() == {
        "mon": "x · temp=0", "tue": "x · temp=1", "wed": "x · temp=0"}  # mon and wed pool
    assert s["kwarg_temp"].tolist() == ["0", "0", "1", "1", "0", "0"]
    # a kwarg only some tables have is kept, null elsewhere
    d = table("thu", '{"temp": 0, "top_p": 0.9}')
    s = concat_trials([a, d])
    s = s.to_pandas() if backend == "polars" else s
    assert s["kwarg_top_p"].isna().tolist() == [True, True, False, False]
    assert list(s.columns)[-2:] == ["kwarg_temp", "kwarg_top_p"]
    with pytest.raises(TrialSourceError, match=r"rows 0 and 2 are the same trial \(run 'mon', "
                                               r"candidate 'x', source None, task 'q1'"):
        concat_trials([a, a])


def test_concat_of_readers_keeps_harbor_and_tidy_apart(tmp_path: Path) -> None:
    harbor = mk.read_harbor_job(EXAMPLE_JOB)
    tb = mk.read_terminal_bench(write_run(tmp_path)[0])
    tidy = trials_from_frame(pd.DataFrame({"id": ["a"], "ok": [1]}), task="id", reward="ok")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = concat_trials([harbor, tb, tidy])
    assert_trial_schema(s, "pandas")
    assert s["candidate"].nunique() == 3
    assert s.drop_duplicates("run")["candidate"].tolist() == [
        "terminus-2 · claude-sonnet-4-5", "terminus · claude-sonnet-4-20250514", "run table"]
