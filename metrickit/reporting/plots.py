"""Matplotlib plots of rewards and metrics, styled for a report.

Every plot function takes data and an optional ``ax=`` and returns the Axes it drew on;
:func:`summary` draws a whole overview figure from a Harbor trial table. Nothing here
imports ipywidgets; :mod:`metrickit.widgets` calls these functions.

What every plot has in common:

* **One look.** Each function draws inside :func:`style` (the :data:`STYLE` rcParams: DejaVu
  Sans at 9 pt, a colour-blind-safe palette, a light grid behind the data, no top/right
  spines). The style applies only while the function runs; your own ``rcParams`` are
  never changed.
* **Short labels.** Candidate names go through :func:`short_labels`: a file path becomes its
  stem (``runs/steady.jsonl`` → ``steady``), a prefix all names share up to a ``/`` is
  dropped (``openrouter/``), and a name longer than 28 characters keeps its start and end
  around an ellipsis. Titles say what was computed (the interval method, the weights).
* **Readable units.** A ``*_ms`` column is shown in ms, s, min or h, whichever suits its
  typical value (:func:`unit_for`); a ``*_usd`` column in dollars with as many decimals as
  the values need (``$0.012``, ``$1.50``). Axes never use an offset like ``1e6``.
* **No overlapping text.** Each point label goes beside its marker where it is clear of
  every marker, every other label and the Axes' edges (else nearby, with a leader line);
  a label with no free spot is left out, and the title says how many were.
* **Candidates, counted once.** Every plot that groups by candidate takes ``by=``
  (default ``"candidate"``, the column every metrickit reader fills) and draws only the
  trials that count (:func:`metrickit._core.frame.counted_trials`: a running trial never
  does). A table without that column is refused with a message naming ``by=`` and the
  columns it has.
* **One number, one text.** A number printed on a plot (a share of draws on the Pareto
  front) goes through :mod:`metrickit.reporting.numbers`, the formatter the report's tables
  use, so a table and a plot never print one quantity two ways.
"""

from __future__ import annotations

import functools
import math
import textwrap
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from metrickit._core.display import LABEL_WIDTH as _LABEL_WIDTH
from metrickit._core.display import ellipsize as _ellipsize
from metrickit._core.display import short_labels
from metrickit.reporting.numbers import share

__all__ = [
    "HEATMAP_ROWS",
    "PALETTE",
    "STYLE",
    "TaskGrid",
    "TradeoffOptions",
    "Unit",
    "candidate_bars",
    "candidate_means",
    "heatmap_colours",
    "heatmap_top",
    "literal",
    "metric_intervals",
    "offscreen",
    "pareto_front",
    "rank_bump",
    "reward_distribution",
    "score_by_limit",
    "score_by_limit_table",
    "short_labels",
    "style",
    "summary",
    "task_grid",
    "task_heatmap",
    "tradeoff",
    "unit_for",
]

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = (
    "#0072B2",
    "#E69F00",
    "#009E73",
    "#CC79A7",
    "#56B4E9",
    "#D55E00",
    "#F0E442",
    "#000000",
)
BEST = "#E69F00"  # the clear best: orange bar, gold star
TIED = "#B8860B"  # tied for best: dark gold
FRONT = "#D55E00"  # the Pareto front
NEUTRAL = "#0072B2"
MUTED = "0.55"

STYLE: dict[str, Any] = {
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.titlelocation": "left",
    "axes.titlepad": 8.0,
    "axes.labelsize": 9.0,
    "axes.grid": True,
    "axes.axisbelow": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.formatter.useoffset": False,
    "grid.alpha": 0.35,
    "grid.linewidth": 0.6,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "legend.fontsize": 8.0,
    "legend.frameon": False,
    "figure.dpi": 100.0,
    "savefig.dpi": 100.0,
    "image.cmap": "viridis",
    # Text from data is drawn as written: a "$" in a task or model name is not mathtext.
    "text.parse_math": False,
}

_CHAR_IN = 0.075  # inches a character of a tick label takes, at the style's 8 pt
_TITLE_WIDTH = 60

F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def style() -> Iterator[None]:
    """Apply :data:`STYLE` (and the :data:`PALETTE` colour cycle) for the duration.

    Every plot function runs inside it. Use it for your own figures to match::

        with plots.style():
            fig, axes = plt.subplots(1, 2, layout="constrained")
    """
    import matplotlib
    from cycler import cycler

    params: dict[str, Any] = {**STYLE, "axes.prop_cycle": cycler(color=list(PALETTE))}
    with matplotlib.rc_context(params):  # type: ignore[arg-type]
        yield


def literal(artist: Any) -> Any:
    """Every text of ``artist``'s figure drawn as written, never as mathtext; returns ``artist``.

    Names come from data (``grep-$\\w+$``, ``kill-$$-pid``), and matplotlib would parse the
    text between two ``$`` as mathtext (and fail on it). :data:`STYLE` turns that off for
    every text made inside :func:`style`; this sweep catches texts made outside it (an Axes
    passed in, a colour bar's), and every plot function ends with it.
    """
    from matplotlib.text import Text

    fig = getattr(artist, "figure", None) or artist
    if hasattr(fig, "findobj"):
        for text in fig.findobj(Text):
            text.set_parse_math(False)
    return artist


def _styled(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with style():
            return literal(fn(*args, **kwargs))

    return wrapper  # type: ignore[return-value]


def _legend(ax: Any, handles: Sequence[Any], labels: Sequence[str], **kwargs: Any) -> Any:
    """A legend of these handles and labels as given: matplotlib leaves out a label that
    starts with ``_`` when it collects them itself, and a name from data may."""
    return ax.legend(list(handles), [str(x) for x in labels], **kwargs)


def _dress(ax: Any, grid: str = "both") -> None:
    """The style's axes settings on an Axes that may have been made outside :func:`style`."""
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_axisbelow(True)
    ax.grid(False)
    if grid:
        ax.grid(True, axis=grid, alpha=STYLE["grid.alpha"], linewidth=STYLE["grid.linewidth"])
    ax.tick_params(labelsize=STYLE["xtick.labelsize"])


_OFFSCREEN: ContextVar[bool] = ContextVar("metrickit_plots_offscreen", default=False)


@contextmanager
def offscreen() -> Iterator[None]:
    """Figures the plot functions make inside are drawn offscreen: a plain
    :class:`matplotlib.figure.Figure` on an Agg canvas, which pyplot never sees.

    Nothing is shown and nothing needs closing (a figure goes when its last reference
    does), and ``matplotlib.pyplot`` is not imported, which saves a script that only
    writes files a tenth of a second. :func:`metrickit.report` draws its plots this way.
    Outside it, a new figure is pyplot's, so a notebook shows it::

        with plots.offscreen():
            ax = plots.candidate_bars(trials)
        ax.figure.savefig("bars.png")
    """
    token = _OFFSCREEN.set(True)
    try:
        yield
    finally:
        _OFFSCREEN.reset(token)


def _axes(ax: Any, figsize: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    if _OFFSCREEN.get():
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
        return fig.add_subplot()
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _set_title(ax: Any, title: str, detail: str = "") -> None:
    """A bold first line and a wrapped detail line, fitted to the Axes' width."""
    width_in = ax.get_position().width * ax.figure.get_figwidth()
    chars = max(30, int(width_in * 72 / (STYLE["axes.titlesize"] * 0.62)))
    lines = [_ellipsize(title, chars)]
    if detail:
        lines += textwrap.wrap(detail, int(chars * 1.1))
    ax.set_title("\n".join(lines), loc="left", fontsize=STYLE["axes.titlesize"])


def _table(comparison: Any) -> Any:
    return comparison.table if hasattr(comparison, "table") else comparison


def _counted(frame: Any, by: str | Sequence[str], where: str) -> Any:
    """The rows of ``frame`` that count (:func:`metrickit._core.frame.counted_trials`:
    running trials never do; a frame without ``_status`` counts whole), after checking
    that it has the ``by`` column(s).

    Raises
    ------
    MetrickitError
        A ``by`` column is missing: the message names ``by=`` and the columns there are.
    """
    import narwhals as nw

    from metrickit._core.frame import counted_trials
    from metrickit.errors import MetrickitError

    nf = nw.from_native(frame, eager_only=True)
    wanted = [by] if isinstance(by, str) else list(by)
    absent = [c for c in wanted if c not in nf.columns]
    if absent:
        hint = (" (metrickit's trial readers fill it; for a table of your own pass by= "
                "naming the column that tells the candidates apart)"
                if "candidate" in absent else "")
        raise MetrickitError(
            f"{where}: by={by!r} is not a column of the table{hint}; columns are "
            f"{list(nf.columns)}"
        )
    return counted_trials(frame).frame


# -- labels and units ------------------------------------------------------------------------

_FILE_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet", ".txt", ".gz", ".zst", ".bz2")


@dataclass(frozen=True)
class Unit:
    """How a column is shown: values are divided by ``scale``; ``label`` names the axis.

    ``money`` marks a dollar column (ticks read ``$0.25``).
    """

    column: str
    label: str
    scale: float = 1.0
    money: bool = False

    def __call__(self, values: Any) -> np.ndarray:
        """The values in this unit."""
        return np.asarray(values, dtype=np.float64) / self.scale

    def format(self, value: float) -> str:
        """One value in this unit, as the ticks show it."""
        return _money(value) if self.money else f"{value:.3g}"


_NAMES = {"latency_ms": "latency", "total_ms": "time per trial", "cost_usd": "cost"}
_TIME_UNITS = (("ms", 1.0), ("s", 1e3), ("min", 6e4), ("h", 3.6e6))


def unit_for(column: str, values: Any = None) -> Unit:
    """The display :class:`Unit` of ``column`` for these values.

    ``*_ms`` columns: ms below 1 s, s below 2 min, min below 2 h, else h (by the median of
    the finite positive values). ``*_usd`` columns: dollars. Other columns unchanged.

    Examples
    --------
    >>> unit_for("latency_ms", [360_000, 1_320_000]).label
    'latency (min)'
    >>> unit_for("cost_usd").label
    'cost ($)'
    """
    x = np.asarray([] if values is None else values, dtype=np.float64).ravel()
    x = x[np.isfinite(x) & (x > 0)]
    if column.endswith("_ms"):
        name = _NAMES.get(column, column[:-3].replace("_", " "))
        typical = float(np.median(x)) if x.size else 0.0
        unit, scale = "ms", 1.0
        for candidate, factor, limit in (("s", 1e3, 1e3), ("min", 6e4, 1.2e5),
                                         ("h", 3.6e6, 7.2e6)):
            if typical >= limit:
                unit, scale = candidate, factor
        return Unit(column, f"{name} ({unit})", scale)
    if column.endswith("_usd"):
        return Unit(column, f"{_NAMES.get(column, column[:-4].replace('_', ' '))} ($)",
                    money=True)
    return Unit(column, column.replace("_", " "))


def _money(value: float) -> str:
    if not np.isfinite(value):
        return ""
    if value == 0:
        return "$0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = 0 if magnitude >= 2 else max(2, 1 - magnitude)
    return f"{'-' if value < 0 else ''}${abs(value):,.{decimals}f}"


def _format_axis(axis: Any, unit: Unit, *, log: bool) -> None:
    """Tick labels in ``unit``: no offset, money as dollars, log axes at 1-2-5 steps."""
    from matplotlib import ticker

    def fmt(value: float, _pos: Any = None) -> str:
        value = 0.0 if abs(value) < 1e-12 else value  # a tick at -1e-17 reads 0
        return _money(value) if unit.money else _tick(value)

    if log:
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(ticker.FuncFormatter(fmt))
        axis.set_minor_formatter(ticker.NullFormatter())
    elif unit.money:
        axis.set_major_formatter(ticker.FuncFormatter(fmt))
    else:
        axis.set_major_formatter(_plain_formatter())


@functools.cache
def _plain_formatter_class() -> Any:
    from matplotlib import ticker

    class PlainFormatter(ticker.ScalarFormatter):
        """Matplotlib's ticks without an offset or a power of ten, and never ``−0.000``."""

        def __init__(self) -> None:
            super().__init__(useOffset=False)
            self.set_scientific(False)

        def __call__(self, x: float, pos: Any = None) -> str:
            text = str(super().__call__(x, pos))
            bare = text.lstrip("-\N{MINUS SIGN}")
            return bare if bare != text and not bare.strip("0.") else text

    return PlainFormatter


def _plain_formatter() -> Any:
    """A new :class:`PlainFormatter` (the class is made on first use: matplotlib loads
    lazily)."""
    return _plain_formatter_class()()


def _constant_limits(set_lim: Callable[..., Any], values: Any, *, bars: bool = False) -> None:
    """Sensible limits for an axis whose values are all one number (matplotlib would span
    ``v ± 5 %``, or −0.05 to 0.05 around 0): 0 to 1 around 0, ``v ± 10 %`` otherwise."""
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if not v.size or np.ptp(v) > 0:
        return
    at = float(v[0])
    if at == 0:
        set_lim(0.0 if bars else -0.04, 1.0)
    else:
        set_lim(*sorted((at * 0.9, at * 1.1)))


def _methods(methods: Any) -> str:
    """The interval methods of a table, without their notes: ``"wilson, t"``."""
    names = {"analytic": "t", "cluster": "t, task-clustered",
             "cluster-wilson": "Wilson, task-clustered", "wilson": "Wilson"}
    seen = dict.fromkeys(str(m).split(" (")[0] for m in methods if isinstance(m, str) and m)
    return ", ".join(names.get(m, m) for m in seen if m != "none")


# -- labels that do not overlap ----------------------------------------------------------------


def _overlap(a: Any, b: Any, pad: float = -1.0) -> bool:
    return (
        min(a.x1, b.x1) - max(a.x0, b.x0) > pad and min(a.y1, b.y1) - max(a.y0, b.y0) > pad
    )


_LEADER: dict[str, Any] = {"arrowstyle": "-", "color": MUTED, "lw": 0.5}
_GAP = 2.0  # pixels between a marker's edge and a label beside it
# Where a label beside its point goes, in order of preference: (dx, dy) in units of the
# marker's radius plus the gap plus half the label, so the label just clears the marker.
_BESIDE = ((0.0, 1.0), (0.0, -1.0), (1.0, 0.0), (-1.0, 0.0),
           (0.75, 0.75), (-0.75, 0.75), (0.75, -0.75), (-0.75, -0.75))


def _marker_boxes(ax: Any, xs: Any, ys: Any, sizes: Any) -> list[Any]:
    """Pixel boxes of markers of ``sizes`` (points², as ``scatter``'s ``s``) at data points."""
    from matplotlib.transforms import Bbox

    centres = ax.transData.transform(np.column_stack([xs, ys]))
    radius = _radii(ax, sizes, len(centres))
    return [
        Bbox([[cx - r, cy - r], [cx + r, cy + r]])
        for (cx, cy), r in zip(centres, radius, strict=True)
        if np.isfinite(cx) and np.isfinite(cy)
    ]


def _radii(ax: Any, sizes: Any, n: int) -> np.ndarray:
    """Marker radii in pixels from areas in points²."""
    radius = np.sqrt(np.asarray(sizes, dtype=float)) / 2 * ax.figure.dpi / 72
    return np.broadcast_to(radius, n)


def _clear(box: Any, inside: Any, taken: list[Any]) -> bool:
    within = (box.x0 >= inside.x0 + 1 and box.x1 <= inside.x1 - 1
              and box.y0 >= inside.y0 + 1 and box.y1 <= inside.y1 - 1)
    return within and not any(_overlap(box, other) for other in taken)


def _box(centre: tuple[float, float], size: tuple[float, float]) -> Any:
    from matplotlib.transforms import Bbox

    (cx, cy), (w, h) = centre, size
    return Bbox([[cx - w / 2, cy - h / 2], [cx + w / 2, cy + h / 2]])


def _spots(point: Any, radius: float, size: tuple[float, float]) -> Iterator[
        tuple[tuple[float, float], bool]]:
    """Centres a label of ``size`` (pixels) may take around ``point``, nearest first, each
    with whether it needs a leader line: beside the marker (:data:`_BESIDE`), then on
    rings of growing radius up to 160 px."""
    w, h = size
    for dx, dy in _BESIDE:
        yield (point[0] + dx * (radius + _GAP + w / 2),
               point[1] + dy * (radius + _GAP + h / 2)), False
    for ring in range(14, 161, 8):
        for angle in np.linspace(0, 2 * np.pi, 24, endpoint=False):
            yield (point[0] + ring * 1.6 * np.cos(angle), point[1] + ring * np.sin(angle)), True


def _place_labels(
    ax: Any, texts: list[Any], xs: Any, ys: Any, sizes: Any
) -> tuple[list[Any], list[Any]]:
    """Place point labels so no two overlap and none covers a marker or leaves the Axes.

    Labels already clear of each other, of every marker and of the Axes' edges stay where
    they are; otherwise :func:`_repair_labels` moves each one that is not, in priority
    order, to the first free spot beside its point, else to the nearest free spot within
    160 px (with a leader line), else leaves it out. The placement is deterministic and
    measures each label once. ``texts`` come in priority order, ``sizes`` are the
    markers' areas (points²) per point. Returns the labels kept and the leader lines.
    """
    if not texts:
        return [], []
    _lay_out(ax.figure)  # the layout settles first: the spots are in pixels
    if _all_clear(ax, texts, _marker_boxes(ax, xs, ys, sizes)):
        return list(texts), []
    arrows: list[Any] = []
    return _repair_labels(ax, texts, xs, ys, sizes, arrows, laid_out=True), arrows


def _all_clear(ax: Any, texts: list[Any], markers: list[Any]) -> bool:
    """Every label inside the Axes and off every marker and every earlier label: what
    :func:`_repair_labels` accepts, so nothing needs to move."""
    renderer = ax.figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken = list(markers)
    for text in texts:
        box = text.get_window_extent(renderer)
        if not _clear(box, inside, taken):
            return False
        taken.append(box)
    return True


def _lay_out(fig: Any) -> None:
    """Put the Axes where the next draw will: the figure's layout engine alone, which is
    what a draw would run first (the artists need not be drawn for their positions); a
    figure without one is drawn without rendering, which settles its limits."""
    engine = fig.get_layout_engine()
    if engine is None:
        fig.draw_without_rendering()
    else:
        engine.execute(fig)
        _LAID_OUT.add(fig)


#: Figures whose layout engine :func:`_lay_out` ran for placing labels, the last change a
#: plot makes to what the layout reads (labels and leader lines take no room in it).
_LAID_OUT: weakref.WeakSet[Any] = weakref.WeakSet()


def keep_layout(fig: Any) -> bool:
    """Draw a figure that :func:`tradeoff` has just returned in the layout its labels were
    placed in, without the draw laying it out again (the same positions, to a hundred
    thousandth of the figure's width; a constrained layout of the trade-off plot takes
    half its drawing time). Returns whether it did; a figure whose labels were not placed
    is left as it is. For a figure drawn once (a PNG): the layout no longer follows a
    change of size or content."""
    if fig not in _LAID_OUT:
        return False
    fig.set_layout_engine("none")  # a placeholder: colorbars keep their constrained kind
    _LAID_OUT.discard(fig)
    return True


def _repair_labels(ax: Any, texts: list[Any], xs: Any, ys: Any, sizes: Any,
                   arrows: list[Any], *, laid_out: bool = False) -> list[Any]:
    """Move a label that sits on a marker or an earlier label, or outside the Axes, to the
    first free spot beside its point, else to the nearest free spot within 160 px with a
    leader line (:func:`_spots`); drop it when none is free. ``laid_out``: the layout is
    already settled. Returns the labels kept."""
    fig = ax.figure
    if not laid_out:
        _lay_out(fig)
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    taken: list[Any] = _marker_boxes(ax, xs, ys, sizes)
    targets = ax.transData.transform(np.column_stack([xs, ys]))
    radii = _radii(ax, sizes, len(targets))
    inverse = ax.transData.inverted()
    kept = []
    for text in texts:
        box = text.get_window_extent(renderer)
        if _clear(box, inside, taken):
            taken.append(box)
            kept.append(text)
            continue
        for arrow in [a for a in arrows if _leads_to(a) is text]:
            arrow.remove()
            arrows.remove(arrow)
        i = int(text.get_gid())
        point = targets[i]
        size = (box.width, box.height)
        spot = next(((centre, lead) for centre, lead in _spots(point, float(radii[i]), size)
                     if _clear(_box(centre, size), inside, taken)), None)
        if spot is None:
            text.remove()
            continue
        centre, lead = spot
        text.set_horizontalalignment("center")
        text.set_verticalalignment("center")
        text.set_position(inverse.transform(centre))
        taken.append(_box(centre, size))
        kept.append(text)
        if lead:
            arrow = ax.annotate("", xy=inverse.transform(point), xytext=text.get_position(),
                                arrowprops={**_LEADER, "patchA": text, "shrinkB": 4})
            arrow.set_in_layout(False)  # inside the Axes, as its label
            arrows.append(arrow)
    return kept


def _leads_to(arrow: Any) -> Any:
    """The label a leader line starts from."""
    return getattr(getattr(arrow, "arrow_patch", arrow), "patchA", None)


# -- comparisons of metric definitions -------------------------------------------------------


@_styled
def metric_intervals(comparison: Any, *, metrics: list[str] | None = None, ax: Any = None) -> Any:
    """Each metric's value per group, with its confidence interval as error bars.

    Groups along the x axis (short labels: file stems for ``_source``), one colour and
    offset per metric, so the reader sees both the value and whether the intervals of two
    groups overlap. The title names the interval method(s).

    Parameters
    ----------
    comparison
        A :class:`~metrickit.compute.metrics.Comparison` or its ``table``.
    metrics
        Which metric labels to show (default: all).
    ax
        Axes to draw on (default: a new figure).

    Returns
    -------
    matplotlib.axes.Axes
    """
    table = _table(comparison)
    labels = metrics or list(dict.fromkeys(table["metric"]))
    groups = list(dict.fromkeys(table["group"]))
    names = short_labels(groups)
    ax = _axes(ax, (max(5.0, 1.0 * len(groups) + 3), 3.8))
    _dress(ax, "y")
    width = 0.8 / max(len(labels), 1)
    x = np.arange(len(groups), dtype=float)
    shown = table[table["metric"].isin(labels)]
    handles = []
    for i, label in enumerate(labels):
        part = table[table["metric"] == label].set_index("group").reindex(groups)
        value = part["value"].to_numpy(dtype=float)
        low = part["ci_low"].to_numpy(dtype=float)
        high = part["ci_high"].to_numpy(dtype=float)
        # No interval (n < 2, or a script metric) stays NaN: no bar, rather than a false 0.
        yerr = np.vstack([value - low, high - value])
        handles.append(ax.errorbar(
            x + (i - (len(labels) - 1) / 2) * width,
            value,
            yerr=yerr,
            fmt="o",
            markersize=4,
            capsize=3,
            color=PALETTE[i % len(PALETTE)],
        ))
    rotate = sum(len(n) for n in names) > 9 * len(names) or len(names) > 6
    ax.set_xticks(x, names, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    by = getattr(comparison, "by", None)
    ax.set_xlabel({"_source": "file"}.get(by, by) if isinstance(by, str) else "group")
    ax.set_ylabel("metric value" if len(labels) > 1 else _ellipsize(str(labels[0]), 40))
    if len(labels) > 1:
        _legend(ax, handles, [_ellipsize(str(m), _LABEL_WIDTH) for m in labels],
                loc="upper left", bbox_to_anchor=(1.01, 1.0))
    methods = _methods(shown.get("ci_method", []))
    _set_title(ax, "Metric value per group", f"mean with 95% CI ({methods})" if methods else "")
    return ax


@_styled
def rank_bump(comparison: Any, *, metrics: list[str] | None = None, ax: Any = None) -> Any:
    """Rank-change (bump) chart: each group's rank under each metric, 1 at the top.

    Lines that cross show where the choice of metric changes the ranking. Groups are
    named by their short labels in the legend.

    Returns
    -------
    matplotlib.axes.Axes
    """
    table = _table(comparison)
    labels = metrics or list(dict.fromkeys(table["metric"]))
    groups = list(dict.fromkeys(table["group"]))
    names = short_labels(groups)
    ax = _axes(ax, (max(5.0, 1.3 * len(labels) + 3), 3.8))
    _dress(ax, "y")
    wide = table.pivot(index="group", columns="metric", values="rank").reindex(groups)[labels]
    x = np.arange(len(labels))
    lines = []
    for i, group in enumerate(groups):
        ranks = wide.loc[group].to_numpy(dtype=float)
        lines += ax.plot(x, ranks, marker="o", linewidth=2, color=PALETTE[i % len(PALETTE)])
    ax.set_xticks(x, [_ellipsize(str(m), _LABEL_WIDTH) for m in labels], rotation=20, ha="right")
    ax.set_yticks(range(1, len(groups) + 1))
    ax.set_ylim(len(groups) + 0.5, 0.5)
    ax.set_ylabel("rank (1 = best)")
    ax.set_xlabel("metric")
    _legend(ax, lines, names, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    _set_title(ax, "Rank under each metric", "lines that cross: the metric changes the order")
    return ax


# -- per-candidate tables --------------------------------------------------------------------


def candidate_means(
    frame: Any,
    columns: list[str],
    *,
    by: str = "candidate",
    cluster: str | None = "auto",
    confidence: float = 0.95,
    maximize: tuple[str, ...] = ("accuracy",),
    minimize: tuple[str, ...] = ("latency_ms", "cost_usd"),
) -> Any:
    """Per-group mean, CI low/high and n of each column, plus ``p_front`` and cost per
    success (a small pandas frame, one row a group): see
    :func:`metrickit.compute.ranking.candidate_table`.

    Intervals are :func:`metrickit.compute.stats.mean_ci`'s default: Wilson for 0/1 columns, t cut
    to the range otherwise, clustered by task (``cluster``) when tasks repeat. NaN values
    (not measured) are left out of that column's mean, and a ``<column>_n`` column then
    says how many were measured. ``p_front`` is over the ``maximize``/``minimize`` columns,
    drawn in that order whatever the order of ``columns``: the table of a call with
    ``["reward", "accuracy", "latency_ms", "cost_usd"]`` and :func:`tradeoff`'s own
    (``[x, y, color]``) give each candidate the same ``p_front``. Only the trials that
    count are used (running trials never are).

    Raises
    ------
    MetrickitError
        ``by`` is not a column.
    """
    from metrickit.compute.ranking import candidate_table

    rows = _counted(frame, by, "candidate_means")
    front = [c for c in (*maximize, *minimize) if c in columns]
    ordered = list(dict.fromkeys([*front, *columns]))
    table = candidate_table(rows, ordered, by=by, cluster=cluster, confidence=confidence,
                            maximize=maximize, minimize=minimize)
    if ordered == list(columns):
        return table
    # the draws follow the canonical order; the table keeps the order asked for
    lead = [c for c in table.columns if c in (by, "n", "n_tasks")]
    body = [name for c in dict.fromkeys(columns)
            for name in (c, f"{c}_low", f"{c}_high", f"{c}_method", f"{c}_n")
            if name in table.columns]
    rest = [c for c in table.columns if c not in lead and c not in body]
    return table[[*lead, *body, *rest]]


def grouped_mean_se(
    codes: np.ndarray, x: np.ndarray, n_groups: int, *, se: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-group count, mean and standard error of ``x`` (NaN left out), by ``bincount``.

    Returns ``(n, mean, se)``; ``se`` is None when not asked for, NaN where n < 2.
    """
    measured = np.isfinite(x)
    n = np.bincount(codes, weights=measured, minlength=n_groups)
    xz = np.where(measured, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(codes, weights=xz, minlength=n_groups) / n
        if not se:
            return n, mean, None
        dev = np.where(measured, (xz - mean[codes]) ** 2, 0.0)
        sq = np.bincount(codes, weights=dev, minlength=n_groups)
        return n, mean, np.where(n > 1, np.sqrt(sq / np.maximum(n - 1, 1) / n), np.nan)


def pareto_front(
    table: Any,
    *,
    maximize: tuple[str, ...] = ("accuracy",),
    minimize: tuple[str, ...] = ("latency_ms", "cost_usd"),
) -> np.ndarray:
    """Boolean mask of the rows no other row dominates (>= on every maximised column,
    <= on every minimised one, and strictly better on at least one)."""
    cols = [c for c in maximize if c in table] + [c for c in minimize if c in table]
    signs = np.array(
        [1.0] * len([c for c in maximize if c in table])
        + [-1.0] * len([c for c in minimize if c in table])
    )
    if not cols:
        return np.ones(len(table), dtype=bool)
    v = np.column_stack([np.asarray(table[c], dtype=float) for c in cols]) * signs
    ge = (v[:, None, :] >= v[None, :, :]).all(axis=2)  # ge[j, i]: j at least as good as i
    gt = (v[:, None, :] > v[None, :, :]).any(axis=2)
    dominated = (ge & gt).any(axis=0)
    return ~dominated


def _spans_decades(values: np.ndarray) -> bool:
    values = values[np.isfinite(values) & (values > 0)]
    return values.size > 1 and values.max() / values.min() >= 30


# -- the trade-off plot ----------------------------------------------------------------------


@dataclass(frozen=True)
class TradeoffOptions:
    """What :func:`tradeoff` draws; its keyword arguments, gathered in one place.

    ``y_higher_is_better=False`` makes ``y`` an error: the front then minimises it too.
    ``max_labels`` caps the candidates labelled by name (front, best and tied first).
    ``marker_room`` (points², as ``scatter``'s ``s``) keeps labels that far from every
    point, for a marker drawn later (the tuner's moving star).
    """

    x: str = "latency_ms"
    y: str = "accuracy"
    color: str | None = "cost_usd"
    size: str | None = None
    by: str = "candidate"
    frontier: bool = True
    highlight: Any = None
    tied: Any = None
    log: str | bool = "auto"
    cluster: str | None = "auto"
    y_higher_is_better: bool = True
    max_labels: int = 16
    marker_room: float = 0.0

    @property
    def extra(self) -> list[str]:
        return [c for c in (self.color, self.size) if c and c not in (self.x, self.y)]

    @property
    def maximize(self) -> tuple[str, ...]:
        return (self.y,) if self.y_higher_is_better else ()

    @property
    def minimize(self) -> tuple[str, ...]:
        y = () if self.y_higher_is_better else (self.y,)
        return tuple(dict.fromkeys([self.x, *self.extra, *y]))

    def logs(self, values: np.ndarray) -> bool:
        return self.log is True or (self.log == "auto" and _spans_decades(values))


@dataclass
class _TradeoffData:
    means: Any
    names: list[str]
    xunit: Unit
    yunit: Unit
    xs: np.ndarray
    ys: np.ndarray
    xerr: np.ndarray
    yerr: np.ndarray
    front: np.ndarray  # on the front of every column (x, y, colour, size)
    front2: np.ndarray  # on the front of the two axes: what the dashed line joins


def _tradeoff_data(frame: Any, o: TradeoffOptions, means: Any = None) -> _TradeoffData:
    if means is None:
        frame = _counted(frame, o.by, "tradeoff")
        means = candidate_means(frame, [o.x, o.y, *o.extra], by=o.by, cluster=o.cluster,
                                maximize=o.maximize, minimize=o.minimize)
    else:
        wanted = [o.by, o.x, o.y, *o.extra, *(f"{c}_{e}" for c in (o.x, o.y)
                                              for e in ("low", "high"))]
        absent = [c for c in wanted if c not in means.columns]
        if absent:
            from metrickit.errors import MetrickitError

            raise MetrickitError(
                f"tradeoff: means= lacks {absent}; pass the candidate_means table of these "
                f"columns (it has {list(means.columns)})"
            )
    xunit, yunit = unit_for(o.x, means[o.x]), unit_for(o.y, means[o.y])
    xs, ys = xunit(means[o.x]), yunit(means[o.y])
    xerr = np.abs(np.vstack([xs - xunit(means[f"{o.x}_low"]), xunit(means[f"{o.x}_high"]) - xs]))
    yerr = np.abs(np.vstack([ys - yunit(means[f"{o.y}_low"]), yunit(means[f"{o.y}_high"]) - ys]))
    front = pareto_front(means, maximize=o.maximize, minimize=o.minimize)
    front2 = pareto_front(means, maximize=o.maximize,
                          minimize=(o.x,) if o.y_higher_is_better else (o.x, o.y))
    return _TradeoffData(means, short_labels(list(means[o.by])), xunit, yunit, xs, ys, xerr,
                         yerr, front, front2)


def _constant(values: Any) -> float | None:
    """The one value of ``values`` when every finite one is the same, else None."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v[0]) if v.size and np.ptp(v) == 0 else None


def _draw_points(ax: Any, d: _TradeoffData, o: TradeoffOptions) -> list[Any]:
    # A missing interval (n < 2) stays NaN: no whisker is drawn, rather than a false 0.
    ax.errorbar(d.xs, d.ys, xerr=d.xerr, yerr=d.yerr, fmt="none", ecolor="0.7", elinewidth=1,
                capsize=2, zorder=1)
    sizes: Any = 60.0
    if o.size:
        s = d.means[o.size].to_numpy(dtype=float)
        sizes = 30 + 170 * (s - s.min()) / (np.ptp(s) or 1.0)
    cunit = unit_for(o.color, d.means[o.color]) if o.color else None
    c = cunit(d.means[o.color]) if cunit is not None and o.color else None
    if cunit is None or c is None or _constant(c) is not None:
        # no colour, or one value for all (the headline says which): no colour bar
        return [ax.scatter(d.xs, d.ys, s=sizes, color=NEUTRAL, zorder=3)]
    log = o.logs(c)
    norm = None
    if log:
        from matplotlib.colors import LogNorm

        norm = LogNorm(vmin=c[c > 0].min(), vmax=c.max())
    points = ax.scatter(d.xs, d.ys, c=c, s=sizes, cmap="viridis", norm=norm, zorder=3,
                        edgecolors="white", linewidths=0.5)
    bar = ax.figure.colorbar(points, ax=ax, pad=0.02, fraction=0.05, aspect=30)
    bar.set_label(cunit.label, labelpad=4)
    bar.outline.set_visible(False)
    _format_axis(bar.ax.yaxis, cunit, log=log)
    bar.ax.tick_params(labelsize=STYLE["ytick.labelsize"])
    return [points]


def _draw_front(ax: Any, d: _TradeoffData, o: TradeoffOptions) -> list[Any]:
    if not o.frontier:
        return []
    # the line joins the front of what the axes show; the rings are the front of every column
    order = np.argsort(d.xs[d.front2], kind="stable")
    ax.plot(d.xs[d.front2][order], d.ys[d.front2][order], color=FRONT, linewidth=1.2,
            linestyle="--", zorder=2, label="Pareto front")
    return [ax.scatter(d.xs[d.front], d.ys[d.front], s=140, facecolors="none", edgecolors=FRONT,
                       linewidths=1.5, zorder=4)]


def _draw_best(ax: Any, d: _TradeoffData, o: TradeoffOptions) -> list[Any]:
    names = list(d.means[o.by])
    drawn = []
    if o.tied is not None and len(o.tied) > 1:
        ringed = np.isin(np.asarray(names, dtype=object), np.asarray(list(o.tied), dtype=object))
        drawn.append(ax.scatter(d.xs[ringed], d.ys[ringed], s=260, facecolors="none",
                                edgecolors=TIED, linewidths=2, zorder=5, label="tied for best"))
    elif o.highlight is not None and o.highlight in names:
        i = names.index(o.highlight)
        drawn.append(ax.scatter([d.xs[i]], [d.ys[i]], s=320, marker="*", color="gold",
                                edgecolors="black", zorder=5, label="best"))
    return drawn


def _label_order(d: _TradeoffData, o: TradeoffOptions) -> list[int]:
    """Which candidates get a name label, most important first: best/tied, front, rest."""
    names = list(d.means[o.by])
    tied = set(o.tied or ()) | ({o.highlight} if o.highlight is not None else set())
    first = [i for i, n in enumerate(names) if n in tied]
    front = [int(i) for i in np.flatnonzero(d.front) if i not in first]
    rest = [int(i) for i in np.argsort(-d.ys if o.y_higher_is_better else d.ys)
            if i not in first and i not in front]
    order = [*first, *front, *rest]
    return order if len(order) <= o.max_labels else [*first, *front][: o.max_labels]


def _marker_sizes(d: _TradeoffData, o: TradeoffOptions) -> np.ndarray:
    """The largest marker (points²) drawn at each candidate: dot, front ring, gold ring, star."""
    sizes = np.full(len(d.xs), max(60.0, o.marker_room))
    if o.size:
        s = d.means[o.size].to_numpy(dtype=float)
        sizes = np.maximum(30 + 170 * (s - s.min()) / (np.ptp(s) or 1.0), o.marker_room)
    if o.frontier:
        sizes = np.where(d.front, np.maximum(sizes, 140.0), sizes)
    names = np.asarray(list(d.means[o.by]), dtype=object)
    if o.tied is not None and len(o.tied) > 1:
        sizes = np.where(np.isin(names, np.asarray(list(o.tied), dtype=object)), 260.0, sizes)
    elif o.highlight is not None:
        sizes = np.where(names == o.highlight, 320.0, sizes)
    return sizes


def _label_points(ax: Any, d: _TradeoffData, o: TradeoffOptions) -> tuple[list[Any], list[Any]]:
    """Name labels placed without overlap; returns the labels kept and their leader lines."""
    order = _label_order(d, o)
    p_front = d.means["p_front"].to_numpy() if "p_front" in d.means else np.full(len(d.xs),
                                                                                 np.nan)
    texts = []
    for i in order:
        pf = p_front[i]
        shown = np.isfinite(pf) and (d.front[i] or pf >= 0.05)
        text = f"{d.names[i]} ({share(pf)})" if shown else d.names[i]
        label = ax.text(d.xs[i], d.ys[i], text, fontsize=7.5, zorder=6, gid=str(i))
        # Placed inside the Axes, a label needs no room of the layout; counted, one that
        # sticks out before it is placed would narrow the Axes in the layout the spots are
        # measured in, and the draw's layout (the label then inside) would widen it again.
        label.set_in_layout(False)
        texts.append(label)
    return _place_labels(ax, texts, d.xs, d.ys, _marker_sizes(d, o))


def _finish_tradeoff(ax: Any, d: _TradeoffData, o: TradeoffOptions) -> None:
    xlog, ylog = o.logs(d.xs), o.logs(d.ys)
    if xlog:
        ax.set_xscale("log")
    if ylog:
        ax.set_yscale("log")
    _format_axis(ax.xaxis, d.xunit, log=xlog)
    _format_axis(ax.yaxis, d.yunit, log=ylog)
    _constant_limits(ax.set_xlim, np.concatenate([d.xs, d.xs - d.xerr[0], d.xs + d.xerr[1]]))
    _constant_limits(ax.set_ylim, np.concatenate([d.ys, d.ys - d.yerr[0], d.ys + d.yerr[1]]))
    better = "" if o.y_higher_is_better else ", lower is better"
    ax.set_xlabel(f"{d.xunit.label}, mean per {o.by}")
    ax.set_ylabel(f"{d.yunit.label}{better}")


def _tradeoff_caption(d: _TradeoffData, o: TradeoffOptions, unlabelled: int) -> str:
    methods = _methods(d.means.get(f"{o.y}_method", []))
    parts = [f"means with 95% CI ({methods})" if methods else "means with 95% CI"]
    if o.frontier and (o.extra and not np.array_equal(d.front, d.front2)):
        over = [d.yunit.label, d.xunit.label, *(unit_for(c).label for c in o.extra)]
        parts.append("ringed: Pareto front of " + ", ".join(x.split(" (")[0] for x in over)
                     + " (% of draws on it); dashed: of the two axes")
    elif o.frontier:
        parts.append("ringed and dashed: Pareto front, % = share of draws on it")
    if o.tied is not None and len(o.tied) > 1:
        parts.append("gold rings: tied for best")
    elif o.highlight is not None:
        parts.append("star: best at 95%")
    if unlabelled:
        parts.append(f"{unlabelled} name(s) left out for space")
    return "; ".join(parts)


@_styled
def tradeoff(
    frame: Any,
    *,
    x: str = "latency_ms",
    y: str = "accuracy",
    color: str | None = "cost_usd",
    size: str | None = None,
    by: str = "candidate",
    frontier: bool = True,
    highlight: Any = None,
    tied: Any = None,
    log: str | bool = "auto",
    cluster: str | None = "auto",
    ax: Any = None,
    options: TradeoffOptions | None = None,
    means: Any = None,
) -> Any:
    """Accuracy against latency (and cost) per candidate, with CI whiskers and the Pareto front.

    Whiskers are 95 % intervals of each mean (clustered by task when tasks repeat; the title
    names the method). The front is estimated: each label carries the candidate's
    probability of being on it over task-clustered draws of the means (``(80%)``), and the
    dashed line joins the candidates on the front of the point estimates. Latency is shown
    in ms, s or min and cost in dollars, whichever reads best (:func:`unit_for`). Names are
    shortened (:func:`short_labels`) and placed beside their points so no two overlap and
    none covers a marker; beyond 16 candidates only the best, tied and front ones are
    named, and the title says how many names were left out.

    Parameters
    ----------
    frame
        One row per case: a ``by`` column and numeric ``x``, ``y`` (and ``color``/``size``).
    frontier
        Mark the candidates no other candidate beats on ``y`` (maximised) and on ``x`` and
        ``color``/``size`` (minimised), and join them with a line.
    highlight
        A candidate to mark with a star as the best (the tuner passes the best when it is
        best at 95 %).
    tied
        Candidates tied for best (none of them is best with confidence): each is ringed in
        gold, and no star is drawn.
    log
        ``"auto"`` puts an axis on a log scale when its values span 30x or more.
    ax
        Axes to draw on (default: a new figure).
    options
        A :class:`TradeoffOptions` with all of the above (and ``y_higher_is_better``,
        ``max_labels``); when given, the other keywords are ignored.
    means
        The :func:`candidate_means` table of ``frame`` for these columns, when it is already
        computed (a report prints it too): the plot then draws those numbers, so the
        table and the plot cannot disagree. Default: computed here from the trials that
        count.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    MetrickitError
        ``by`` is not a column, or ``means`` lacks a column the plot needs.
    """
    o = options or TradeoffOptions(x=x, y=y, color=color, size=size, by=by, frontier=frontier,
                                   highlight=highlight, tied=tied, log=log, cluster=cluster)
    data = _tradeoff_data(frame, o, means)
    ax = _axes(ax, (7.5, 4.8))
    _dress(ax)
    _draw_points(ax, data, o)
    _draw_front(ax, data, o)
    _draw_best(ax, data, o)
    _finish_tradeoff(ax, data, o)
    headline = f"{data.yunit.label} vs {data.xunit.label}".capitalize()
    if o.color:
        cunit = unit_for(o.color, data.means[o.color])
        same = _constant(cunit(data.means[o.color]))
        headline += (f", colour: {cunit.label}" if same is None else
                     f"; {cunit.label.split(' (')[0]} {cunit.format(same)} for every {o.by}")
    _set_title(ax, headline, _tradeoff_caption(data, o, 0))
    kept, arrows = _label_points(ax, data, o)
    for _ in range(3):
        if len(kept) == len(data.xs):
            break
        # The caption now says how many names were left out; that can change the layout,
        # so the labels are checked again.
        _set_title(ax, headline, _tradeoff_caption(data, o, len(data.xs) - len(kept)))
        before = len(kept)
        kept = _repair_labels(ax, kept, data.xs, data.ys, _marker_sizes(data, o), arrows)
        if len(kept) == before:
            break
    return ax


def tradeoff_positions(frame_means: Any, o: TradeoffOptions) -> tuple[np.ndarray, np.ndarray]:
    """Where :func:`tradeoff` puts each candidate, in its display units (for overlays)."""
    xunit = unit_for(o.x, frame_means[o.x])
    yunit = unit_for(o.y, frame_means[o.y])
    return xunit(frame_means[o.x]), yunit(frame_means[o.y])


# -- distributions, bars and heatmaps --------------------------------------------------------


def _columns(frame: Any, columns: dict[str, str], numeric: Sequence[str]) -> Any:
    """A pandas frame of the named columns (numeric ones as float), naming a missing one."""
    import narwhals as nw
    import pandas as pd

    from metrickit.errors import MetrickitError

    nf = nw.from_native(frame, eager_only=True)
    for role, name in columns.items():
        if name not in nf.columns:
            raise MetrickitError(
                f"{role}={name!r} is not a column; columns are {list(nf.columns)}"
            )
    return pd.DataFrame({
        name: nf.get_column(name).cast(nw.Float64).to_numpy() if role in numeric
        else pd.Series(nf.get_column(name).to_list(), dtype=object)
        for role, name in columns.items()
    })


@_styled
def reward_distribution(
    frame: Any, *, column: str = "reward", by: str = "candidate", ax: Any = None
) -> Any:
    """Distribution of a per-case value per candidate: box plots with the mean marked.

    Candidates are sorted by mean, the highest at the top; the legend sits outside the
    axes so it never covers a box. Only the trials that count are drawn.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    MetrickitError
        ``by`` or ``column`` is not a column.
    """
    frame = _counted(frame, by, "reward_distribution")
    df = _columns(frame, {"by": by, "column": column}, numeric=("column",))
    means = df.groupby(by, sort=False)[column].mean().sort_values(kind="stable")
    groups = list(means.index)
    data = [df.loc[df[by] == g, column].dropna().to_numpy() for g in groups]
    unit = unit_for(column, df[column])
    ax = _axes(ax, (6.0, max(3.0, 0.3 * len(groups) + 1.6)))
    _dress(ax, "x")
    ax.boxplot([unit(d) for d in data], orientation="horizontal", widths=0.6,
               flierprops={"markersize": 3}, medianprops={"color": PALETTE[0]})
    dots = ax.scatter(unit(means.to_numpy()), np.arange(1, len(groups) + 1), marker="D",
                      s=18, color=FRONT, zorder=3)
    ax.set_yticks(np.arange(1, len(groups) + 1), short_labels(groups))
    _format_axis(ax.xaxis, unit, log=False)
    ax.set_xlabel(unit.label)
    ax.set_ylabel(by)
    _legend(ax, [dots], ["mean"], loc="lower left", bbox_to_anchor=(1.0, 0.0),
            handletextpad=0.2)
    _set_title(ax, f"{unit.label} per {by}", "box: quartiles and 1.5 IQR; diamond: mean")
    return ax


@_styled
def candidate_bars(
    frame: Any,
    *,
    column: str = "reward",
    by: str = "candidate",
    cluster: str | None = "auto",
    higher_is_better: bool = True,
    best: Sequence[Any] | None = None,
    means: Any = None,
    ax: Any = None,
) -> Any:
    """Mean of ``column`` per candidate as horizontal bars, best at the top, with 95 % CIs.

    The intervals and ties are the tuner's: task-clustered intervals, and the candidates
    tied with the leader (:func:`metrickit.compute.ranking.best_group`) in gold. A single
    clear best is orange. Only the trials that count are drawn.

    Parameters
    ----------
    best
        The candidates tied for best (one name: the clear best), when they are decided
        elsewhere (the report's verdict): the bars are coloured by it, so the plot and the
        verdict cannot disagree. Default: :func:`metrickit.compute.ranking.best_group`.
    means
        The candidates' means and intervals when they are already computed: a table with
        ``by``, ``mean``, ``ci_low``, ``ci_high`` and ``method`` columns
        (:func:`metrickit.compute.stats.breakdown`'s, as the report prints it); needs
        ``best``. The bars then draw those numbers, and nothing is computed here.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    MetrickitError
        ``by`` or ``column`` is not a column.
    """
    if means is not None:
        return _bars(ax, means, column=column, by=by, best=best, cluster=cluster,
                     higher_is_better=higher_is_better)
    from metrickit.compute.ranking import MeanDraws, best_group
    from metrickit.compute.stats import group_codes, grouped_intervals, task_codes

    frame = _counted(frame, by, "candidate_bars")
    df = _columns(frame, {"by": by, "column": column}, numeric=("column",))
    # NA: the reward key is absent from a trial's whole evaluation: no bar, never a 0
    na = df[column].isna().to_numpy()
    lacking = sorted(set(df[by][na].astype(str)) - set(df[by][~na].astype(str)))
    if na.any():
        df = df[~na].reset_index(drop=True)
        frame = _rows(frame, ~na)
    codes, groups = group_codes(df[by], by)
    units, cluster_name = task_codes(frame, cluster)
    x = df[column].to_numpy(dtype=float)
    gi = grouped_intervals(codes, len(groups), x, clusters=units)
    if best is None:
        draws = MeanDraws(codes, len(groups), units, n_draws=500)
        ri, _ = best_group(list(groups), gi.mean, draws, x, higher_is_better=higher_is_better)
        tied = np.asarray(ri.best_group, dtype=bool)
    else:
        chosen = set(best)
        tied = np.array([g in chosen for g in groups], dtype=bool)
    return _draw_bars(ax, list(groups), gi.mean, gi.low, gi.high, list(gi.method), tied,
                      column=column, by=by, cluster_name=cluster_name, lacking=lacking,
                      higher_is_better=higher_is_better)


def _bars(ax: Any, means: Any, *, column: str, by: str, best: Sequence[Any] | None,
          cluster: str | None, higher_is_better: bool) -> Any:
    """:func:`candidate_bars` of a table of means and intervals (``means=``)."""
    import narwhals as nw

    from metrickit.errors import MetrickitError

    table = nw.from_native(means, eager_only=True).to_pandas()
    absent = [c for c in (by, "mean", "ci_low", "ci_high", "method") if c not in table]
    if absent or best is None:
        raise MetrickitError(
            f"candidate_bars: means= needs the columns {by!r}, 'mean', 'ci_low', 'ci_high' "
            f"and 'method' (lacks {absent}) and best= (who is tied for best)" if absent else
            "candidate_bars: means= needs best= (who is tied for best)")
    mean = table["mean"].to_numpy(dtype=float)
    keep = np.isfinite(mean)
    lacking = sorted(str(g) for g in table[by][~keep])
    table = table[keep].reset_index(drop=True)
    groups = list(table[by])
    chosen = set(best)
    tied = np.array([g in chosen for g in groups], dtype=bool)
    methods = [str(m) if isinstance(m, str) else "" for m in table["method"]]
    name = cluster if cluster not in (None, "auto") else ("task" if any(
        "cluster" in m for m in methods) else None)
    return _draw_bars(ax, groups, table["mean"].to_numpy(float),
                      table["ci_low"].to_numpy(float), table["ci_high"].to_numpy(float),
                      methods, tied, column=column, by=by, cluster_name=name, lacking=lacking,
                      higher_is_better=higher_is_better)


def _draw_bars(ax: Any, groups: list[Any], mean_: np.ndarray, low: np.ndarray,
               high: np.ndarray, method: list[str], tied: np.ndarray, *, column: str, by: str,
               cluster_name: str | None, lacking: list[str], higher_is_better: bool) -> Any:
    order = np.argsort(-mean_ if higher_is_better else mean_, kind="stable")
    unit = unit_for(column, mean_)
    clear = int(tied.sum()) == 1
    colours = [(BEST if clear else TIED) if tied[i] else NEUTRAL for i in order]
    names = short_labels([groups[i] for i in order])
    ax = _axes(ax, (max(6.0, 3.5 + max(map(len, names)) * _CHAR_IN),
                    max(2.5, 0.28 * len(groups) + 1.4)))
    _dress(ax, "x")
    y = np.arange(len(groups))
    mean = unit(mean_[order])
    ax.barh(y, mean, color=colours, height=0.7)
    ax.errorbar(mean, y, xerr=np.abs(np.vstack([mean - unit(low[order]),
                                                unit(high[order]) - mean])),
                fmt="none", ecolor="black", elinewidth=1, capsize=2)
    ax.set_yticks(y, names)
    ax.invert_yaxis()
    _format_axis(ax.xaxis, unit, log=False)
    _constant_limits(ax.set_xlim, np.concatenate([[0.0], mean, unit(low), unit(high)]),
                     bars=True)
    ax.set_xlabel(f"mean {unit.label}")
    methods = _methods(method)
    clustered = f", clustered by {cluster_name}" if cluster_name else ""
    verdict = "orange: best at 95%" if clear else "gold: tied for best at 95%"
    absent = (f"; {len(lacking)} {by}(s) without {column!r} not drawn" if lacking else "")
    _set_title(ax, f"Mean {unit.label} per {by}",
               f"95% CI ({methods}{clustered if 'clustered' not in methods else ''}); "
               f"{verdict}{absent}")
    return ax


def _rows(frame: Any, keep: Any) -> Any:
    """The rows of a native frame where ``keep`` is True."""
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    mask = nw.new_series("keep", np.asarray(keep, dtype=bool), nw.Boolean,
                         backend=nw.get_native_namespace(nf))
    return nf.filter(mask).to_native()


HEATMAP_ROWS = 60  # rows a heatmap draws at most, whatever the number of tasks
_PICKED = 20  # of them: the hardest tasks, and as many of the most discriminating


@dataclass
class TaskGrid:
    """What :func:`task_heatmap` draws: mean ``value`` per row (a task, or a bin of tasks)
    and candidate, from :func:`task_grid`.

    ``values`` is rows × candidates (NaN: not measured), ``rows`` the row labels, ``tasks``
    how many tasks each row holds (1 for a task), ``columns`` the candidates (best first),
    ``n_tasks`` the tasks in all and ``detail`` the sentence that says how the rows were
    chosen ("" when every task has its row).
    """

    values: np.ndarray
    rows: list[str]
    tasks: np.ndarray
    columns: list[Any]
    n_tasks: int
    detail: str = ""

    @property
    def binned(self) -> np.ndarray:
        """Which rows summarise several tasks."""
        return self.tasks > 1


def task_grid(
    trials: Any,
    *,
    task: str = "task_name",
    by: str = "candidate",
    value: str = "reward",
    max_rows: int = HEATMAP_ROWS,
) -> TaskGrid:
    """Mean ``value`` per task and candidate, bounded to ``max_rows`` rows.

    Up to ``max_rows`` tasks: one row per task, easiest first (mean over candidates).
    More: the 20 hardest tasks and the 20 most discriminating (the widest spread of the
    candidates' means) keep a row each, and the other tasks are summarised in rows of
    about equal size by difficulty (each cell the mean over the row's tasks); all rows
    easiest first. The work is a few passes over the rows and one sort of the tasks, so
    100,000 tasks cost what their trials cost to read. Only the trials that count are
    used.

    Raises
    ------
    MetrickitError
        ``by``, ``task`` or ``value`` is not a column.
    """
    import pandas as pd

    trials = _counted(trials, by, "task_heatmap")
    df = _columns(trials, {"task": task, "by": by, "value": value}, numeric=("value",))
    tcode, tnames = pd.factorize(df[task].astype(str), sort=True)
    ccode, cnames = pd.factorize(df[by], sort=True)
    nt, nc = len(tnames), len(cnames)
    x = df[value].to_numpy(dtype=float)
    ok = np.isfinite(x) & (tcode >= 0) & (ccode >= 0)
    cell = tcode[ok].astype(np.int64) * nc + ccode[ok]
    total = np.bincount(cell, weights=x[ok], minlength=nt * nc).reshape(nt, nc)
    count = np.bincount(cell, minlength=nt * nc).reshape(nt, nc)
    with np.errstate(invalid="ignore", divide="ignore"):
        grid = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        measured = np.isfinite(grid)
        per_task = np.where(measured.any(axis=1),
                            np.nansum(grid, axis=1) / np.maximum(measured.sum(axis=1), 1),
                            np.nan)
        per_candidate = np.nansum(grid, axis=0) / np.maximum(measured.sum(axis=0), 1)
        per_candidate = np.where(measured.any(axis=0), per_candidate, np.nan)
    cols = np.argsort(-np.nan_to_num(per_candidate, nan=-np.inf), kind="stable")
    grid = grid[:, cols]
    columns = [cnames[i] for i in cols]
    # easiest first; a task measured nowhere last (pandas' sort puts NaN last)
    easiest = np.argsort(-np.nan_to_num(per_task, nan=-np.inf), kind="stable")
    names = [str(t) for t in tnames]
    if nt <= max_rows:
        return TaskGrid(grid[easiest], [names[i] for i in easiest], np.ones(nt, dtype=int),
                        columns, nt)
    picked = max(1, min(_PICKED, max_rows // 3))
    # the lowest means, ties in task order; a task measured nowhere is not "hard"
    hardest = np.argsort(np.nan_to_num(per_task, nan=np.inf), kind="stable")[:picked]
    hardest = hardest[np.isfinite(per_task[hardest])]
    with np.errstate(invalid="ignore"):
        spread = np.where(measured.sum(axis=1) > 1,
                          np.nanmax(np.where(measured, grid, -np.inf), axis=1)
                          - np.nanmin(np.where(measured, grid, np.inf), axis=1), -1.0)
    spread[hardest] = -np.inf
    widest = np.argsort(-spread, kind="stable")[:picked]
    widest = widest[spread[widest] > 0]
    chosen = np.zeros(nt, dtype=bool)
    chosen[hardest] = True
    chosen[widest] = True
    rest = easiest[~chosen[easiest]]  # the other tasks, easiest first
    n_bins = max(1, min(max_rows - int(chosen.sum()), len(rest)))
    bins = np.array_split(rest, n_bins)
    rows: list[tuple[float, np.ndarray, str, int]] = []
    for i in np.flatnonzero(chosen):
        rows.append((per_task[i], grid[i], names[i], 1))
    for part in bins:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column measured nowhere
            means = np.nanmean(grid[part], axis=0)
        lo, hi = np.nanmin(per_task[part]), np.nanmax(per_task[part])
        span = f"{_tick(lo)}" if lo == hi else f"{_tick(lo)}–{_tick(hi)}"
        rows.append((float(np.nanmean(per_task[part])), means,
                     f"{len(part):,} tasks, mean {span}", len(part)))
    order = sorted(range(len(rows)), key=lambda k: (-np.nan_to_num(rows[k][0], nan=-np.inf),
                                                    rows[k][3] == 1))
    detail = (f"{nt:,} tasks: the {len(hardest)} hardest and the {len(widest)} most "
              f"discriminating (widest spread across candidates) one per row, the other "
              f"{len(rest):,} in {len(bins)} rows by difficulty (italic)")
    return TaskGrid(np.vstack([rows[k][1] for k in order]), [rows[k][2] for k in order],
                    np.array([rows[k][3] for k in order]), columns, nt, detail)


def _tick(v: float) -> str:
    """A value as an axis tick reads it: 3 significant digits, never ``-0``."""
    text = f"{v:.3g}"
    return "0" if text in ("-0", "-0.0") else text


def _heatmap_cmap() -> Any:
    import matplotlib

    return matplotlib.colormaps["RdYlGn"].with_extremes(bad="0.85")  # grey: not measured


def heatmap_top(values: np.ndarray) -> float:
    """The top of the heatmap's colour scale: 1, or the largest value where one is above."""
    return max(1.0, float(np.nanmax(values))) if np.isfinite(values).any() else 1.0


def heatmap_colours(values: np.ndarray, top: float | None = None) -> np.ndarray:
    """The colour :func:`task_heatmap` gives each cell of ``values`` (red 0 to green
    ``top``, default :func:`heatmap_top`; grey where not measured), as RGB in [0, 1]
    with one more axis than ``values``: what the report's HTML heatmap paints."""
    values = np.asarray(values, dtype=float)
    top = heatmap_top(values) if top is None else top
    scaled = np.ma.masked_invalid(values / top)  # masked: the colour map's "bad" grey
    return np.asarray(_heatmap_cmap()(scaled))[..., :3]


@_styled
def task_heatmap(
    trials: Any,
    *,
    task: str = "task_name",
    by: str = "candidate",
    value: str = "reward",
    max_rows: int = HEATMAP_ROWS,
    grid: TaskGrid | None = None,
    ax: Any = None,
) -> Any:
    """Mean ``value`` for each task (rows) and candidate (columns) from a trial table.

    Tasks are sorted from easiest to hardest (mean over candidates) and candidates from
    best to worst, so blocks of tasks everyone or no one solves stand out. A cell with no
    measured value is grey, not a colour of the scale. Only the trials that count are
    used (a running trial never is). Beyond ``max_rows`` tasks the hardest and the most
    discriminating tasks keep a row each and the rest are summarised in rows by
    difficulty (:func:`task_grid`; the title says so), so the image, the time and the
    memory stay bounded.

    Parameters
    ----------
    grid
        The :func:`task_grid` of these trials, when it is already computed (the report
        captions it): drawn as given.

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    MetrickitError
        ``by``, ``task`` or ``value`` is not a column.
    """
    g = grid if grid is not None else task_grid(trials, task=task, by=by, value=value,
                                                max_rows=max_rows)
    n_rows, n_cols = g.values.shape
    columns = short_labels(list(g.columns))
    # Vertical, not slanted: slanted neighbours' boxes overlap even when the glyphs do not.
    vertical = sum(len(c) for c in columns) * 6.5 > 72 * 0.35 * len(columns) * 1.6
    rows = short_labels(g.rows, width=30)  # distinct, or in full
    # room for long labels (candidate labels that stay long to stay distinct)
    tall = 1.2 + 0.16 * n_rows + (max(map(len, columns)) * _CHAR_IN if vertical else 0.3)
    wide = max(map(len, rows)) * _CHAR_IN + 0.35 * n_cols + 1.5
    ax = _axes(ax, (max(4.5, 0.35 * n_cols + 3.5, wide),
                    max(3.0, 0.2 * n_rows + 2.0, tall) + (0.3 if g.detail else 0.0)))
    _dress(ax, "")
    image = ax.imshow(g.values, aspect="auto", cmap=_heatmap_cmap(), vmin=0,
                      vmax=heatmap_top(g.values), interpolation="nearest")
    ax.set_xticks(range(n_cols), columns, rotation=90 if vertical else 0)
    ax.set_yticks(range(n_rows), rows, fontsize=7 if n_rows > 20 else None)
    for label, binned in zip(ax.get_yticklabels(), g.binned, strict=True):
        if binned:
            label.set_fontstyle("italic")
    ax.set_xlabel(by)
    ax.set_ylabel(task if not g.detail else f"{task} (or a row of tasks)")
    bar = ax.figure.colorbar(image, ax=ax, pad=0.02, fraction=0.06, aspect=30)
    bar.set_label(f"mean {value}", labelpad=4)
    bar.outline.set_visible(False)
    bar.ax.tick_params(labelsize=STYLE["ytick.labelsize"])
    detail = "tasks easiest first; grey: not measured"
    _set_title(ax, f"Mean {value} per task and {by}",
               f"{g.detail}; {detail}" if g.detail else detail)
    return ax


# -- the overview figure ---------------------------------------------------------------------


def _candidate_column(trials: Any, by: str | Sequence[str]) -> tuple[Any, str]:
    """The trials that count as pandas with one candidate column (a list of columns is
    joined, keeping only the ones that vary)."""
    import narwhals as nw

    from metrickit.errors import MetrickitError

    if not isinstance(by, str) and not list(by):
        raise MetrickitError("summary: by= names no column; pass by= (a column, or a list "
                             "of columns to join)")
    rows = _counted(trials, by, "summary")
    df = nw.from_native(rows, eager_only=True).to_pandas()
    if isinstance(by, str):
        return df, by
    parts = list(by)
    varying = [c for c in parts if df[c].nunique(dropna=False) > 1] or parts[:1]
    if len(varying) == 1:
        return df, varying[0]
    df["candidate"] = df[varying].astype(str).agg(" · ".join, axis=1)
    return df, "candidate"


def summary(
    trials: Any,
    *,
    value: str = "reward",
    by: str | Sequence[str] = "candidate",
    task: str = "task_name",
    time: str | None = "total_ms",
    cost: str | None = "cost_usd",
    fig: Any = None,
) -> Any:
    """The overview a report needs, in one figure, from a Harbor trial table.

    Three panels: mean ``value`` per candidate with task-clustered 95 % CIs and ties
    (:func:`candidate_bars`), ``value`` against time per trial with cost as colour and the
    Pareto front (:func:`tradeoff`; only when ``time`` is a column), and the task ×
    candidate heatmap (:func:`task_heatmap`). Only the trials that count are drawn; when a
    candidate pools several runs, or a run is kept apart because its model is not
    recorded, a line under the panels says so
    (:func:`metrickit._core.identity.candidate_summary`).

    Parameters
    ----------
    trials
        One row per trial: ``task``, ``value`` and the candidate column(s).
    by
        The candidate column (default ``candidate``, which metrickit's readers fill); a
        list of columns is joined (``["agent", "model"]``: ``agent · model``), keeping
        only the ones that vary.
    time, cost
        Columns for the trade-off panel (None to leave them out).
    fig
        A Figure to draw into (default: a new one sized to the data).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    MetrickitError
        A ``by`` column is missing (the message names ``by=`` and the columns).
    """
    import matplotlib.pyplot as plt

    df, column = _candidate_column(trials, by)
    n = int(df[column].nunique())
    n_tasks = min(int(df[task].nunique()) if task in df else 1, HEATMAP_ROWS)
    footer = _pooling_footer(df, column)
    with style():
        height = max(6.0, 0.3 * max(n, 0.5 * n_tasks) + 3.0) + 0.16 * len(footer)
        if fig is None:
            fig = plt.figure(figsize=(15, height), layout="constrained")
        grid = fig.add_gridspec(2, 2, width_ratios=[1.15, 1])
        has_tradeoff = time is not None and time in df
        bars_ax = fig.add_subplot(grid[0, 0] if has_tradeoff else grid[:, 0])
        heat_ax = fig.add_subplot(grid[:, 1])
        candidate_bars(df, column=value, by=column, cluster=task if task in df else None,
                       ax=bars_ax)
        task_heatmap(df, task=task, by=column, value=value, ax=heat_ax)
        if has_tradeoff:
            assert time is not None
            trade_ax = fig.add_subplot(grid[1, 0])
            tradeoff(df, x=time, y=value, color=cost if cost in df else None, by=column,
                     cluster=task if task in df else None, ax=trade_ax)
        if footer:
            fig.supxlabel("\n".join(footer), x=0.005, ha="left",
                          fontsize=STYLE["legend.fontsize"], color=MUTED)
    return literal(fig)


_FOOTER_WIDTH = 170  # characters of a line under the summary's panels
_FOOTER_LINES = 4


def _pooling_footer(df: Any, column: str) -> list[str]:
    """The lines under :func:`summary` that say which candidates pool several runs and
    which runs were kept apart because no model is recorded (the facts of
    :func:`metrickit._core.identity.candidate_summary`), short enough for a figure."""
    from metrickit._core.identity import candidate_summary

    if "run" not in df:
        return []
    table = candidate_summary(df, by=column)
    names = dict(zip(table[column], short_labels(list(table[column])), strict=True))
    parts = []
    pooled = table[table["pooled"]]
    if len(pooled):
        parts.append("pooled from several runs with identical recorded configurations: "
                     + ", ".join(f"{names[c]} ({k})"
                                 for c, k in zip(pooled[column], pooled["n_runs"], strict=True)))
    if column == "candidate":
        apart = table[table["not_recorded"].str.contains("model")]
        if len(apart):
            parts.append("kept apart, no model recorded: "
                         + ", ".join(names[c] for c in apart[column]))
    lines = [line for part in parts for line in textwrap.wrap(part, _FOOTER_WIDTH)]
    if len(lines) > _FOOTER_LINES:
        lines = [*lines[: _FOOTER_LINES - 1], _ellipsize(" ".join(lines[_FOOTER_LINES - 1:]),
                                                         _FOOTER_WIDTH)]
    return lines


@_styled
def history(table: Any, *, value: str = "reward", by: str = "candidate", ax: Any = None) -> Any:
    """Each candidate's estimate run by run, in time order, with its 95 % interval: the
    table of :meth:`metrickit.RunStore.history`.

    Parameters
    ----------
    table
        ``RunStore.history(...)``'s table (``run``, ``by``, ``mean``, ``ci_low``,
        ``ci_high``, ``started_at``), or any frame with those columns. Rows without an
        estimate (the value is missing for that run) are not drawn.
    value
        What the estimate is of (the axis label).

    Returns
    -------
    matplotlib.axes.Axes
    """
    import narwhals as nw

    df = nw.from_native(table, eager_only=True).to_pandas()
    needed = ["run", by, "mean", "ci_low", "ci_high"]
    missing = [c for c in needed if c not in df.columns]
    if missing:
        from metrickit.errors import MetrickitError

        raise MetrickitError(
            f"history: the table has no {missing[0]!r} column (columns: {list(df.columns)}); "
            "pass RunStore.history(...)'s table"
        )
    df = df[df["mean"].notna()].reset_index(drop=True)
    runs = list(dict.fromkeys(df["run"].astype(str)))
    position = {r: i for i, r in enumerate(runs)}
    unit = unit_for(value, df["mean"].to_numpy(float))
    names = list(dict.fromkeys(df[by].astype(str)))
    labels = short_labels(names)
    ax = _axes(ax, (max(6.0, 0.5 * len(runs) + 3.0), 3.6))
    _dress(ax, "y")
    lines = []
    for name in names:
        part = df[df[by].astype(str) == name]
        x = np.array([position[str(r)] for r in part["run"]], dtype=float)
        mean = unit(part["mean"].to_numpy(float))
        low = unit(part["ci_low"].to_numpy(float))
        high = unit(part["ci_high"].to_numpy(float))
        line = ax.plot(x, mean, marker="o", markersize=4)[0]
        lines.append(line)
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    ticks = [_ellipsize(r, 22) for r in runs]
    ax.set_xticks(range(len(runs)), ticks, rotation=30 if len(runs) > 4 else 0,
                  ha="right" if len(runs) > 4 else "center")
    _format_axis(ax.yaxis, unit, log=False)
    ax.set_ylabel(f"mean {unit.label}")
    ax.set_xlabel("run, in time order")
    if len(names) > 1:
        _legend(ax, lines, labels, fontsize="small", frameon=False, loc="best")
    _set_title(ax, f"{unit.label.capitalize()} run by run",
               "mean per run with its 95% interval (task-clustered)")
    return ax


# -- score by budget -------------------------------------------------------------------------

_LIMITS = {"total_ms": "time", "agent_execution_ms": "agent time", "cost_usd": "cost",
           "n_output_tokens": "output tokens", "n_input_tokens": "input tokens"}


def score_by_limit_table(
    trials: Any,
    *,
    limit: str = "total_ms",
    value: str | None = None,
    by: str = "candidate",
    budgets: Sequence[float] | None = None,
    n_budgets: int = 40,
    failed: float = 0.0,
    unmeasured: str = "raise",
    policy: Any = "0.25",
    confidence: float = 0.95,
) -> Any:
    """Each candidate's score if every trial were cut at a budget of ``limit``.

    A trial whose ``limit`` (time, cost, tokens) is above the budget counts as failed
    (``value`` = ``failed``, 0 by default); the others keep their value. At each budget
    the score is metrickit's estimand (the mean over tasks of each task's mean over its
    counted attempts) with the default interval (:func:`metrickit.compute.stats.mean_ci`:
    Wilson for 0/1 values, t cut to the range otherwise, both task-clustered where tasks
    repeat). At the largest budget (the default grid ends at the largest value measured)
    the score is the candidate's plain score.

    Parameters
    ----------
    limit
        The column to budget: ``"total_ms"`` (default, the whole trial),
        ``"agent_execution_ms"``, ``"cost_usd"``, ``"n_output_tokens"``, or any numeric
        column of the trial table.
    value
        The reward column; default the table's only reward key.
    budgets
        The budgets (in the column's own unit: ms, dollars, tokens); default ``n_budgets``
        points from the smallest to the largest value measured, evenly spaced on a log
        scale when the values span 30x or more.
    failed
        The value a trial over the budget gets.
    unmeasured
        A counted trial without a ``limit`` value: ``"raise"`` (default: the error says
        how many), ``"fail"`` (over every budget) or ``"keep"`` (within every budget).
    policy, confidence
        Which trials count (:func:`metrickit._core.frame.counted_trials`); the level.

    Returns
    -------
    pandas.DataFrame
        One row per (candidate, budget): ``by``, ``budget``, ``mean``, ``ci_low``,
        ``ci_high``, ``method``, ``n`` (trials), ``n_tasks``, ``n_over`` (trials over the
        budget). ``.attrs`` holds ``limit``, ``value``, ``by`` and ``notes``.

    Raises
    ------
    MetrickitError
        A missing column, a negative or non-numeric limit, unmeasured trials under
        ``unmeasured="raise"``, an unknown ``unmeasured``.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2", "q3"], "ok": [1, 1, 0],
    ...                    "ms": [100.0, 900.0, 50.0]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", latency_ms="ms")
    >>> table = mk.plots.score_by_limit_table(t, budgets=[100, 1000])
    >>> table[["budget", "mean", "n_over"]].round(3)
       budget   mean  n_over
    0   100.0  0.333       1
    1  1000.0  0.667       0
    """
    import pandas as pd

    from metrickit.compute.intervals import grouped_intervals
    from metrickit.compute.tables import task_codes, value_column
    from metrickit.errors import MetrickitError

    if unmeasured not in ("raise", "fail", "keep"):
        raise MetrickitError(
            f"unmeasured={unmeasured!r}; expected 'raise', 'fail' (over every budget) or "
            "'keep' (within every budget)"
        )
    from metrickit._core.frame import counted_trials

    _counted(trials, by, "score_by_limit")
    counted = counted_trials(trials, policy=policy)
    df = _as_pandas(counted.frame).reset_index(drop=True)
    notes = counted.notes()
    if limit not in df.columns:
        raise MetrickitError(
            f"score_by_limit: limit={limit!r} is not a column of the table; limits are "
            "time ('total_ms', 'agent_execution_ms'), cost ('cost_usd') or tokens "
            f"('n_output_tokens'); columns are {list(df.columns)}"
        )
    column = value_column(df, value)
    x = pd.to_numeric(df[column]).to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        spent = pd.to_numeric(df[limit]).to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
        raise MetrickitError(
            f"score_by_limit: limit={limit!r} is not numeric (e.g. {df[limit].iloc[0]!r})"
        ) from None
    if (spent < 0).any():
        row = int(np.argmax(spent < 0))
        raise MetrickitError(
            f"score_by_limit: {limit!r} is {spent[row]!r} at row {row}; a budget column "
            "holds amounts >= 0"
        )
    na = np.isnan(x)
    if na.any():
        notes.append(f"{int(na.sum()):,} trial(s) without {column!r} (missing, NA) left out")
    lacking = np.isnan(spent) & ~na
    if lacking.any():
        if unmeasured == "raise":
            raise MetrickitError(
                f"score_by_limit: {int(lacking.sum()):,} of {len(df):,} counted trial(s) have "
                f"no {limit!r} (the first at row {int(np.argmax(lacking))}): pass "
                "unmeasured='fail' to count them over every budget or 'keep' to count them "
                "within every budget"
            )
        spent = np.where(lacking, np.inf if unmeasured == "fail" else -np.inf, spent)
        notes.append(
            f"{int(lacking.sum()):,} trial(s) without {limit!r} counted "
            + ("over every budget (failed)" if unmeasured == "fail" else "within every budget")
        )
    codes, names = pd.factorize(df[by], sort=True)
    if (codes < 0).any():
        raise MetrickitError(f"score_by_limit: {int((codes < 0).sum()):,} trial(s) have no {by!r}")
    units, _ = task_codes(df, "auto")
    measured = spent[np.isfinite(spent) & ~na]
    if budgets is None:
        if not measured.size:
            raise MetrickitError(f"score_by_limit: no trial has a value of {limit!r}")
        lo, hi = float(measured.min()), float(measured.max())
        if _spans_decades(measured):
            lo = float(measured[measured > 0].min())
            grid = np.geomspace(lo, hi, n_budgets)
        else:
            grid = np.linspace(lo, hi, n_budgets) if hi > lo else np.array([hi])
        grid[-1] = hi  # exactly the largest value: the full score
    else:
        grid = np.unique(np.asarray(budgets, dtype=np.float64))
    frames = []
    n_groups = len(names)
    for budget in grid:
        over = spent > budget
        cut = np.where(na, np.nan, np.where(over, failed, x))
        gi = grouped_intervals(codes.astype(np.intp), n_groups, cut, clusters=units,
                               confidence=confidence)
        n_tasks = (gi.n if units is None else np.array([
            np.unique(units[(codes == i) & ~na]).size for i in range(n_groups)]))
        frames.append(pd.DataFrame({
            by: list(names), "budget": budget, "mean": gi.mean, "ci_low": gi.low,
            "ci_high": gi.high, "method": gi.method, "n": gi.n.astype(int),
            "n_tasks": np.asarray(n_tasks, dtype=int),
            "n_over": np.bincount(codes, weights=over & ~na, minlength=n_groups).astype(int),
        }))
    table = pd.concat(frames, ignore_index=True).sort_values([by, "budget"], kind="stable")
    no_value = [names[i] for i in range(n_groups) if not (~na & (codes == i)).any()]
    if no_value:
        table = table[~table[by].isin(no_value)]
        notes.append(
            f"{len(no_value)} {by}(s) have no {column!r} (missing, NA: their evaluation has "
            f"no such key), not shown: {', '.join(map(repr, no_value[:3]))}"
        )
    table = table.reset_index(drop=True)
    table.attrs.update(limit=limit, value=column, by=by, notes=notes, failed=failed)
    return table


def _as_pandas(frame: Any) -> Any:
    from metrickit.compute.tables import as_pandas

    return as_pandas(frame)


@_styled
def score_by_limit(
    trials: Any,
    *,
    limit: str = "total_ms",
    value: str | None = None,
    by: str = "candidate",
    budgets: Sequence[float] | None = None,
    unmeasured: str = "raise",
    table: Any = None,
    ax: Any = None,
) -> Any:
    """Each candidate's score against a budget of time, cost or tokens, with its interval.

    One line per candidate over a grid of budgets, with a band for its interval: the
    score if every trial were cut at that budget (a trial over it counts as failed). The
    numbers are :func:`score_by_limit_table`'s (pass ``table=`` to draw one already
    computed); see there for the parameters.

    Returns
    -------
    matplotlib.axes.Axes
    """
    t = table if table is not None else score_by_limit_table(
        trials, limit=limit, value=value, by=by, budgets=budgets, unmeasured=unmeasured)
    limit, value, by = t.attrs.get("limit", limit), t.attrs.get("value", value), t.attrs.get(
        "by", by)
    names = list(dict.fromkeys(t[by]))
    labels = short_labels(names)
    budgets_all = t["budget"].to_numpy(dtype=float)
    unit = unit_for(limit, budgets_all)
    log = _spans_decades(budgets_all)
    longest = max((len(s) for s in labels), default=10)
    ax = _axes(ax, (max(6.0, 4.2 + longest * _CHAR_IN), 3.8))
    _dress(ax)
    handles = []
    for i, name in enumerate(names):
        part = t[t[by] == name]
        colour = PALETTE[i % len(PALETTE)]
        xs = unit(part["budget"])
        (line,) = ax.plot(xs, part["mean"], color=colour, linewidth=1.6,
                          drawstyle="steps-post")
        ax.fill_between(xs, part["ci_low"], part["ci_high"], color=colour, alpha=0.15,
                        linewidth=0, step="post")
        handles.append(line)
    if log:
        ax.set_xscale("log")
    _format_axis(ax.xaxis, unit, log=log)
    ax.yaxis.set_major_formatter(_plain_formatter())
    _constant_limits(ax.set_ylim, t[["ci_low", "ci_high", "mean"]].to_numpy())
    ax.set_xlabel(f"budget: {unit.label}")
    ax.set_ylabel(f"mean {value}")
    _legend(ax, handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5))
    name = _LIMITS.get(limit, limit.replace("_", " "))
    methods = _methods(t["method"])
    _set_title(ax, f"{value} within a {name} budget",
               f"a trial over the budget counts as failed ({t.attrs.get('failed', 0):g}); "
               f"band: 95% interval ({methods})")
    return ax
