"""How the report draws its plots: offscreen (pyplot never imported), one draw per PNG,
and point labels placed beside their markers without adjustText's solver, clear of each
other. Speed itself is measured in benchmarks/bench_report.py, not here."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from plot_checks import outside, overlapping

import metrickit as mk
from metrickit.reporting import html, plots


def _fresh(code: str) -> str:
    """stdout of ``code`` run in a new interpreter (nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def _crowded() -> pd.DataFrame:
    """Six candidates, three of them nearly on one point: their labels must move apart."""
    rows = []
    for i, (name, ms, p) in enumerate([("alpha-long-model-name", 1000, 0.50),
                                       ("beta-long-model-name", 1010, 0.51),
                                       ("gamma-long-model-name", 1020, 0.50),
                                       ("delta", 4000, 0.8), ("epsilon", 9000, 0.3),
                                       ("zeta", 6000, 0.6)]):
        for t in range(20):
            rows.append({"task": f"t{t}", "who": name, "ok": int((t * 7 + i) % 20 < 20 * p),
                         "ms": ms + 10 * t})
    return pd.DataFrame(rows)


def test_the_report_never_imports_pyplot_nor_adjusttext() -> None:
    out = _fresh("""
        import sys, tempfile
        import pandas as pd
        import metrickit as mk
        from metrickit.reporting.html import report
        rows = [{"task": f"t{t}", "who": w, "ok": int((t + i) % 3 > 0), "ms": 1000.0 + 40 * t
                 + 5 * i} for i, w in enumerate(["one-model", "two-model", "three-model"])
                for t in range(12)]
        trials = mk.trials_from_frame(pd.DataFrame(rows), task="task", candidate="who",
                                      reward="ok", latency_ms="ms")
        report(trials, tempfile.mkdtemp() + "/r.html")
        print(sorted(m for m in ("matplotlib.pyplot", "adjustText") if m in sys.modules))
    """)
    assert out == "[]"


def test_offscreen_figures_are_not_pyplots() -> None:
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    df = _crowded()
    before = set(plt.get_fignums())
    with plots.offscreen():
        ax = plots.candidate_bars(df, column="ok", by="who")
    assert isinstance(ax.figure.canvas, FigureCanvasAgg)
    assert set(plt.get_fignums()) == before  # pyplot does not hold it: nothing to close
    outside_ax = plots.candidate_bars(df, column="ok", by="who")
    try:
        assert len(plt.get_fignums()) == len(before) + 1  # outside it, a notebook shows it
    finally:
        plt.close(outside_ax.figure)


def test_a_figure_is_drawn_once_for_its_png(monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.figure import Figure

    with plots.offscreen():
        ax = plots.candidate_bars(_crowded(), column="ok", by="who")
    draws = []
    original = Figure.draw

    def counted(self: Figure, renderer: object) -> None:
        draws.append(renderer)
        original(self, renderer)

    monkeypatch.setattr(Figure, "draw", counted)
    png, width, height = html._png(ax)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert (width, height) == tuple(round(v) for v in ax.figure.get_size_inches() * 100)
    assert len(draws) == 1  # savefig draws a constrained figure twice


def test_crowded_labels_sit_beside_their_points_clear_of_each_other() -> None:
    from matplotlib.collections import PathCollection

    with plots.offscreen():
        ax = plots.tradeoff(_crowded(), x="ms", y="ok", color=None, by="who", cluster="task")
    fig = ax.figure
    assert overlapping(fig) == [] and outside(fig) == []
    labels = {int(t.get_gid()): t for t in ax.texts if t.get_gid() is not None}
    assert len(labels) == 6  # every name kept
    dots = next(c for c in ax.collections if isinstance(c, PathCollection))
    points = ax.transData.transform(dots.get_offsets())
    renderer = fig.canvas.get_renderer()
    near = 0
    for i, text in labels.items():
        box = text.get_window_extent(renderer)
        px, py = points[i]
        gap = max(box.x0 - px, px - box.x1, box.y0 - py, py - box.y1, 0.0)
        assert gap < 170, (text.get_text(), gap)  # the farthest spot tried is 160 px out
        near += gap < 20  # beside its marker (at most the largest ring's radius away)
    assert near >= 4


def test_build_sections_draws_its_figures_offscreen() -> None:
    import matplotlib.pyplot as plt

    trials = mk.trials_from_frame(_crowded(), task="task", candidate="who", reward="ok",
                                  latency_ms="ms")
    before = set(plt.get_fignums())
    context = html.build_sections(trials)
    blocks = [b for s in context["sections"] for b in s.blocks]
    figures = [b for b in blocks if isinstance(b, html.Figure)]
    assert [f.name for f in figures] == ["candidates", "tradeoff"]
    # the heatmap is a table of cells in HTML; its PNG is drawn only when asked (Markdown)
    heatmap = next(b for b in blocks if isinstance(b, html.Heatmap))
    figures.append(heatmap.draw())
    assert all(f.png[:8] == b"\x89PNG\r\n\x1a\n" for f in figures)
    assert set(plt.get_fignums()) == before


def test_the_reports_figures_are_laid_out_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bar chart is laid out by its draw; the trade-off by its label placement, and then
    drawn in that layout (plots.keep_layout): two constrained layouts, where the draw of the
    trade-off used to run a third."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    runs: list[object] = []
    execute = ConstrainedLayoutEngine.execute

    def counted(self: ConstrainedLayoutEngine, fig: object) -> object:
        runs.append(fig)
        return execute(self, fig)

    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", counted)
    trials = mk.trials_from_frame(_crowded(), task="task", candidate="who", reward="ok",
                                  latency_ms="ms")
    context = html.build_sections(trials)
    figures = [b for s in context["sections"] for b in s.blocks if isinstance(b, html.Figure)]
    assert [f.name for f in figures] == ["candidates", "tradeoff"]
    assert all(f.png[:8] == b"\x89PNG\r\n\x1a\n" for f in figures)
    assert len(runs) == 2 and runs[0] is not runs[1]


def _hex(rgb) -> str:
    r, g, b = (round(float(v) * 255) for v in rgb[:3])
    return f"#{r:02x}{g:02x}{b:02x}"


def test_the_html_heatmap_is_the_plots_grid_in_the_plots_colours(tmp_path) -> None:
    from report_page import parse

    df = _crowded()
    df = df[~((df["who"] == "delta") & df["task"].isin(["t3", "t4"]))]  # two cells unmeasured
    trials = mk.trials_from_frame(df, task="task", candidate="who", reward="ok",
                                  latency_ms="ms")
    page = parse(html.report(trials, tmp_path / "r.html"))
    header, *body = page.tables["heatmap"]
    frame = mk.trials_from_frame(df, task="task", candidate="who", reward="ok")
    grid = plots.task_grid(frame, by="candidate", value="ok")
    image = plots.task_heatmap(frame, by="candidate", value="ok", grid=grid).get_images()[0]
    painted = image.to_rgba(image.get_array())  # the plot's own colour of every cell
    assert [h for h, _ in header[1:]] == plots.short_labels([str(c) for c in grid.columns])
    assert [row[0][0] for row in body] == grid.rows
    styles = page.attrs["heatmap"][1:]
    grey = 0
    for i, row in enumerate(body):
        for j, (text, _) in enumerate(row[1:]):
            v = grid.values[i, j]
            assert text == ("" if v != v else f"{v:.2f}")
            style = styles[i][j + 1]["style"] or ""
            assert style.startswith(f"background:{_hex(painted[i, j])}"), (i, j, style)
            grey += v != v
    assert grey == 2


def test_an_html_report_never_draws_the_heatmap(tmp_path, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the HTML report drew the heatmap")

    monkeypatch.setattr(plots, "task_heatmap", refuse)
    trials = mk.trials_from_frame(_crowded(), task="task", candidate="who", reward="ok")
    assert 'id="heatmap"' in html.report(trials, tmp_path / "r.html").read_text()
    with pytest.raises(AssertionError, match="drew the heatmap"):
        html.report(trials, tmp_path / "r.md")  # Markdown has no coloured cells: a PNG
