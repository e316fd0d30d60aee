"""Hostile and odd inputs to the plots and the report (issue #25): names that look like
mathtext or matplotlib's hidden labels, output names Markdown links break on, a refused
output, many tasks, and several saved trial tables at once."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from plot_checks import drawn_texts
from report_page import parse

import metrickit as mk
from metrickit.cli import main as cli
from metrickit.errors import MetrickitError
from metrickit.reporting import html, plots
from metrickit.reporting.html import report

DOLLARS = ["grep-$\\w+$", "kill-$$-pid", "ckpt-$x_$"]


def _trials(names, tasks, seed=0, *, cost=True):
    rng = np.random.default_rng(seed)
    rows = [{"task": t, "who": n, "reward": int(rng.random() < 0.3 + 0.2 * i),
             "ms": float(rng.uniform(1e3, 9e3)), "usd": float(rng.uniform(0.01, 0.2))}
            for i, n in enumerate(names) for t in tasks for _ in range(2)]
    return mk.trials_from_frame(pd.DataFrame(rows), task="task", candidate="who", reward="reward",
                                latency_ms="ms", cost_usd="usd" if cost else None)


@pytest.fixture(scope="module")
def dollar_trials():
    return _trials(DOLLARS, ["sed-$1$", "$HOME-task", "plain", "a$b$c"])


def _texts(artist):
    fig = getattr(artist, "figure", artist)
    texts = [d.text for d in drawn_texts(fig)]
    plt.close(fig)
    return " ".join(texts)


def test_dollar_names_are_drawn_literally_in_every_plot(dollar_trials):
    drawn = {
        "bars": plots.candidate_bars(dollar_trials),
        "heatmap": plots.task_heatmap(dollar_trials),
        "tradeoff": plots.tradeoff(dollar_trials, x="total_ms", y="reward"),
        "distribution": plots.reward_distribution(dollar_trials),
        "summary": plots.summary(dollar_trials),
    }
    for kind, artist in drawn.items():
        text = _texts(artist)
        for name in DOLLARS:
            assert name in text, (kind, name, text)
    heat = _texts(plots.task_heatmap(dollar_trials))
    assert "sed-$1$" in heat and "$HOME-task" in heat and "a$b$c" in heat


def test_dollar_metric_and_group_names_are_literal_and_underscore_names_stay_in_legends():
    runs = mk.examples.load("runs")
    comparison = mk.compare_metrics(
        runs, {"_strict": mk.pass_rate(1.0, key="correctness"), "$mean$": "mean",
               "_hidden": "mean"}, by="_source")
    for draw in (plots.metric_intervals, plots.rank_bump):
        ax = draw(comparison)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        if draw is plots.metric_intervals:
            assert legend == list(dict.fromkeys(comparison.table["metric"]))
            assert legend[0] == "_strict" and legend[-1].startswith("_hidden")
        else:
            assert len(legend) == len(set(comparison.table["group"]))
        text = _texts(ax)
        assert "$mean$" in text or draw is plots.metric_intervals
    table = pd.DataFrame({"metric": ["m", "m", "n", "n"], "group": ["_a", "_b", "_a", "_b"],
                          "value": [0.1, 0.2, 0.3, 0.1], "rank": [2, 1, 1, 2],
                          "ci_low": [0.0] * 4, "ci_high": [0.5] * 4})
    for draw in (plots.rank_bump, plots.metric_intervals):
        ax = draw(table)
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert legend == (["_a", "_b"] if draw is plots.rank_bump else ["m", "n"])
        plt.close(ax.figure)


def test_the_report_of_dollar_names_writes_them_as_they_are(dollar_trials, tmp_path):
    page = parse(report(dollar_trials, tmp_path / "r.html"))
    names = {r["candidate"][0] for r in page.rows("headline")}
    assert names == set(DOLLARS)


@pytest.mark.parametrize("name", ["my report.md", "report (1).md", "50% [draft] #2.md"])
def test_markdown_image_links_resolve_for_any_output_name(tmp_path, name):
    trials = _trials(["a", "b"], ["t1", "t2", "t3"])
    out = report(trials, tmp_path / name)
    links = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", out.read_text(encoding="utf-8"))
    assert len(links) >= 3
    for link in links:
        assert " " not in link and "(" not in link and ")" not in link, link
        assert (out.parent / unquote(link)).read_bytes().startswith(b"\x89PNG")


def test_a_refused_output_writes_nothing_and_computes_nothing(tmp_path, monkeypatch):
    trials = _trials(["a", "b"], ["t1", "t2"])
    computed = []
    monkeypatch.setattr(html, "build_sections",
                        lambda *a, **k: computed.append(1) or pytest.fail("computed"))
    target = tmp_path / "new" / "deeper" / "report.pdf"
    with pytest.raises(MetrickitError, match=r"\.pdf is neither"):
        report(trials, target)
    assert not (tmp_path / "new").exists() and not computed
    assert cli(["report", str(mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00"),
                "-o", str(tmp_path / "cli" / "r.txt")]) == 1
    assert not (tmp_path / "cli").exists()


def _many_tasks(n_tasks, n_candidates=4, seed=0):
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.3, 0.8, n_candidates)
    hard = rng.uniform(-0.4, 0.4, n_tasks)
    p = np.clip(skill[None, :] - hard[:, None], 0, 1)
    ok = (rng.random((n_tasks, n_candidates)) < p).astype(int)
    return pd.DataFrame({
        "task_name": np.repeat([f"task-{i:06d}" for i in range(n_tasks)], n_candidates),
        "candidate": np.tile([f"model-{j}" for j in range(n_candidates)], n_tasks),
        "reward": ok.ravel(),
    })


def test_the_heatmap_of_many_tasks_is_bounded_and_says_how_it_chose():
    df = _many_tasks(1_500)
    grid = plots.task_grid(df)
    assert grid.values.shape[0] <= plots.HEATMAP_ROWS and grid.n_tasks == 1_500
    assert grid.tasks.sum() == 1_500  # every task is in one row
    assert "1,500 tasks" in grid.detail and "hardest" in grid.detail
    assert "discriminating" in grid.detail
    # the 20 hardest tasks have their own rows, at the bottom (easiest first)
    means = df.groupby("task_name")["reward"].mean()
    hardest = set(means.sort_values(kind="stable").index[:20])
    single = [r for r, k in zip(grid.rows, grid.tasks, strict=True) if k == 1]
    assert hardest <= set(single) and set(grid.rows[-20:]) == hardest
    assert len(single) == 40 and grid.values.shape[0] == plots.HEATMAP_ROWS
    ax = plots.task_heatmap(df)
    height = ax.figure.get_size_inches()[1] * ax.figure.dpi
    assert height < 1_600, height
    assert len(ax.get_yticklabels()) == grid.values.shape[0]
    assert "1,500 tasks" in ax.get_title(loc="left")
    plt.close(ax.figure)
    few = plots.task_grid(_many_tasks(30))
    assert few.values.shape[0] == 30 and not few.detail


def test_the_report_of_many_tasks_has_a_bounded_heatmap(tmp_path):
    df = _many_tasks(800, n_candidates=3)
    trials = mk.trials_from_frame(df, task="task_name", candidate="candidate",
                                  reward="reward")
    out = report(trials, tmp_path / "many.html")
    page = parse(out)
    _, *rows = page.tables["heatmap"]
    assert len(rows) <= plots.HEATMAP_ROWS
    assert "800 tasks: the 20 hardest" in " ".join(page.text)


def test_two_saved_trial_tables_report_together(tmp_path):
    jobs = mk.examples.path("harbor_jobs")
    paths = []
    for i, job in enumerate(["2025-06-02__10-00-00", "2025-06-03__14-30-00"]):
        trials = mk.read_harbor_job(jobs / job, progress=False)
        paths.append(tmp_path / f"t{i}.csv")
        trials.to_csv(paths[-1], index=False)
    out = tmp_path / "ab.html"
    assert cli(["report", *map(str, paths), "-o", str(out)]) == 0
    both = pd.concat([pd.read_csv(p) for p in paths])
    assert len(parse(out).rows("headline")) == both["candidate"].nunique()
    for i, who in enumerate([["x", "y"], ["z", "w"]]):
        pd.DataFrame({"task_name": ["t1", "t2"] * 2, "candidate": np.repeat(who, 2),
                      "reward": [1, 0, 1, 1]}).to_json(tmp_path / f"{i}.jsonl",
                                                       orient="records", lines=True)
    out = tmp_path / "jsonl.html"
    assert cli(["report", str(tmp_path / "0.jsonl"), str(tmp_path / "1.jsonl"),
                "-o", str(out)]) == 0
    assert {r["candidate"][0] for r in parse(out).rows("headline")} == {"x", "y", "z", "w"}


def test_constant_cost_draws_no_colour_bar_and_no_negative_zero():
    trials = _trials(["a", "b", "c"], ["t1", "t2", "t3"], seed=3)
    trials["cost_usd"] = 0.0
    ax = plots.tradeoff(trials, x="total_ms", y="reward")
    assert len(ax.figure.axes) == 1, "a colour bar for one cost"
    assert "$0 for every candidate" in ax.get_title(loc="left")
    text = _texts(ax)
    assert "−0.000" not in text and "-0.000" not in text and "-$" not in text
    zero = _trials(["a", "b"], ["t1", "t2"])
    zero["reward"] = 0.0
    ax = plots.candidate_bars(zero)
    assert ax.get_xlim()[0] >= 0
    assert not any(t.get_text().startswith(("−", "-")) for t in ax.get_xticklabels())
    plt.close(ax.figure)


def test_the_dashed_line_joins_only_the_front_of_the_two_axes():
    # b is slow and bad but cheapest: on the 3-D front, not on the 2-D one
    df = pd.DataFrame({"task": ["t1", "t2", "t3", "t4"] * 3,
                       "who": np.repeat(["a", "b", "c"], 4),
                       "reward": [1, 1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0],
                       "ms": [1e3] * 4 + [9e3] * 4 + [2e3] * 4,
                       "usd": [0.5] * 4 + [0.01] * 4 + [0.2] * 4})
    trials = mk.trials_from_frame(df, task="task", candidate="who", reward="reward",
                                  latency_ms="ms", cost_usd="usd")
    ax = plots.tradeoff(trials, x="total_ms", y="reward")
    line = next(ln for ln in ax.get_lines() if ln.get_linestyle() == "--")
    xs = set(np.round(line.get_xdata(), 6))
    assert xs == {round(1e3 / 1e3, 6)}, xs  # a alone: fastest and best
    plt.close(ax.figure)


def test_labels_keep_the_model():
    names = ["terminus-2 · anthropic/claude-opus-4.5", "terminus-2 · claude-sonnet-4-5",
             "codex · gpt-5-mini", "terminus-2 · qwen/qwen3-coder"]
    labels = plots.short_labels(names)
    for label, model in zip(labels, ["claude-opus-4.5", "claude-sonnet-4-5", "gpt-5-mini",
                                     "qwen3-coder"], strict=True):
        assert label.endswith(model) and "…" not in label, labels


def test_the_demo_tables_use_one_time_unit_per_column(demo_report):
    page = demo_report.page
    for table in ("headline", "pareto", "costs-table"):
        cells = [r["time / trial"][0] for r in page.rows(table)]
        units = {c.split()[-1] for c in cells if c != "missing"}
        assert len(units) == 1, (table, cells)


def test_a_time_column_mixing_seconds_and_minutes_reads_in_one_unit(tmp_path):
    df = pd.DataFrame({"task": ["t1", "t2", "t3"] * 2, "who": ["a"] * 3 + ["b"] * 3,
                       "reward": [1, 0, 1, 1, 1, 0],
                       "ms": [72_600.0] * 3 + [132_000.0] * 3, "usd": [0.1] * 6})
    trials = mk.trials_from_frame(df, task="task", candidate="who", reward="reward",
                                  latency_ms="ms", cost_usd="usd")
    page = parse(report(trials, tmp_path / "t.html"))
    for table in ("headline", "pareto", "costs-table"):
        cells = [r["time / trial"][0] for r in page.rows(table)]
        assert len({c.split()[-1] for c in cells}) == 1, (table, cells)  # not 72.6 s, 2.2 min
    assert sorted(r["time / trial"][0] for r in page.rows("headline")) == ["132.0 s", "72.6 s"]


def test_long_notes_are_not_cut(tmp_path):
    # one candidate with trials lacking the value: a long note in the headline
    trials = _trials(["a", "b"], ["t1", "t2", "t3"])
    trials.loc[trials.index[:2], "reward"] = np.nan
    trials.loc[trials.index[:2], "_kind_reward"] = "missing"
    page = parse(report(trials, tmp_path / "n.html"))
    notes = [r["note"][0] for r in page.rows("headline") if "note" in r and r["note"][0]]
    assert all("…" not in n for n in notes)


def test_a_report_path_needs_no_existing_folder(tmp_path):
    out = report(_trials(["a", "b"], ["t1", "t2"]), tmp_path / "x" / "y" / "r.md")
    assert out.is_file() and (Path(out.parent) / "r_files").is_dir()
