"""The Inspect reader fills ``task_group`` from what the log records about sample groups."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import metrickit as mk
from metrickit.errors import TrialSourceError

# slow: the fixture runs two Inspect evals; inspect_ai is not imported at collection
pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("inspect_ai") is None,
                       reason="needs inspect-ai: pip install 'metrickit[inspect]'")]

REALDATA = Path(__file__).resolve().parents[3] / "shared" / "realdata"
REAL_MMLU = REALDATA / "inspect_ai" / "mmlu-summary-choices.eval"


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("inspect_groups")
    subprocess.run(
        [sys.executable, str(Path(__file__).parent / "inspect_groups_fixture.py"), str(folder)],
        check=True, capture_output=True, timeout=300,
    )
    return folder


def test_the_grouped_metrics_key_is_the_group(logs: Path) -> None:
    trials = mk.read_inspect_log(logs / "leveled")
    groups = dict(zip(trials["task_name"], trials["task_group"], strict=True))
    # the scorer's metric is grouped(accuracy(), "level"): level, not subject, is the group
    assert groups == {f"q{i}": f"L{i % 3}" for i in range(6)}


def test_a_subject_key_is_the_group_without_a_grouped_metric(logs: Path) -> None:
    trials = mk.load(logs / "subjects")
    assert sorted(set(trials["task_group"])) == ["algebra", "physics"]
    by_group = mk.breakdown(trials, by=["candidate", "task_group"], value="plain")
    assert len(by_group) == 2 and (by_group["n_tasks"] == 2).all()


def test_an_explicit_key_wins_and_a_bad_value_is_refused(logs: Path) -> None:
    trials = mk.read_inspect_log(logs / "leveled", group="subject")
    assert sorted(set(trials["task_group"])) == ["subj0", "subj1"]
    with pytest.raises(TrialSourceError, match=r"metadata\['topic'\].*\{'x': 0\}.*expected text"):
        mk.read_inspect_log(logs / "subjects", group="topic")
    absent = mk.read_inspect_log(logs / "subjects", group="nowhere")
    assert absent["task_group"].isna().all()


def test_mmlu_subjects_in_a_real_log() -> None:
    if not REAL_MMLU.is_file():
        pytest.skip(f"real Inspect logs not present ({REAL_MMLU})")
    trials = mk.read_inspect_log(REAL_MMLU)
    assert trials["task_group"].tolist() == ["college_physics"]
