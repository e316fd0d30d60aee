"""read_lm_eval_samples on the output of a real, offline ``lm_eval --log_samples`` run: lm-eval's
``dummy`` model on two tiny task YAMLs over a local JSON file (``dataset_path: json``, no
download), one multiple-choice task (acc, acc_norm) and one generation task with two filters
(exact_match under ``strict`` and ``loose``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

import metrickit as mk
from metrickit.errors import TrialSourceError
from metrickit.io.lm_eval_samples import read_lm_eval_samples

sys.path.insert(0, str(Path(__file__).parent))
from lm_eval_fixture import DOCS, run_lm_eval
from trial_schema_check import assert_trial_schema

pytestmark = pytest.mark.slow  # the session fixture runs lm_eval (~10-15 s, mostly imports)

@pytest.fixture(scope="session")
def output(tmp_path_factory: pytest.TempPathFactory, shared_tmp: object) -> Path:
    return run_lm_eval(tmp_path_factory.mktemp("lm_eval"), once=shared_tmp)


def test_rows_and_rewards_match_lm_evals_own_files(output: Path) -> None:
    trials = read_lm_eval_samples(output)
    (results_file,) = output.rglob("results_*.json")
    results = json.loads(results_file.read_text())
    assert len(trials) == 2 * len(DOCS)
    assert set(trials["model"]) == {results["model_name"]}
    assert set(trials["model_provider"]) == {"dummy"}
    assert set(trials["agent"]) == {"lm-eval"}
    assert trials["agent_version"].isna().all()  # lm-eval is the harness, not the agent
    assert set(trials["harness_version"]) == {results["lm_eval_version"]}
    assert set(trials["job"]) == {results_file.stem.removeprefix("results_")}
    assert set(trials["attempt"]) == {1}
    assert set(trials["_status"]) == {"ok"} and trials["reward_valid"].all()
    assert mk.reward_keys(trials) == ["acc", "acc_norm", "exact_match,loose", "exact_match,strict"]
    for task, keys in (("tiny_mc", ["acc", "acc_norm"]),
                       ("tiny_gen", ["exact_match,strict", "exact_match,loose"])):
        rows = trials[trials["source"] == task]
        assert list(rows["task_name"]) == [str(i) for i in range(len(DOCS))]
        assert set(rows["eval"]) == {f"lm-eval__{results['model_name']}__{task}"}
        for key in keys:
            metric, _, filt = key.partition(",")
            # the per-document values average to lm-eval's own aggregate
            aggregate = results["results"][task][f"{metric},{filt or 'none'}"]
            assert rows[key].mean() == pytest.approx(aggregate)
            assert set(rows["_kind_" + key]) == {"float"}
        other = [k for k in mk.reward_keys(trials) if k not in keys]
        # a metric no document of this task has is NA for the task, never 0
        assert rows[other].isna().all().all()
    gen = trials[trials["source"] == "tiny_gen"]
    assert gen["exact_match,strict"].tolist() == [0.0, 0.0, 1.0, 0.0]  # dummy answers "lol"


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_schema_matches_read_harbor_job(output: Path, backend: str) -> None:
    assert_trial_schema(read_lm_eval_samples(output, backend=backend), backend)


def test_metrics_argument_and_the_errors(output: Path, tmp_path: Path) -> None:
    trials = read_lm_eval_samples(output, metrics=["acc"])
    assert mk.reward_keys(trials) == ["acc"]
    with pytest.raises(TrialSourceError, match="not found"):
        read_lm_eval_samples(output, metrics=["f1"])
    # a corpus metric's per-document entry (bleu logs [reference, prediction]) is refused
    (results_file,) = output.rglob("results_*.json")
    date = results_file.stem.removeprefix("results_")
    copy = tmp_path / "run"
    copy.mkdir()
    (copy / results_file.name).write_text(results_file.read_text())
    (copy / f"samples_tiny_bleu_{date}.jsonl").write_text(
        json.dumps({"doc_id": 0, "filter": "none", "metrics": ["bleu"], "bleu": ["a", "b"]}) + "\n"
    )
    bad = r"samples_tiny_bleu_.*:1: doc_id 0: metric 'bleu'.*metrics="
    with pytest.raises(TrialSourceError, match=bad):
        read_lm_eval_samples(copy)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TrialSourceError, match="no lm-eval results"):
        read_lm_eval_samples(empty)
