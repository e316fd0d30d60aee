"""Every result object shows itself the same way in a notebook and a console: the headline,
a small table (counts as integers, labels escaped and shortened), then the notes."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit._core.display import result_html, result_repr, short_names, tidy_counts
from metrickit.compute.ranking import MeanDraws, best_group
from metrickit.compute.stats import group_codes, task_codes

EVIL = "<script>alert(1)</script>"
SHARED = " · dataset=terminal-bench-core"


def _trials(n_tasks: int = 12, attempts: int = 2):
    rows = []
    for t in range(n_tasks):
        for a in range(attempts):
            rows.append({"task": f"t{t}", "model": f"model-{EVIL}", "ok": int((t + a) % 3 != 0)})
            rows.append({"task": f"t{t}", "model": "model-b", "ok": int((t * 7 + a) % 4 == 0)})
    return mk.trials_from_frame(pd.DataFrame(rows), task="task", reward="ok", model="model")


def _check(obj, headline_part: str) -> str:
    out = obj._repr_html_()
    assert headline_part in out
    assert "<table>" in out and "<th>" in out
    assert "<script>" not in out  # labels come from user data: escaped
    # counts print as integers, never 12.0
    assert not re.search(r"<td>\d+\.0</td>", out)
    text = repr(obj)
    assert text.splitlines()[0].startswith(type(obj).__name__ + ":")
    assert len(text.splitlines()) <= 25  # compact: the head of the table only
    return out


@pytest.fixture(scope="module")
def trials():
    return _trials()


def test_run_comparison(trials):
    a, b = sorted(trials["candidate"].unique())
    out = _check(mk.compare_runs(trials, a, b), "paired task(s)")
    assert "&lt;script&gt;" in out
    assert "<td>2</td>" in out  # n_a: two attempts a task, an integer


def test_pass_at_k(trials):
    out = _check(mk.pass_at_k(trials), "pass@k of 2 group(s)")
    assert "<td>12</td>" in out  # n_tasks


def test_pilot_variance(trials):
    out = _check(mk.pilot_variance(trials), "Pilot of 12 task(s)")
    assert "within-task variance" in out


def test_rank_intervals(trials):
    codes, groups = group_codes(trials["candidate"].to_numpy(), "candidate")
    units, _ = task_codes(trials, "auto")
    x = trials["ok"].to_numpy(dtype=float)
    draws = MeanDraws(codes, len(groups), units, n_draws=200, seed=0)
    ri, _ = best_group(list(groups), np.zeros(len(groups)), draws, x)
    assert ri.labels == tuple(groups)
    out = _check(ri, "best")
    assert "<td>1</td>" in out  # a rank


def test_run_store(trials, tmp_path):
    store = mk.RunStore(tmp_path / "runs.duckdb")
    store.add(trials)
    out = store._repr_html_()
    assert "1 run(s)" in out and "<table>" in out
    assert not re.search(r"<td>\d+\.0</td>", out)
    assert repr(store).startswith("RunStore(")


def test_agreement():
    frame = pd.DataFrame({"judge": [1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 3,
                          "human": [1, 0, 1, 0, 0, 1, 0, 1, 1, 1] * 3})
    out = _check(mk.agreement(frame, ["judge", "human"]), "Krippendorff")
    assert "<td>30</td>" in out  # n: cases both rated


def _cases():
    return [{"input": {"q": str(i)}, "expected": {"label": "a"}} for i in range(3)]


def test_contract_report():
    def score(input, output, expected=None):
        if input["q"] == "1":
            return 0.5  # breaks the contract: no side information
        return (1.0, {"feedback": EVIL})

    cases = pd.DataFrame({"input": [{"q": str(i)} for i in range(3)], "output": ["a"] * 3})
    report = mk.check_scorer(score, cases)
    out = _check(report, "contract BROKEN")
    assert out.index("contract BROKEN") < out.index("<table>")  # the headline first
    first_row = out[out.index("<tbody>"):].split("</tr>")[0]
    assert "FAIL" in first_row  # failures first


def test_feedback_report():
    scored = pd.DataFrame({"score": [1.0, 0.0, 0.0, 0.5], "error": [None] * 4,
                           "feedback": ["OK", EVIL, EVIL, "half"]})
    report = mk.feedback_report(scored)
    out = _check(report, "Feedback of 4 cases")
    summary = report.summary()
    assert summary["cases"] == 4 and isinstance(summary["cases"], int)
    assert isinstance(summary["failing"], int) and isinstance(summary["with feedback"], int)
    assert "<td>2</td>" in out  # the count of the repeated feedback


def test_result_html_escapes_and_limits_rows():
    table = pd.DataFrame({"candidate": [f"{EVIL}{i}" for i in range(40)],
                          "n": np.arange(40, dtype=float), "value": np.linspace(0, 1, 40)})
    out = result_html(f"best: {EVIL}", table, [f"note {EVIL}"])
    assert "<script>" not in out and out.count("&lt;script&gt;") == 1 + 15 + 1
    assert out.count("<tr>") == 1 + 15  # header and 15 rows
    assert "25 more row(s)" in out
    assert "<td>14</td>" in out and "14.0" not in out
    text = result_repr("Thing", "best: x", table, ["a note"])
    assert text.startswith("Thing: best: x") and "(1 note(s): see .notes)" in text


def test_tidy_counts_keeps_fractions_and_missing():
    frame = pd.DataFrame({"n": [1.0, np.nan], "n_tasks": [3.0, 4.0], "n_half": [0.5, 1.0],
                          "mean": [1.0, 2.0]})
    out = tidy_counts(frame)
    assert str(out["n"].dtype) == "Int64" and str(out["n_tasks"].dtype) == "Int64"
    assert out["n_half"].dtype == float and out["mean"].dtype == float


def test_short_names_drop_what_every_label_shares_and_keep_the_model():
    names = [f"terminus-2 · anthropic/claude-opus-4.5{SHARED}",
             f"terminus-2 · openai/gpt-5{SHARED}", f"codex · openai/gpt-5{SHARED}"]
    short = short_names(names)
    assert all("terminal-bench-core" not in s for s in short)
    assert any("claude-opus-4.5" in s for s in short) and len(set(short)) == 3
    assert all("…" not in s for s in short)  # nothing cut in the middle


def test_comparison(trials):
    cmp = mk.compare_metrics(trials, {"ok": "ok", "strict": mk.pass_rate(1.0, key="ok")})
    out = _check(cmp, "ok: ")
    assert "rank agreement ok vs strict" in out  # Kendall's tau goes to the notes
    assert "<td>24</td>" in out  # n rows: 12 tasks x 2 attempts, an integer
    one = mk.compare_metrics(trials, {"ok": "ok"})
    assert "none (one metric" in one._repr_html_()  # not an empty frame printed
