"""A table with several reward keys (Harbor's ``correctness`` and ``style``) is reported per
key, as Harbor reports every key; ``value=`` chooses one. The verdict reads
``compare_metrics``' ``best_group`` alone. The gate's result displays in a notebook."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from report_page import parse

import metrickit as mk
from metrickit.cli import main as cli
from metrickit.reporting.html import report
from metrickit.reporting.numbers import fixed

ROOT = Path(__file__).resolve().parents[2]
REALDATA = ROOT.parent / "shared" / "realdata"
MULTI = "2025-06-03__14-30-00"  # the example job whose verifier writes correctness and style


@pytest.fixture(scope="module")
def multi():
    return mk.read_harbor_job(mk.examples.path("harbor_jobs") / MULTI, progress=False)


@pytest.fixture(scope="module")
def every_job():
    return mk.read_harbor_job(mk.examples.path("harbor_jobs"), progress=False)


@pytest.fixture(scope="module")
def multi_page(multi, tmp_path_factory):
    return parse(report(multi, tmp_path_factory.mktemp("multi") / "multi.html"))


def _valued(trials, value):
    done = trials[trials["_status"].astype(str) != "running"]
    return done[done[value].notna()]


def _best_group(valued, value):
    """compare_metrics' confidence set for the best, best-ranked first."""
    table = mk.compare_metrics(valued, {value: value}, by="candidate",
                               cluster="task_name").table
    table = table.sort_values(["rank", "p_best"], ascending=[True, False], kind="stable")
    return list(table.loc[table["best_group"].astype(bool), "group"])


def _verdicts(page):
    text = " ".join(" ".join(page.text).split())
    return text


def test_each_reward_key_gets_its_headline_and_ranking(multi, multi_page):
    assert set(mk.reward_keys(multi)) == {"correctness", "style"}
    for key, table in (("correctness", "headline"), ("style", "headline-style")):
        rows = multi_page.rows(table)
        expected = mk.breakdown(multi, by="candidate", value=key).set_index("candidate")
        assert len(rows) == len(expected)
        for row in rows:
            assert row[f"mean {key}"][0] == fixed(expected.loc[row["candidate"][0], "mean"])
        assert f"against-leader{'' if key == 'correctness' else '-style'}" in multi_page.tables
    text = _verdicts(multi_page)
    for heading in ("Candidates: correctness", "Candidates: style", "pass@k: style",
                    "Tasks: correctness", "Flips between the two best: style"):
        assert heading in text
    assert "ranks them by each reward key in turn: 'correctness' and 'style'" in text or \
        "ranks them by each reward key in turn: 'correctness', 'style'" in text


def test_value_chooses_one_key(tmp_path, capsys):
    out = tmp_path / "one.html"
    job = str(mk.examples.path("harbor_jobs") / MULTI)
    assert cli(["report", job, "-o", str(out), "--value", "correctness"]) == 0
    page = parse(out)
    assert "headline" in page.tables and "headline-style" not in page.tables
    assert not any(t.endswith("-style") for t in page.tables)
    text = _verdicts(page)
    assert "Candidates: correctness" not in text  # one key: the plain one-key headings
    assert "mean style" not in text


def test_a_key_missing_for_some_candidates_is_not_measured_never_zero(every_job, tmp_path):
    page = parse(report(every_job, tmp_path / "all.html"))
    done = every_job[every_job["_status"].astype(str) != "running"]
    for key, table in (("reward", "headline"), ("correctness", "headline-correctness"),
                       ("style", "headline-style")):
        na = {c for c, g in done.groupby("candidate") if g[key].isna().all()}
        assert na, f"the example jobs should have candidates without {key!r}"
        rows = {r["candidate"][0]: r for r in page.rows(table)}
        assert set(rows) == set(done["candidate"].unique())
        for name, row in rows.items():
            cell, classes = row[f"mean {key}"]
            if name in na:
                assert "na" in classes.split() and cell == "missing", (key, name, cell)
                assert row["rank"][1] == "na"  # not ranked
            else:
                assert "na" not in classes.split()
    html = (tmp_path / "all.html").read_text()
    assert 'title="not measured (NA)"' in html


def test_markdown_writes_each_keys_images_once(multi, tmp_path):
    out = report(multi, tmp_path / "multi.md")
    images = sorted(p.name for p in (tmp_path / "multi_files").iterdir())
    assert "candidates.png" in images and "candidates-style.png" in images
    assert "heatmap.png" in images and "heatmap-style.png" in images
    text = out.read_text()
    for name in images:
        assert f"multi_files/{name}" in text


def test_a_single_key_report_keeps_its_anchors(tmp_path):
    job = mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"
    out = report(mk.read_harbor_job(job, progress=False), tmp_path / "one.html")
    text = out.read_text()
    assert 'id="candidates"' in text and 'id="headline"' in text
    assert "Candidates: " not in text and "-reward" not in text
    assert "value 'reward' · generated" in _verdicts(parse(out))


def _trials(rates, n_tasks, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for name, p in rates.items():
        ok = (rng.random(n_tasks) < p).astype(int)
        rows.append(pd.DataFrame({"task_name": [f"t{i}" for i in range(n_tasks)],
                                  "candidate": name, "reward": ok}))
    return mk.trials_from_frame(pd.concat(rows), task="task_name", reward="reward",
                                candidate="candidate")


def test_the_verdict_reads_the_best_group_alone(tmp_path):
    trials = _trials({"a": 0.8, "b": 0.75, "c": 0.6, "d": 0.55, "e": 0.3}, 60)
    page = parse(report(trials, tmp_path / "five.html"))
    best = _best_group(_valued(trials, "reward"), "reward")
    rows = page.rows("headline")
    marks = page.marks["headline"][1:]
    marked = [r["candidate"][0] for r, m in zip(rows, marks, strict=True) if m]
    assert marked == best
    text = _verdicts(page)
    if len(best) == 1:
        assert f"Best: {best[0]} (best at 95 %)." in text
    else:
        assert f"Tied for best: {', '.join(best)} (none is best at 95 %)." in text
    assert ("the candidates that may be best at 95 % confidence (a permutation test over "
            "tasks)") in text
    assert "Holm's adjustment; for a candidate" not in text


@pytest.mark.skipif(not (REALDATA / "otel-bench").is_dir(),
                    reason=f"{REALDATA / 'otel-bench'} is absent (real evaluation output, not "
                    "shipped with the repository)")
def test_otel_bench_is_not_all_tied(tmp_path):
    frame = pd.DataFrame(json.loads((REALDATA / "otel-bench" / "results.json").read_text()))
    trials = mk.trials_from_frame(frame, task="TaskName", reward="Reward", model="ModelName")
    page = parse(mk.report(trials, tmp_path / "otel.html"))
    rows = page.rows("headline")
    marks = page.marks["headline"][1:]
    marked = [r["candidate"][0] for r, m in zip(rows, marks, strict=True) if m]
    assert len(rows) == 14
    assert 1 <= len(marked) < 14
    (key,) = mk.reward_keys(trials)
    done = trials[trials["_status"].astype(str) != "running"]
    table = mk.compare_metrics(done[done[key].notna()], {key: key},
                               by="candidate", cluster="task_name").table
    assert set(marked) == set(table.loc[table["best_group"].astype(bool), "group"])


def _side(name, ok):
    df = pd.DataFrame({"task": [f"t{i}" for i in range(len(ok))], "reward": ok, "who": name})
    return mk.trials_from_frame(df, task="task", reward="reward", candidate="who")


def test_gate_result_displays_headline_and_table():
    base = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 3
    new = [1, 0, 1, 0, 0, 1, 1, 1, 0, 1] * 3
    result = mk.gate(_side("base", base), _side("new", new))
    headline = f"{result.verdict}: new against base, paired by task"
    html = result._repr_html_()
    assert headline in html
    for column in ("value", "verdict", "difference", "low", "high", "margin", "n_tasks",
                   "notes"):
        assert f"<th>{column}</th>" in html
    v = result.values[0]
    assert v.reason.split(":")[0] in html
    assert "<td>30</td>" in html  # n_tasks as an integer
    text = repr(result)
    assert text.splitlines()[0] == f"GateResult: {headline}"
    assert len(text.splitlines()) == 2 + len(result.values)
    assert "metrickit gate" in result._repr_markdown_()
