"""mk.widgets.browse: the case browser, headless (build the widgets, click, read the HTML)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit.errors import MetrickitError

pytest.importorskip("ipywidgets")

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"


@pytest.fixture(scope="module")
def harbor() -> pd.DataFrame:
    return mk.examples.load("harbor_jobs")


def test_next_and_prev_move_through_every_trial(harbor):
    b = mk.widgets.browse(harbor)
    assert len(b) == len(harbor)
    assert b.widget is not None  # builds the buttons

    b.next_button.click()
    assert b.position == 1
    assert f"task <b>{harbor['task_name'][1]}</b>" in b.page.value
    b.prev_button.click()
    b.prev_button.click()  # stops at the first page
    assert b.position == 0
    b.at.value = 5  # the position box jumps
    assert b.position == 4 and b.page.value == b.html


def test_a_harbor_page_shows_rewards_and_the_trial_folder(harbor):
    b = mk.widgets.browse(harbor)
    page = b.html
    assert "verifier/test-stdout.txt" in page and "result.json" in page
    assert "NA (not in this evaluation)" in page  # correctness/style of a reward-only job
    assert "reward</td><td>1</td>" in page


def test_files_are_read_only_for_the_pages_shown(harbor):
    b = mk.widgets.browse(harbor)
    assert b.sources.reads == 1
    for _ in range(3):
        b.next()
    assert b.sources.reads == 4
    b.go(0)  # cached
    assert b.sources.reads == 4


def test_ten_thousand_trials_read_one_trial(tmp_path):
    folder = tmp_path / "trial"
    (folder / "agent").mkdir(parents=True)
    (folder / "agent" / "log.txt").write_text("step 1\nstep 2\n")
    n = 10_000
    df = pd.DataFrame({"id": [f"t{i % 2500}" for i in range(n)],
                       "model": np.repeat(["a", "b", "c", "d"], n // 4),
                       "ok": np.arange(n) % 3 == 0, "dir": str(folder)})
    t = mk.trials_from_frame(df, task="id", reward="ok", model="model", trial_dir="dir")
    b = mk.widgets.browse(t, show="failures")
    assert len(b) == int((~df["ok"]).sum())
    assert b.sources.reads == 1
    assert b.widget is not None
    b.next_button.click()
    assert b.sources.reads == 2
    assert "agent/log.txt" in b.page.value and "step 2" in b.page.value


def test_failures_are_exceptions_invalid_rewards_or_low_values(harbor):
    b = mk.widgets.browse(harbor, show="failures", value="reward")
    rows = np.concatenate([p[0] for p in b.pages])
    shown = harbor.iloc[rows]
    assert ((shown["reward"] < 0.5) | shown["exception_type"].notna()
            | ~shown["reward_valid"].astype(bool)).all()
    assert (shown["_status"] != "running").all()
    with_exception = harbor.index[harbor["exception_type"].notna()
                                  & (harbor["_status"] != "running")][0]
    assert with_exception in rows
    page = b.go(int(np.flatnonzero(rows == with_exception)[0]))
    assert "<b>exception</b>" in page


def test_flips_side_by_side_with_a_diff(harbor):
    a, other = "terminus-2 · gpt-5", "codex · gpt-5-mini"
    runs = mk.compare_runs(harbor, a, other, value="reward")
    b = mk.widgets.browse(harbor, compare=runs)
    assert len(b) == len(runs.flips)
    page = b.html
    assert page.count("class='mk-side'") == 2
    assert f"<h4>{a}</h4>" in page and f"<h4>{other}</h4>" in page
    assert "diff of the verifier outputs" in page
    assert "pass→fail" in page
    every = mk.widgets.browse(harbor, compare=runs, flips_only=False)
    assert len(every) == runs.n_tasks


def test_a_text_diff_of_two_outputs():
    df = pd.DataFrame({"id": ["q1", "q1"], "model": ["m1", "m2"], "ok": [1, 0],
                       "out": ["the answer\nis 42", "the answer\nis 41"]})
    t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    t["output"] = df["out"]
    b = mk.widgets.browse(t, compare=mk.compare_runs(t, "m1", "m2"))
    assert "<span class='mk-del'>-is 42</span>" in b.html
    assert "<span class='mk-add'>+is 41</span>" in b.html


def test_a_heatmap_cell(harbor):
    task, cand = harbor["task_name"][0], harbor["candidate"][0]
    b = mk.widgets.browse(harbor, cell=(task, cand))
    expected = ((harbor["task_name"] == task) & (harbor["candidate"] == cand)).sum()
    assert len(b) == expected
    with pytest.raises(MetrickitError, match="has no trial"):
        mk.widgets.browse(harbor, cell=("no-such-task", cand))


def test_inspect_sample_messages_and_scores():
    t = mk.examples.load("inspect_logs")
    b = mk.widgets.browse(t)
    page = b.html
    assert "transcript (" in page and "<b>user</b>" in page


def test_unknown_show_is_refused(harbor):
    with pytest.raises(MetrickitError, match="show='broken'"):
        mk.widgets.browse(harbor, show="broken")


def test_real_harbor_job():
    job = REALDATA / "harbor_jobs" / "saud008-tb2.1"
    if not job.is_dir():
        pytest.skip(f"real data not here ({job}): a clone without ../shared/realdata")
    t = mk.load(job)
    b = mk.widgets.browse(t, show="failures")
    assert len(b) == 1
    assert "exception.txt" in b.html and "NonZeroAgentExitCodeError" in b.html


def test_real_inspect_log():
    log = REALDATA / "inspect_ai" / "2025-05-12T20-28-13-04-00_popularity.json"
    if not log.is_file():
        pytest.skip(f"real data not here ({log}): a clone without ../shared/realdata")
    t = mk.load(log)
    b = mk.widgets.browse(t)
    assert b.widget is not None
    b.next_button.click()
    page = b.page.value
    assert "<b>system</b>" in page and "<b>assistant</b>" in page
    assert "match: " in page  # the scorer's value, answer and explanation
