"""Issue #23, the analyses: one rule for which trials count, one default grouping
(``by="candidate"``), NA never 0, and pairs that are pairs.

Each test here failed on the code before these rules (the comment says how).
"""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from harbor_jobs_helpers import write_trial
from scipy import stats

import metrickit as mk
from metrickit.compute.stats import task_labels

CLAUDE = "claude-code · claude-sonnet-4-5"
CODEX = "codex · gpt-5"


# -- fixtures ---------------------------------------------------------------------------------


def _running_folder(job: Path, name: str, *, task: str, agent: str, model: str) -> None:
    """A trial Harbor has configured but not finished: config.json, no result.json."""
    folder = job / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "trial_name": name,
        "task": {"name": task, "source": "my-dataset"},
        "agent": {"name": agent, "model_name": model},
    }))


@pytest.fixture
def job_in_progress(tmp_path: Path) -> Path:
    """Two candidates on the same 17 tasks, one attempt each: claude passes 8 (8/17 =
    0.4706), codex passes 12. Claude has one more trial running (config.json written), and
    one folder is so new it has no config.json (its candidate is not known yet)."""
    job = tmp_path / "job"
    for i in range(17):
        write_trial(job, f"t{i:02d}__claude", task=f"task{i:02d}",
                    rewards={"reward": int(i < 8)})
        write_trial(job, f"t{i:02d}__codex", task=f"task{i:02d}", agent="codex",
                    model="gpt-5", rewards={"reward": int(i < 12)})
    _running_folder(job, "t17__claude", task="task17", agent="claude-code",
                    model="anthropic/claude-sonnet-4-5")  # as Harbor's config.json has it
    (job / "t18__new").mkdir()
    return job


def _na_table() -> pd.DataFrame:
    """Candidates a and b report ``correct`` and ``reward``; c's evaluation never reports
    ``correct`` (NA there), only ``reward``."""
    rng = np.random.default_rng(11)
    rows = []
    for run in ("a", "b", "c"):
        for task in range(8):
            for attempt in (1, 2):
                rows.append({"id": f"t{task}", "run": run, "seed": attempt,
                             "correct": None if run == "c" else int(rng.integers(0, 2)),
                             "reward": int(rng.integers(0, 2))})
    df = pd.DataFrame(rows)
    df["correct"] = df["correct"].astype("Int64")
    return mk.trials_from_frame(df, task="id", candidate="run", attempt="seed",
                                reward=["correct", "reward"])


def _tidy(n_tasks: int = 12, seed: int = 3) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "id": [f"q{i}" for i in range(n_tasks)] * 2,
        "model": ["m1"] * n_tasks + ["m2"] * n_tasks,
        "ok": rng.integers(0, 2, 2 * n_tasks),
        "ms": rng.uniform(100, 900, 2 * n_tasks),
    })
    return df, mk.trials_from_frame(df, task="id", reward="ok", model="model", latency_ms="ms")


# -- 1. one rule for which trials count --------------------------------------------------------


def test_compare_metrics_never_counts_a_running_trial(job_in_progress):
    # was 0.4444 with n=18: the running trial's missing reward failed pass_rate
    t = mk.read_harbor_job(job_in_progress)
    table = mk.compare_metrics(t, [mk.pass_rate()], by="candidate").table.set_index("group")
    assert table.loc[CLAUDE, "value"] == pytest.approx(8 / 17)
    assert table.loc[CLAUDE, "n"] == 17
    cmp = mk.compare_metrics(t, [mk.pass_rate()])
    assert any("2 running trial(s) not counted" in note for note in cmp.notes)
    assert mk.pass_rate()(t[t["candidate"] == CLAUDE]) == pytest.approx(8 / 17)


def test_every_public_analysis_on_a_job_in_progress(job_in_progress):
    t = mk.read_harbor_job(job_in_progress)
    assert len(t) == 36 and int((t["_status"] == "running").sum()) == 2
    # breakdown: grouped by candidate, the running trial in n_running, never in n
    b = mk.breakdown(t).set_index("candidate")
    assert list(b.index) == [CLAUDE, CODEX]  # the unconfigured folder is no candidate
    assert b.loc[CLAUDE, "mean"] == pytest.approx(8 / 17)
    assert (b.loc[CLAUDE, "n"], b.loc[CLAUDE, "n_running"]) == (17, 1)
    assert (b.loc[CODEX, "n"], b.loc[CODEX, "n_running"]) == (17, 0)
    # compare_runs: the running trial's task (task17) was never run to the end: not paired
    r = mk.compare_runs(t, CLAUDE, CODEX)
    assert r.n_tasks == 17 and r.only_a == [] and r.only_b == []
    assert r.difference.estimate == pytest.approx(8 / 17 - 12 / 17)
    assert any("1 running trial(s) not counted" in note for note in r.notes)
    # compare_metrics with Harbor's mean: the same numbers
    cmp = mk.compare_metrics(t, ["mean"]).table.set_index("group")
    assert cmp.loc[CLAUDE, "value"] == pytest.approx(8 / 17) and cmp.loc[CLAUDE, "n"] == 17
    assert set(cmp.index) == {CLAUDE, CODEX}
    # pass_at_k: one attempt per task, k = 1 only
    pk = mk.pass_at_k(t)
    row = pk.table.set_index("candidate").loc[CLAUDE]
    assert row["pass_at_k"] == pytest.approx(8 / 17) and row["n_tasks"] == 17
    assert any("running" in note for note in pk.notes)
    # aggregate: Harbor's mean over finished trials
    assert mk.aggregate(t, by="candidate")[CLAUDE] == {"mean": 8 / 17}
    # candidate_table: one row per candidate, the running trial nowhere
    ct = mk.ranking.candidate_table(t, ["reward"]).set_index("candidate")
    assert list(ct.index) == [CLAUDE, CODEX] and ct.loc[CLAUDE, "n"] == 17
    assert ct.loc[CLAUDE, "reward"] == pytest.approx(8 / 17)
    assert ct.attrs["notes"] == ["2 running trial(s) not counted (no result yet)"]
    # the tuner, with its defaults, on the trial table as it is
    pytest.importorskip("ipywidgets")
    tuner = mk.widgets.tune_spec(t)
    ranking = tuner.ranking.set_index("candidate")
    assert ranking.loc[CLAUDE, "accuracy"] == pytest.approx(8 / 17)
    assert ranking.loc[CLAUDE, "n"] == 17 and set(ranking.index) == {CLAUDE, CODEX}
    assert "2 running trial(s) not counted" in tuner.message.value


def test_policy_026_leaves_trials_without_a_valid_reward_out_and_says_so(tmp_path):
    job = tmp_path / "job"
    for i in range(6):
        write_trial(job, f"t{i}__a", task=f"task{i}", rewards={"reward": int(i < 3)})
    # no reward because the environment failed: a 0 under 0.25, left out under 0.26
    write_trial(job, "t6__a", task="task6", rewards=None, exception="EnvironmentStartTimeoutError")
    t = mk.read_harbor_job(job)
    old = mk.breakdown(t).iloc[0]
    new = mk.breakdown(t, policy="0.26").iloc[0]
    assert (old["n"], old["mean"]) == (7, pytest.approx(3 / 7))
    assert (new["n"], new["mean"]) == (6, pytest.approx(3 / 6))
    assert "1 trial(s) without a valid reward left out (policy 0.26)" in new["note"]
    cmp = mk.compare_metrics(t, ["mean"], policy="0.26")
    assert cmp.table["value"].tolist() == [pytest.approx(0.5)]
    assert any("without a valid reward left out" in note for note in cmp.notes)
    assert mk.compare_metrics(t, ["mean"]).table["value"].tolist() == [pytest.approx(3 / 7)]


SCRIPT = textwrap.dedent("""\
    import argparse, json
    p = argparse.ArgumentParser()
    p.add_argument("-i"); p.add_argument("-o")
    a = p.parse_args()
    rows = [json.loads(line) for line in open(a.i) if line.strip()]
    json.dump({"rows": len(rows), "empty": sum(r == {} for r in rows)}, open(a.o, "w"))
""")


def test_metric_script_is_never_handed_a_running_trial(job_in_progress, tmp_path):
    # was {"rows": 36, "empty": 2}: each running trial went to the script as {}
    script = tmp_path / "metric.py"
    script.write_text(SCRIPT)
    t = mk.read_harbor_job(job_in_progress)
    out = mk.run_metric_script(script, t)
    assert out == {"rows": 34, "empty": 0}
    assert out.notes == ["2 running trial(s) not counted (no result yet)"]
    per = mk.run_metric_script(script, t, by="candidate")
    assert per[CLAUDE] == {"rows": 17, "empty": 0} and set(per) == {CLAUDE, CODEX}


# -- NA is never 0 ----------------------------------------------------------------------------


def test_pass_rate_of_a_key_an_evaluation_lacks_is_na_not_zero():
    # was 0.0 for c, ranked last (rank 3)
    t = _na_table()
    cmp = mk.compare_metrics(t, [mk.pass_rate(key="correct")], by="eval")
    table = cmp.table.set_index("group")
    assert np.isnan(table.loc["c", "value"]) and table.loc["c", "n"] == 0
    assert pd.isna(table.loc["c", "rank"]) and not table.loc["c", "best_group"]
    assert sorted(table.loc[["a", "b"], "rank"].tolist()) == [1, 2]
    assert any("'c'" in n and "missing (NA)" in n for n in cmp.notes)
    frame = t.to_pandas() if hasattr(t, "to_pandas") else t
    a = frame[frame["eval"] == "a"]
    assert table.loc["a", "value"] == pytest.approx((a["correct"] >= 1).mean())


def test_rows_of_an_na_key_are_left_out_of_that_key_not_counted_as_0():
    t = _na_table()
    ab = t[t["eval"] != "c"]
    # aggregate over rows of several evaluations: was 17/48 for 'correct' (c's NA as 0)
    out = mk.aggregate(t)
    assert out["correct"] == pytest.approx(ab["correct"].mean())
    assert out["reward"] == pytest.approx(t["reward"].mean())
    # a group that mixes evaluations: the metrics read only the rows that have the key
    mixed = t.assign(group=np.where(t["eval"] == "b", "b", "a+c"))
    table = mk.compare_metrics(mixed, [mk.pass_rate(key="correct"), mk.quantile(0.5,
                               key="correct")], by="group").table
    row = table[(table["group"] == "a+c") & (table["metric"] == "pass_rate@1[correct]")].iloc[0]
    a = t[t["eval"] == "a"]
    assert row["value"] == pytest.approx((a["correct"] >= 1).mean()) and row["n"] == 16


def test_every_public_analysis_on_a_table_with_an_na_key():
    t = _na_table()
    b = mk.breakdown(t, value="correct").set_index("candidate")
    assert np.isnan(b.loc["c", "mean"]) and b.loc["c", "n"] == 0
    assert "missing (NA)" in b.loc["c", "note"]
    with pytest.raises(mk.StatsError, match=r"missing \(NA\) for every trial of 'c'"):
        mk.compare_runs(t, "a", "c", value="correct")
    assert mk.compare_runs(t, "a", "b", value="correct").n_tasks == 8
    cmp = mk.compare_metrics(t, "mean").table
    assert set(cmp.loc[cmp["group"] == "c", "metric"]) == {"mean"}  # c has no 'correct'
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", mk.PassAtKSkipped)  # two keys: not Harbor's pass@k
        pk = mk.pass_at_k(t, value="correct")
    assert set(pk.table["candidate"]) == {"a", "b"}
    assert any("'c'" in note and "missing (NA)" in note for note in pk.notes)
    assert mk.aggregate(t, by="candidate")["c"] == {"mean": t.loc[t["eval"] == "c",
                                                                    "reward"].mean()}
    ct = mk.ranking.candidate_table(t, ["correct"]).set_index("candidate")
    assert np.isnan(ct.loc["c", "correct"]) and ct.loc["c", "correct_n"] == 0
    pytest.importorskip("ipywidgets")
    tuner = mk.widgets.tune_spec(t, accuracy="correct")
    assert set(tuner.ranking["candidate"]) == {"a", "b"}
    assert "no 'correct' at all for c" in tuner.message.value.replace("&#x27;", "'")


# -- 2. one default, one vocabulary ------------------------------------------------------------


def test_every_public_analysis_on_a_trials_from_frame_table():
    df, t = _tidy()
    # compare_runs: was TypeError "boolean value of NA is ambiguous" (by="agent", all NA)
    r = mk.compare_runs(t, "m1", "m2")
    per_task = df.pivot(index="id", columns="model", values="ok")
    assert r.n_tasks == 12
    assert r.difference.estimate == pytest.approx((per_task["m1"] - per_task["m2"]).mean())
    b = mk.breakdown(t).set_index("candidate")
    assert b.loc["m1", "mean"] == pytest.approx(df.loc[df["model"] == "m1", "ok"].mean())
    cmp = mk.compare_metrics(t, ["mean"]).table.set_index("group")
    assert cmp.loc["m2", "value"] == pytest.approx(df.loc[df["model"] == "m2", "ok"].mean())
    assert set(mk.pass_at_k(t).table["candidate"]) == {"m1", "m2"}
    assert mk.aggregate(t, by="candidate")["m1"] == {"mean": b.loc["m1", "mean"]}
    assert list(mk.ranking.candidate_table(t, ["ok"])["candidate"]) == ["m1", "m2"]
    # the tuner: was "column 'accuracy' is not in the frame" with its defaults
    pytest.importorskip("ipywidgets")
    tuner = mk.widgets.tune_spec(t)
    assert tuner.columns == ("ok", "total_ms", None)  # no cost recorded: not measured
    assert set(tuner.ranking["candidate"]) == {"m1", "m2"}


def test_default_grouping_is_candidate_and_eval_stays_harbors(job_in_progress):
    # breakdown grouped by eval, compare_runs by agent, compare_metrics into one group and
    # pass_at_k by eval before
    t = mk.read_harbor_job(job_in_progress)
    assert "candidate" in mk.breakdown(t).columns
    assert set(mk.compare_metrics(t, ["mean"]).table["group"]) == {CLAUDE, CODEX}
    assert set(mk.pass_at_k(t).harbor) == {CLAUDE, CODEX}
    by_eval = mk.pass_at_k(t, by="eval").harbor
    assert set(by_eval) == {"claude-code__claude-sonnet-4-5__my-dataset",
                            "codex__gpt-5__my-dataset"}
    assert mk.job_metrics(t) == mk.aggregate(t, by="eval")  # Harbor's contract: per eval


def test_a_table_without_candidate_is_refused_naming_by_and_columns():
    df = pd.DataFrame({"agent": ["x", "x", "y", "y"], "task_name": ["t1", "t2"] * 2,
                       "reward": [1.0, 0.0, 1.0, 1.0]})
    for call in (lambda: mk.breakdown(df), lambda: mk.compare_runs(df, "x", "y"),
                 lambda: mk.ranking.candidate_table(df, ["reward"])):
        with pytest.raises(mk.StatsError, match=r"by='candidate' is not a column.*columns "
                           r"are \['agent', 'task_name', 'reward'\]"):
            call()
    assert mk.compare_runs(df, "x", "y", by="agent").n_tasks == 2
    # compare_metrics on a frame without candidates: one group, and it says so
    cmp = mk.compare_metrics(df, ["mean"])
    assert cmp.table["group"].tolist() == ["all"] and cmp.by is None
    assert any("no 'candidate' column" in note for note in cmp.notes)
    pytest.importorskip("ipywidgets")
    with pytest.raises(mk.MetrickitError, match=r"by='candidate' is not a column"):
        mk.widgets.tune_spec(df.rename(columns={"reward": "accuracy"}))


# -- 3. pairs are pairs -------------------------------------------------------------------------


def test_a_null_source_is_its_own_namespace_never_nan():
    # was the label nan for every source-less row: two tasks merged into one
    df = pd.DataFrame({"id": ["x", "y", "x", "x", "y", "x"], "src": [None, None, "s"] * 2,
                       "m": ["a"] * 3 + ["b"] * 3, "ok": [1, 0, 1, 0, 0, 1]})
    t = mk.trials_from_frame(df, task="id", reward="ok", model="m", source="src", agent=None)
    labels = task_labels(t, "task_name").tolist()
    assert labels == ["x", "y", "s/x"] * 2 and "nan" not in " ".join(labels)
    assert mk.breakdown(t, by="model")["n_tasks"].tolist() == [3, 3]
    r = mk.compare_runs(t, "a", "b", by="model")
    assert r.n_tasks == 3 and sorted(r.tasks["task_name"]) == ["s/x", "x", "y"]


def _tb1_and_harbor() -> tuple[pd.DataFrame, dict[str, str]]:
    """The same five tasks run under Terminal-Bench 1 (source terminal-bench-core) and under
    Harbor (source terminal-bench, two tasks renamed)."""
    tasks = ["hello-world", "fix-permissions", "sqlite-index", "grep-logs", "nginx-conf"]
    harbor_names = {"fix-permissions": "fix_permissions", "nginx-conf": "nginx_conf"}
    tb1 = pd.DataFrame({"task": tasks, "agent": "terminus", "model": "m",
                        "src": "terminal-bench-core", "ok": [1, 0, 1, 1, 0]})
    harbor = pd.DataFrame({"task": [harbor_names.get(x, x) for x in tasks],
                           "agent": "terminus-2", "model": "m", "src": "terminal-bench",
                           "ok": [1, 1, 1, 1, 1]})
    tables = [mk.trials_from_frame(d, task="task", reward="ok", agent="agent", model="model",
                                   source="src") for d in (tb1, harbor)]
    mapping = {f"terminal-bench/{harbor_names.get(x, x)}": f"terminal-bench-core/{x}"
               for x in tasks}
    return mk.concat_trials(tables), mapping


def test_task_map_pairs_tasks_of_different_sources_explicitly():
    t, mapping = _tb1_and_harbor()
    a, b = "terminus · m", "terminus-2 · m"
    assert set(t["candidate"]) == {a, b}
    # different sources never pair by themselves
    with pytest.raises(mk.StatsError, match=r"no 'task_name' in common.*task_map="):
        mk.compare_runs(t, a, b)
    r = mk.compare_runs(t, a, b, task_map=mapping)
    assert r.n_tasks == 5 and r.only_a == [] and r.only_b == []
    assert r.difference.estimate == pytest.approx(-2 / 5)
    assert r.tasks.set_index("task_name").loc["terminal-bench-core/nginx-conf", "task_b"] == (
        "terminal-bench/nginx_conf")
    # a callable works the same; a partial mapping pairs only what it maps
    def rename(label: str) -> str:
        return label.replace("terminal-bench/", "terminal-bench-core/").replace("_", "-")

    assert mk.compare_runs(t, a, b, task_map=rename).difference == r.difference
    part = mk.compare_runs(t, a, b, task_map=dict(list(mapping.items())[:3]))
    assert part.n_tasks == 3 and len(part.only_a) == 2
    assert part.only_b == ["terminal-bench/grep-logs", "terminal-bench/nginx_conf"]
    assert any("paired on the 3 task(s) both ran" in note for note in part.notes)
    with pytest.raises(mk.StatsError, match="task_map gave None"):
        mk.compare_runs(t, a, b, task_map=lambda label: None)


def test_a_difference_of_rates_stays_within_minus_one_and_one():
    # was [-1.10, +1.77]: the paired t interval over 3 tasks, for a difference of 0/1 rates
    df = pd.DataFrame({"id": ["q1", "q2", "q3"] * 2, "model": ["m1"] * 3 + ["m2"] * 3,
                       "ok": [1, 1, 0, 0, 1, 0]})
    t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    d = mk.compare_runs(t, "m1", "m2", by="model").difference
    raw = stats.ttest_1samp([1, 0, 0], 0).confidence_interval(0.95)
    assert raw.high > 1 and raw.low < -1  # the plain t interval would leave the range
    assert (d.low, d.high) == (-1.0, 1.0)
    pairs = mk.compare_metrics(t, ["mean"], by="model").pairwise
    assert (pairs["ci_low"] >= -1).all() and (pairs["ci_high"] <= 1).all()


def test_pairwise_comparisons_pair_on_the_tasks_both_ran():
    # was n_tasks = the union (15) and the difference of means over different tasks
    rng = np.random.default_rng(5)
    rows = [{"id": f"t{i}", "cand": "a", "ok": int(rng.integers(0, 2))} for i in range(10)]
    rows += [{"id": f"t{i}", "cand": "b", "ok": int(rng.integers(0, 2))}
             for i in [*range(5), *range(10, 15)]]
    t = mk.trials_from_frame(pd.DataFrame(rows), task="id", reward="ok", candidate="cand")
    cmp = mk.compare_metrics(t, ["mean"], by="eval")
    pair = cmp.pairwise.iloc[0]
    assert (pair["n_tasks"], pair["n_only_a"], pair["n_only_b"]) == (5, 5, 5)
    runs = mk.compare_runs(t, "a", "b", by="eval")
    assert runs.n_tasks == 5
    # one attempt per task: the pairwise test is the paired t test over the common tasks
    assert pair["difference"] == pytest.approx(runs.difference.estimate)
    assert pair["pvalue"] == pytest.approx(runs.pvalue)
    assert any("compared on the tasks both ran" in note for note in cmp.notes)
