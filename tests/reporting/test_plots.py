"""Plots return their Axes, draw what the data says, and read well in a report: one style,
short labels, units from the data, and no text that overlaps or is cut off, on data shaped
like a real agent benchmark (tests/benchmark_like.py)."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from benchmark_like import benchmark_cases, benchmark_trials
from plot_checks import drawn_texts, outside, overlapping

import metrickit as mk
from metrickit.reporting import plots


def _comparison():
    df = mk.read_rewards([{"r": 1}, {"r": 0}, {"r": 1}, {"r": 1}, {"r": 0.5}, None])
    df["agent"] = ["a", "b", "a", "b", "a", "b"]
    return mk.compare_metrics(df, {"mean": "mean", "strict": mk.pass_rate(1.0)}, by="agent")


@pytest.fixture(scope="module")
def cases():
    return benchmark_cases(seed=0)


@pytest.fixture(scope="module")
def trials():
    return benchmark_trials(seed=0)


@pytest.fixture(scope="module")
def runs_comparison():
    runs = mk.examples.load("runs")
    return mk.compare_metrics(
        runs, {"harbor mean": "mean", "strict": mk.pass_rate(1.0, key="correctness")},
        by="_source",
    )


def _clean(fig):
    return overlapping(fig), outside(fig)


def test_metric_intervals_uses_given_axes():
    cmp = _comparison()
    _, ax = plt.subplots()
    assert plots.metric_intervals(cmp, ax=ax) is ax
    lines = [c for c in ax.containers]
    assert len(lines) == 2  # one errorbar container per metric
    ys = sorted(np.round(lines[0].lines[0].get_ydata(), 6).tolist())
    assert ys == sorted(np.round(cmp.table[cmp.table.metric == "mean"]["value"], 6).tolist())


def test_rank_bump_plots_ranks():
    cmp = _comparison()
    ax = plots.rank_bump(cmp)
    assert len(ax.get_lines()) == 2  # one line per group
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # rank 1 at the top


def test_every_plot_takes_ax_and_returns_it(cases, trials):
    cmp = _comparison()
    calls = [
        lambda ax: plots.metric_intervals(cmp, ax=ax),
        lambda ax: plots.rank_bump(cmp, ax=ax),
        lambda ax: plots.reward_distribution(cases, column="accuracy", ax=ax),
        lambda ax: plots.candidate_bars(cases, column="accuracy", ax=ax),
        lambda ax: plots.task_heatmap(trials, by="model", ax=ax),
    ]
    for call in calls:
        _, ax = plt.subplots(layout="constrained")
        assert call(ax) is ax


def test_the_style_applies_inside_and_leaves_rcparams_alone(cases):
    before = dict(matplotlib.rcParams)
    ax = plots.candidate_bars(cases, column="accuracy")
    assert dict(matplotlib.rcParams) == before
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
    assert ax.title.get_fontsize() == plots.STYLE["axes.titlesize"]
    assert ax.get_yticklabels()[0].get_fontsize() == plots.STYLE["ytick.labelsize"]
    # an Axes made outside the style gets the same look
    _, own = plt.subplots()
    plots.candidate_bars(cases, column="accuracy", ax=own)
    assert not own.spines["top"].get_visible()


def test_short_labels():
    assert plots.short_labels(["/x/runs/flaky.jsonl", "/x/runs/steady.jsonl.gz"]) == [
        "flaky", "steady"]
    assert plots.short_labels(["openrouter/a/m1", "openrouter/b/m2"]) == ["a/m1", "b/m2"]
    # a step that would merge two names is skipped
    assert plots.short_labels(["a/run.jsonl", "b/run.jsonl"]) == ["a/run.jsonl", "b/run.jsonl"]
    long = ["openrouter/qwen/qwen3-coder-480b-a35b-instruct", "openrouter/openai/gpt-5"]
    # too long: the provider goes first, so the model stays whole
    assert plots.short_labels(long) == ["qwen3-coder-480b-a35b-instruct", "gpt-5"]
    short = plots.short_labels(long, width=24)
    assert len(short[0]) == 24 and short[0].startswith("qwen3") and short[0].endswith("instruct")
    assert "…" in short[0] and short[1] == "gpt-5"


@pytest.mark.parametrize(
    ("values", "label", "scale"),
    [([250, 800], "latency (ms)", 1.0), ([1_500, 40_000], "latency (s)", 1e3),
     ([360_000, 1_320_000], "latency (min)", 6e4), ([9e6, 2e7], "latency (h)", 3.6e6)],
)
def test_time_units_follow_the_data(values, label, scale):
    unit = plots.unit_for("latency_ms", values)
    assert (unit.label, unit.scale) == (label, scale)
    assert unit(values)[0] == pytest.approx(values[0] / scale)


def test_money_keeps_the_digits_that_matter():
    unit = plots.unit_for("cost_usd")
    assert [unit.format(v) for v in (0.0, 0.012, 0.25, 1.5, 250.0)] == [
        "$0", "$0.012", "$0.25", "$1.50", "$250"]


def test_tradeoff_reads_minutes_and_dollars_without_offsets(cases):
    ax = plots.tradeoff(cases)
    fig = ax.figure
    fig.canvas.draw()
    assert ax.get_xlabel().startswith("latency (min)")
    assert ax.xaxis.get_offset_text().get_text() == ""
    ticks = [float(t.get_text()) for t in ax.get_xticklabels() if t.get_text()]
    assert min(ticks) >= 5 and max(ticks) <= 30  # minutes, not 1e6 ms
    colourbar = fig.axes[-1]
    money = [t.get_text() for t in colourbar.get_yticklabels() if t.get_text()]
    assert money and all(t.startswith("$") for t in money)
    # every candidate is named, without the shared openrouter/ prefix
    names = [t.get_text() for t in ax.texts if t.get_text()]
    assert len(names) == cases["candidate"].nunique()
    assert not any(n.startswith("openrouter/") for n in names)
    assert "task-clustered" in ax.get_title(loc="left") and "95% CI" in ax.get_title(loc="left")


@pytest.mark.slow
def test_no_plot_has_overlapping_or_cut_off_text(cases, trials, runs_comparison):
    figures = {}
    figures["tradeoff"] = plots.tradeoff(cases).figure
    best = cases.groupby("candidate")["accuracy"].mean().idxmax()
    figures["tradeoff best"] = plots.tradeoff(cases, highlight=best).figure
    figures["reward_distribution"] = plots.reward_distribution(cases, column="latency_ms").figure
    figures["candidate_bars"] = plots.candidate_bars(cases, column="accuracy").figure
    figures["task_heatmap"] = plots.task_heatmap(trials, by="model").figure
    figures["summary"] = plots.summary(trials, by=["agent", "model"])
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    plots.metric_intervals(runs_comparison, ax=axes[0])
    plots.rank_bump(runs_comparison, ax=axes[1])
    figures["compare_metrics"] = fig
    for name, figure in figures.items():
        assert _clean(figure) == ([], []), name


def test_best_label_does_not_touch_its_star(cases):
    best = cases.groupby("candidate")["accuracy"].mean().idxmax()
    ax = plots.tradeoff(cases, highlight=best)
    star = next(c for c in ax.collections if c.get_label() == "best")
    (x, y), = star.get_offsets()
    fig = ax.figure
    texts = drawn_texts(fig)
    cx, cy = ax.transData.transform((x, y))
    radius = np.sqrt(320) / 2 * fig.dpi / 72
    for t in texts:
        if t.artist.axes is ax and t.artist in ax.texts:
            b = t.box
            assert not (b.x0 < cx + radius and b.x1 > cx - radius
                        and b.y0 < cy + radius and b.y1 > cy - radius), t.text


def test_tradeoff_labels_are_placed_in_the_layout_that_is_drawn(cases):
    """The spots are measured in pixels after a layout; the draw lays the figure out again.
    A label that stuck out of the Axes before it was placed once narrowed the Axes in the
    first layout (0.789 of the figure's width against 0.812 drawn, on these cases)."""
    best = cases.groupby("candidate")["accuracy"].mean().idxmax()
    ax = plots.tradeoff(cases, highlight=best)
    placed = [a.get_position(original=True).bounds for a in ax.figure.axes]
    ax.figure.canvas.draw()
    drawn = [a.get_position(original=True).bounds for a in ax.figure.axes]
    assert np.allclose(drawn, placed, rtol=0, atol=1e-3), (drawn, placed)  # a pixel: 1.3e-3


def test_a_kept_layout_is_drawn_where_the_labels_were_placed_and_not_laid_out_again(
        cases, monkeypatch):
    """The report draws the trade-off once in the layout its labels were placed in
    (``keep_layout``): one constrained layout instead of two, the same Axes, every label
    still inside the Axes and off every other label in the drawn picture."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    runs = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute",
                        lambda self, fig: (runs.append(fig), execute(self, fig))[1])
    best = cases.groupby("candidate")["accuracy"].mean().idxmax()
    ax = plots.tradeoff(cases, highlight=best)
    placed = [a.get_position(original=True).bounds for a in ax.figure.axes]
    assert len(runs) == 1  # placing the labels laid it out
    assert plots.keep_layout(ax.figure)
    ax.figure.canvas.draw()
    assert len(runs) == 1  # the draw did not lay it out again
    drawn = [a.get_position(original=True).bounds for a in ax.figure.axes]
    assert drawn == placed
    inside = ax.get_window_extent()
    boxes = [t.get_window_extent() for t in ax.texts if t.get_text()]
    assert len(boxes) == cases["candidate"].nunique()
    for i, box in enumerate(boxes):
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, ax.texts[i].get_text()
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, ax.texts[i].get_text()
        assert not any(box.overlaps(other) for other in boxes[:i]), ax.texts[i].get_text()


def test_keep_layout_leaves_a_figure_whose_labels_were_not_placed(cases):
    """A bar chart places no labels: it keeps its layout engine, and is laid out when drawn."""
    ax = plots.candidate_bars(cases, column="accuracy")
    engine = ax.figure.get_layout_engine()
    assert not plots.keep_layout(ax.figure)
    assert ax.figure.get_layout_engine() is engine


def test_distribution_legend_sits_outside_the_boxes(cases):
    ax = plots.reward_distribution(cases, column="accuracy")
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1 - 1
    labels = [t.get_text() for t in ax.get_yticklabels()]
    means = cases.groupby("candidate", sort=False)["accuracy"].mean()
    order = plots.short_labels(list(means.sort_values(kind="stable").index))
    assert labels == order  # highest mean at the top


def test_titles_say_what_was_computed_without_doubled_brackets(runs_comparison, cases):
    ax = plots.metric_intervals(runs_comparison)
    title = ax.get_title(loc="left")
    assert "95% CI" in title and "Wilson" in title
    assert [t.get_text() for t in ax.get_xticklabels()] == ["flaky", "spiky", "steady"]
    for text in drawn_texts(ax.figure):
        assert not re.search(r"\)\s*\(", text.text), text.text
    bars = plots.candidate_bars(cases, column="accuracy")
    assert "clustered" in bars.get_title(loc="left") and "95% CI" in bars.get_title(loc="left")


def test_candidate_bars_are_sorted_with_ties_in_gold(cases):
    ax = plots.candidate_bars(cases, column="accuracy")
    widths = [p.get_width() for p in ax.patches]
    assert widths == sorted(widths, reverse=True)
    means = cases.groupby("candidate")["accuracy"].mean().sort_values(ascending=False)
    assert widths == pytest.approx(means.to_list())
    colours = {matplotlib.colors.to_hex(p.get_facecolor()) for p in ax.patches}
    assert colours <= {plots.BEST.lower(), plots.TIED.lower(), plots.NEUTRAL.lower()}
    first = matplotlib.colors.to_hex(ax.patches[0].get_facecolor())
    assert first in (plots.BEST.lower(), plots.TIED.lower())


def test_heatmap_greys_unmeasured_cells_and_sorts_tasks(trials):
    holed = trials.copy()
    holed.loc[holed["model"] == holed["model"].iloc[0], "reward"] = np.nan
    ax = plots.task_heatmap(holed, by="model")
    image = ax.get_images()[0]
    values = image.get_array()
    assert np.ma.getmaskarray(values).any()  # NaN cells stay masked, drawn in the 'bad' grey
    assert image.get_cmap().get_bad()[:3] == pytest.approx((0.85, 0.85, 0.85))
    row_means = np.nanmean(np.ma.filled(values.astype(float), np.nan), axis=1)
    assert np.all(np.diff(row_means) <= 1e-12)  # easiest task first


def test_heatmap_rows_stay_distinct_when_long_task_labels_share_start_and_end():
    frame = pd.DataFrame({
        "task": ["terminal-bench-core/fix-git-merge-conflict",
                 "terminal-bench-mini/fix-git-merge-conflict"] * 2,
        "candidate": ["a", "a", "b", "b"], "reward": [1.0, 0.0, 1.0, 1.0]})
    ax = plots.task_heatmap(frame, value="reward", by="candidate", task="task")
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert len(set(rows)) == 2, rows


@pytest.mark.slow
def test_summary_draws_the_overview(trials):
    fig = plots.summary(trials, by=["agent", "model"])
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert any(t.startswith("Mean reward per model") for t in titles)
    assert any(t.startswith("Reward vs time per trial (min)") for t in titles)
    assert any(t.startswith("Mean reward per task and model") for t in titles)
    assert len(fig.axes) == 5  # three panels and two colourbars


def test_summary_without_a_candidate_column_says_what_to_pass():
    import pandas as pd

    with pytest.raises(mk.MetrickitError, match="pass by="):
        plots.summary(pd.DataFrame({"task_name": ["t"], "reward": [1.0]}))


# -- candidates: the default column, the rows that count, and one number per quantity ---------

GROUPING = ("reward_distribution", "candidate_bars", "task_heatmap", "tradeoff", "summary",
            "candidate_means")


def test_every_plot_that_groups_defaults_to_the_candidate_column():
    import inspect

    for name in GROUPING:
        assert inspect.signature(getattr(plots, name)).parameters["by"].default == "candidate", name
    assert plots.TradeoffOptions().by == "candidate"


def test_a_table_without_the_candidate_column_names_by_and_its_columns(trials):
    assert "candidate" not in trials.columns
    calls = {
        "reward_distribution": lambda: plots.reward_distribution(trials),
        "candidate_bars": lambda: plots.candidate_bars(trials),
        "task_heatmap": lambda: plots.task_heatmap(trials),
        "tradeoff": lambda: plots.tradeoff(trials, x="total_ms", y="reward"),
        "summary": lambda: plots.summary(trials),
        "candidate_means": lambda: plots.candidate_means(trials, ["reward"]),
    }
    assert set(calls) == set(GROUPING)
    for name, call in calls.items():
        with pytest.raises(mk.MetrickitError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"{name}: by='candidate' is not a column"), message
        assert "pass by=" in message and "'task_name'" in message and "'model'" in message
    plt.close("all")


def test_running_trials_are_not_drawn():
    """A running trial has no result: counted_trials leaves it out of every plot (its reward
    cell would otherwise pull the mean of 'b' on task 't2' from 1 to 0.5)."""
    frame = pd.DataFrame({
        "candidate": ["a", "a", "b", "b", "b"], "task_name": ["t1", "t2", "t1", "t2", "t2"],
        "reward": [1.0, 0.0, 0.0, 1.0, 0.0], "total_ms": [1.0, 2.0, 3.0, 4.0, 5.0],
        "_status": ["ok", "ok", "ok", "ok", "running"]})
    ax = plots.task_heatmap(frame)
    values = np.ma.filled(ax.get_images()[0].get_array().astype(float), np.nan)
    columns = [t.get_text() for t in ax.get_xticklabels()]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert values[rows.index("t2"), columns.index("b")] == 1.0
    means = plots.candidate_means(frame, ["reward", "total_ms"]).set_index("candidate")
    assert means.loc["b", "n"] == 2 and means.loc["b", "reward"] == 0.5
    bars = plots.candidate_bars(frame, column="reward")
    assert sorted(p.get_width() for p in bars.patches) == [0.5, 0.5]
    plt.close("all")


def test_p_front_does_not_depend_on_the_order_of_the_columns(cases):
    """The demo's table lists reward first; the trade-off plot asks for (x, y, colour): each
    candidate's P(front) is the same number in both."""
    kw = {"maximize": ("accuracy",), "minimize": ("latency_ms", "cost_usd")}
    table = plots.candidate_means(cases, ["accuracy", "latency_ms", "cost_usd"], **kw)
    other = plots.candidate_means(cases, ["latency_ms", "cost_usd", "accuracy"], **kw)
    assert list(other.columns[:6]) == ["candidate", "n", "n_tasks", "latency_ms",
                                       "latency_ms_low", "latency_ms_high"]
    assert table["p_front"].tolist() == other["p_front"].tolist()
    assert 0 < table["p_front"].min() < 1 or table["p_front"].nunique() > 1


def test_tradeoff_labels_print_the_tables_p_front_with_the_reports_formatter(cases):
    from metrickit.reporting.numbers import share

    table = plots.candidate_means(cases, ["accuracy", "latency_ms", "cost_usd"])
    ax = plots.tradeoff(cases, options=plots.TradeoffOptions(max_labels=100))
    names = dict(zip(plots.short_labels(list(table["candidate"])), table["p_front"],
                     strict=True))
    labelled = 0
    for text in ax.texts:
        match = re.fullmatch(r"(.+) \((\d+(?:\.\d+)?%)\)", text.get_text())
        if match:
            assert match.group(2) == share(names[match.group(1)]), text.get_text()
            labelled += 1
    assert labelled >= 3
    # given the table (means=), the plot draws exactly those numbers
    shifted = table.assign(p_front=0.996)
    ax = plots.tradeoff(cases, means=shifted, options=plots.TradeoffOptions(max_labels=100))
    shown = [t.get_text() for t in ax.texts if t.get_text().endswith(")")]
    assert shown and all(t.endswith(" (99.6%)") for t in shown), shown
    with pytest.raises(mk.MetrickitError, match="means= lacks"):
        plots.tradeoff(cases, means=table.drop(columns=["accuracy_low"]))
    plt.close("all")


@pytest.mark.slow
def test_summary_says_which_candidates_pool_runs(trials):
    from metrickit._core.identity import candidate_summary

    pooled = trials.assign(run=np.where(trials["attempt"] % 2 == 0, "job-1", "job-2"),
                           candidate=trials["model"])
    pooled.loc[pooled["model"] == pooled["model"].iloc[0], "run"] = "job-1"
    facts = candidate_summary(pooled)
    assert facts["pooled"].sum() == len(facts) - 1
    fig = plots.summary(pooled)
    footer = " ".join(fig.get_supxlabel().split())
    assert footer.startswith("pooled from several runs with identical recorded configurations:")
    names = dict(zip(facts["candidate"], plots.short_labels(list(facts["candidate"])),
                     strict=True))
    for name, n_runs, is_pooled in facts[["candidate", "n_runs", "pooled"]].itertuples(
            index=False):
        assert (f"{names[name]} ({n_runs})" in footer) == bool(is_pooled), name
    assert _clean(fig) == ([], [])
    plain = plots.summary(trials.assign(candidate=trials["model"], run="job-1"))
    assert plain.get_supxlabel() == ""  # nothing pooled: no footer
    plt.close("all")
