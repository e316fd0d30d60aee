"""One file to share: a self-contained HTML report of a trial table, or Markdown with images.

:func:`report` (``metrickit report`` on the command line) turns a trial table, one row per
(candidate, task, attempt), into a single HTML file that opens from ``file://`` and loads
nothing from the network: the plots are PNG images inside the page as ``data:`` URIs, the
style is inline, there is no script, and a Content-Security-Policy forbids every other
request. A path ending in ``.md`` writes Markdown instead, with the images in a
``<name>_files/`` folder beside it, for pull requests and wikis.

The page is built from Jinja2 templates shipped in ``metrickit/reporting/templates`` with
autoescaping on (HTML); the Python side only computes the numbers and formats them as
text cells. What it holds, in order:

* **Overview**: trials, candidates, tasks, the value read and the other reward keys; which
  candidates pool several runs and which runs were kept apart because their model is not
  recorded (:func:`metrickit._core.identity.pooling_notes`).
* **Candidates**: per candidate (``by``, default ``candidate``: one per recorded
  configuration) the mean with its task-clustered 95 % interval
  (:func:`metrickit.compute.stats.breakdown`), the rank interval and the probability of
  being best (:func:`metrickit.compute.metrics.compare_metrics`), each candidate against
  the leader on the tasks both ran (:func:`metrickit.compute.stats.compare_runs`, Holm's
  adjustment over those comparisons), and the verdict from ``compare_metrics``'
  ``best_group``, the candidates that may be best at 95 % confidence (a permutation test
  over tasks): "best" only when that set is one candidate, otherwise who is tied. A table
  with several reward keys (``correctness`` and ``style``) gets these per key, as Harbor
  reports every key; ``value=`` chooses one.
* **pass@k** (:func:`metrickit.compute.passk.pass_at_k` on the value).
* **Trade-off** of the value against time per trial with cost as colour, and the Pareto
  front with each candidate's probability of being on it.
* **Tasks**: the task × candidate heatmap.
* **Flips** between the two best candidates that share tasks (the same comparison as
  their row against the leader).
* **Errors** by outcome and exception type, and **cost and tokens**.
* **REWARD_SPEC**, when one is given: the spec and the candidates ranked by it.
* **Provenance**: metrickit's version, Harbor's (or Inspect's) where the trial table's
  ``harness_version`` (or, for a table without it, the job's files) records it,
  the job folders with the sha256 of their ``result.json``, the task checksums, the
  command and the time (UTC).

Which trials count is :func:`metrickit._core.frame.counted_trials`' rule (a running trial
never does; a finished one without a reward counts as 0, as in Harbor's mean), and the page
says how many of each there are. A value that is missing (NA: the reward key is absent from
a candidate's whole evaluation) is shown as *missing*, never as 0, and that candidate is
left out of the rankings. Every number is written by :mod:`metrickit.reporting.numbers`, as
the plots write theirs: one quantity never reads as two values.

The REWARD_SPEC section needs a spec object with ``to_dict()`` and ``score_arrays()``
(:class:`metrickit.RewardSpec`); this module does not read scorer files itself (the
report and scoring layers are independent), so :func:`run_report` takes a ``spec_loader``
(``metrickit report`` passes one that reads the file's REWARD_SPEC).
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import io
import json
import math
import re
import shlex
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metrickit.errors import MetrickitError
from metrickit.reporting.arguments import add_report_arguments
from metrickit.reporting.numbers import (
    duration,
    finite,
    fixed,
    interval,
    rounded,
    share,
    significant,
    time_unit,
)

__all__ = [
    "Code",
    "Figure",
    "Heatmap",
    "Section",
    "Table",
    "add_report_arguments",
    "build_sections",
    "load_sources",
    "report",
    "run_report",
]

Cell = str | None  # None: not measured (NA), shown as "missing"
SpecLoader = Callable[[Path], Any]

_TASK = "task_name"
_LABEL = "__task_label"  # the task of each row, source/task_name when sources differ
_LONG_MESSAGE = 160  # characters of an exception message quoted in the errors table
_NO_REWARD = ("null", "empty")  # finished without a reward: 0 in Harbor's mean
_MAX_ROWS = 200  # rows of a per-task table (flips, task checksums): the page stays readable


# -- the blocks the templates render ---------------------------------------------------------


@dataclass
class Table:
    """A table of text cells; None is a missing value.

    ``classes`` gives each column a class: ``"num"`` (right-aligned; Markdown aligns it
    right too), ``"name"`` (never wrapped), ``"mono"`` (fixed-width, for hashes) or ``""``,
    as one space-separated string (``"name num num"``). ``marks`` gives each row a class:
    ``"best"``, ``"tied"``, ``"total"`` or ``""``.
    """

    columns: list[str]
    rows: list[list[Cell]]
    classes: str = ""
    caption: str = ""
    marks: list[str] = field(default_factory=list)
    id: str = ""
    kind: str = "table"

    @property
    def column_classes(self) -> list[str]:
        """One class per column (``"-"`` in ``classes`` and missing entries are none)."""
        given = [c if c != "-" else "" for c in self.classes.split()]
        return (given + [""] * len(self.columns))[: len(self.columns)]

    def __post_init__(self) -> None:
        self.marks = self.marks or [""] * len(self.rows)


@dataclass
class Figure:
    """A plot as PNG bytes; ``path`` is where the Markdown variant puts the file.

    ``drawing`` gives the PNG and its width and height in pixels: a drawing begun in the
    report's drawing process (:func:`metrickit.reporting.painter.later`), awaited the first
    time the page asks for it."""

    name: str
    caption: str
    alt: str
    drawing: Callable[[], tuple[bytes, int, int]] = field(repr=False)
    path: str = ""
    kind: str = "figure"

    @property
    def png(self) -> bytes:
        return self.drawing()[0]

    @property
    def width(self) -> int:
        return self.drawing()[1]

    @property
    def height(self) -> int:
        return self.drawing()[2]

    @property
    def data_uri(self) -> str:
        """The image inline, as the HTML page embeds it."""
        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")


@dataclass
class Heatmap:
    """The task × candidate grid (:func:`metrickit.reporting.plots.task_grid`) as a table of
    coloured cells, which the HTML page renders as text (each cell's value, its row and
    candidate on hover) in :func:`~metrickit.reporting.plots.task_heatmap`'s colours.

    A Markdown report has no coloured cells: it gets the PNG instead, which ``draw``
    makes (:func:`report` calls it only then, so an HTML report never draws it).
    """

    name: str
    caption: str
    alt: str
    grid: Any  # plots.TaskGrid
    value: str
    draw: Callable[[], Figure]
    #: the cells' colours, the scale's and its top (:func:`_heatmap_rgb`), maybe drawing
    colours: Callable[[], tuple[Any, Any, float]] = field(repr=False)
    kind: str = "heatmap"

    @functools.cached_property
    def header(self) -> list[tuple[str, str]]:
        """Each column's (short label, full name)."""
        from metrickit.reporting.plots import short_labels

        columns = [str(c) for c in self.grid.columns]
        return list(zip(short_labels(columns), columns, strict=True))

    @functools.cached_property
    def body(self) -> list[tuple[str, str, bool, list[tuple[str, str, str]]]]:
        """Each row's (short label, full label, summarises several tasks, cells); a cell
        is (text, style, hover text)."""
        import numpy as np

        from metrickit.reporting.plots import short_labels

        g = self.grid
        rgb = self.colours()[0]
        light = (rgb @ np.array([0.299, 0.587, 0.114])) > 0.55  # dark text on a light cell
        hexes = [[f"#{r:02x}{gr:02x}{b:02x}" for r, gr, b in row]
                 for row in np.rint(rgb * 255).astype(int).tolist()]
        names = [str(c) for c in g.columns]
        out = []
        for i, (label, full) in enumerate(zip(short_labels(g.rows, width=30), g.rows,
                                              strict=True)):
            cells = []
            for j, v in enumerate(g.values[i].tolist()):
                ink = "#1a1a1a" if light[i, j] else "#ffffff"
                if math.isnan(v):
                    cells.append(("", f"background:{hexes[i][j]}",
                                  f"{full} · {names[j]}: not measured"))
                    continue
                cells.append((f"{v:.2f}", f"background:{hexes[i][j]};color:{ink}",
                              f"{full} · {names[j]}: mean {self.value} {v:.3g}"))
            out.append((label, full, bool(g.tasks[i] > 1), cells))
        return out

    @functools.cached_property
    def scale(self) -> tuple[str, str]:
        """The colour scale as a CSS gradient, and its top value."""
        import numpy as np

        _, stops, top = self.colours()
        colours = ", ".join(f"rgb({r},{g},{b})" for r, g, b in
                            np.rint(stops * 255).astype(int).tolist())
        return f"background:linear-gradient(to right, {colours})", f"{top:g}"


@dataclass
class Code:
    """A literal block (the REWARD_SPEC)."""

    text: str
    caption: str = ""
    language: str = ""
    kind: str = "code"


@dataclass
class Section:
    """One heading of the report: a verdict line, paragraphs, blocks, and notes."""

    id: str
    heading: str
    verdict: str = ""
    text: list[str] = field(default_factory=list)
    blocks: list[Table | Figure | Heatmap | Code] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- formatting ------------------------------------------------------------------------------


# Every number goes through metrickit.reporting.numbers (one rounding rule, shared with the
# plots): a quantity printed twice reads the same twice.
_finite = finite


def _num(x: Any, digits: int = 3, *, sign: bool = False) -> Cell:
    return fixed(x, digits, sign=sign)


def _p(x: Any) -> Cell:
    """A p-value, three significant digits."""
    return significant(x, 3)


def _int(x: Any) -> Cell:
    v = _finite(x)
    return None if v is None else f"{round(v):,}"


def _count(n: int, noun: str) -> str:
    """``1 trial``, ``1,004 trials``."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _share(x: Any) -> Cell:
    return share(x)  # 0.3 %, 99.7 %: never 0 % or 100 % unless exactly


def _usd(x: Any) -> Cell:
    v = _finite(x)
    if v is None:
        return None
    if v == 0:
        return "$0"
    decimals = min(max(2, 2 - math.floor(math.log10(abs(v)))), 6)
    return f"${rounded(v, decimals):,.{decimals}f}"


def _durations(values: Sequence[Any]) -> list[Cell]:
    """Durations in ms for one column: all in the unit that suits the column
    (:func:`metrickit.reporting.numbers.time_unit`), never ``2.2 min`` above ``72.6 s``."""
    unit = time_unit(values)
    return [duration(v, unit) for v in values]


def _interval(low: Any, high: Any, *, sign: bool = False) -> Cell:
    return interval(low, high, 3, sign=sign)


def _ranks(low: Any, high: Any) -> Cell:
    lo, hi = _finite(low), _finite(high)
    if lo is None or hi is None:
        return None
    return f"{int(lo)}" if lo == hi else f"{int(lo)}–{int(hi)}"


def _listing(names: Sequence[Any]) -> str:
    return ", ".join(str(n) for n in names)


def _md(text: Any) -> str:
    """Text for a Markdown table cell or line: pipes and line breaks would end the cell,
    and ``*``/``_``/backquotes would start emphasis or code."""
    out = " ".join(str(text).split())
    for char in ("\\", "|", "*", "_", "`", "[", "]", "<", ">"):
        out = out.replace(char, "\\" + char)
    return out


# -- the data --------------------------------------------------------------------------------


@dataclass
class _Data:
    """The trial table as pandas, split the ways the sections need it."""

    all: Any  # every row with a known candidate (invalid rows dropped)
    finished: Any  # the rows that count (counted_trials: never a running trial)
    valued: Any  # counted, with a value (not NA)
    by: str
    value: str
    keys: list[str]
    candidates: list[Any]
    missing: list[Any]  # candidates with counted trials whose value is NA on all of them
    notes: list[str]
    n_running: int = 0  # trials that do not count yet (counted_trials)
    waiting: list[Any] = field(default_factory=list)  # candidates with no trial that counts


def _choose_values(df: Any, value: str | None) -> tuple[list[str], list[str]]:
    """The value columns, the one ranked first first: the one given, else every reward key
    with values (``reward`` first when the table has it, then the others in order), as
    Harbor reports every key of a multi-dimensional reward."""
    from metrickit._core.frame import reward_keys

    keys = reward_keys(df)
    if value is not None:
        if value not in df.columns:
            raise MetrickitError(
                f"value={value!r} is not a column; reward keys are {keys} "
                f"(columns: {list(df.columns)})"
            )
        return [value], keys
    present = [k for k in keys if "_kind_" + k not in df.columns
               or (df["_kind_" + k].astype(str) != "missing").any()]
    if not present:
        raise MetrickitError("the table has no reward column; pass value= naming a numeric "
                             "column")
    if "reward" in present:
        present = ["reward", *(k for k in present if k != "reward")]
    return present, keys


def _prepare(trials: Any, value: str | None, by: str) -> list[_Data]:
    """The report's rows, once per value it reports (:func:`_choose_values`): invalid rows
    and rows of no known candidate dropped (with a note), then
    :func:`metrickit._core.frame.counted_trials` decides which trials count (a running
    trial never does; a finished one without a reward counts as 0, Harbor 0.25's mean)."""
    import narwhals as nw
    import pandas as pd

    from metrickit._core.frame import counted_trials
    from metrickit.compute.stats import task_labels

    nf = nw.from_native(trials, eager_only=True)
    df = trials if isinstance(trials, pd.DataFrame) else nf.to_pandas()
    notes: list[str] = []
    if by not in df.columns:
        hint = ("metrickit's trial readers fill 'candidate', one per recorded configuration; "
                "for a table of your own pass by= (--by) naming the column that tells the "
                "candidates apart" if by == "candidate"
                else "pass by= (--by) naming the candidate column")
        raise MetrickitError(f"by={by!r} is not a column of the trial table ({hint}); "
                             f"columns are {list(df.columns)}")
    if _TASK not in df.columns:
        raise MetrickitError(
            f"{_TASK!r} is not a column of the trial table; columns are {list(df.columns)}"
        )
    status = df["_status"].astype(str) if "_status" in df.columns else pd.Series(
        "ok", index=df.index)
    invalid = (status == "invalid").to_numpy()
    if invalid.any():
        notes.append(f"{int(invalid.sum())} unreadable trial(s) (status 'invalid') left out")
    unknown = df[by].isna().to_numpy() & ~invalid
    if unknown.any():
        notes.append(
            f"{int(unknown.sum())} trial(s) without a {by!r} (running, configuration not "
            "written yet) left out"
        )
    df = df[~invalid & ~unknown].reset_index(drop=True)
    if not len(df):
        raise MetrickitError("the trial table has no trial to report on")
    columns, keys = _choose_values(df, value)
    df = df.assign(**{_LABEL: task_labels(df, _TASK).astype(str).to_numpy()})
    counted = counted_trials(df)
    finished = counted.frame.reset_index(drop=True)
    candidates = sorted(df[by].unique().tolist(), key=str)
    counting = set(finished[by].unique().tolist())
    waiting = [c for c in candidates if c not in counting]
    if waiting:
        notes.append(f"{_listing(waiting)}: only running trials, nothing counts yet")
    out = []
    for column in columns:
        try:
            x = pd.to_numeric(finished[column])  # a value that is not a number is refused
        except (TypeError, ValueError) as exc:
            raise MetrickitError(
                f"{column!r} holds a value that is not a number: {exc}") from None
        valued = finished[x.notna().to_numpy()].reset_index(drop=True)
        if not len(valued) and len(columns) > 1:
            notes.append(f"{column!r} is missing (NA) on every finished trial: not ranked")
            continue
        if not len(valued):
            raise MetrickitError(
                f"{column!r} is missing (NA) on every finished trial: no evaluation in the "
                f"table has that reward key; reward keys are {keys}"
            )
        have = set(valued[by].unique().tolist())
        missing = [c for c in candidates if c not in have and c in counting]
        out.append(_Data(df, finished, valued, by, column, keys, candidates, missing, notes,
                         counted.n_running, waiting))
    return out


def _png(ax: Any) -> tuple[bytes, int, int]:
    """The figure as PNG at 100 dpi: one draw (its layout, then its pixels), where
    ``savefig`` would lay a constrained figure out in a draw of its own first."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.image import imsave

    fig = getattr(ax, "figure", ax)
    fig.set_dpi(100)
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    buffer = io.BytesIO()
    unstamped: dict[str, Any] = {"Software": None}  # None drops matplotlib's default key
    # zlib level 1: a third of the default's time, and no larger on these flat plots
    imsave(buffer, canvas.buffer_rgba(), format="png", origin="upper", dpi=100,
           metadata=unstamped, pil_kwargs={"compress_level": 1})
    width, height = (round(v) for v in fig.get_size_inches() * 100)
    return buffer.getvalue(), width, height


def _drawn_png(plot: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bytes, int, int]:
    """``plot(*args, **kwargs)`` drawn offscreen, as :func:`_png` gives it."""
    from metrickit.reporting import plots

    with plots.offscreen():
        return _png(plot(*args, **kwargs))


def _placed_tradeoff(*args: Any, **kwargs: Any) -> Any:
    """:func:`metrickit.reporting.plots.tradeoff`, drawn in the layout its labels were
    placed in (:func:`~metrickit.reporting.plots.keep_layout`): the report draws it once."""
    from metrickit.reporting import plots

    ax = plots.tradeoff(*args, **kwargs)
    plots.keep_layout(ax.figure)
    return ax


def _figure(name: str, caption: str, alt: str, plot: Callable[..., Any], *args: Any,
            **kwargs: Any) -> Figure:
    """The figure ``plot(*args, **kwargs)`` draws, begun in the report's drawing process
    where there is one (:mod:`metrickit.reporting.painter`)."""
    from metrickit.reporting.painter import later

    return Figure(name, caption, alt, later(_drawn_png, plot, *args, **kwargs))


# -- sections --------------------------------------------------------------------------------


def _overview(datas: list[_Data], n_tasks: int) -> Section:
    from metrickit._core.identity import pooling_notes

    d = datas[0]
    values = [x.value for x in datas]
    other = [k for k in d.keys if k not in values]
    ranks = (f"the report ranks them by {d.value!r}" if len(values) == 1 else
             "the report ranks them by each reward key in turn: "
             + _listing([repr(v) for v in values]))
    what = (": one per recorded configuration (agent, model, agent kwargs, data set, ...), "
            "runs with identical recorded configurations pooled into one"
            if d.by == "candidate" else "")
    text = [
        f"{_count(len(d.all), 'trial')} ({len(d.finished):,} finished, {d.n_running:,} "
        f"running) of {_count(len(d.candidates), 'candidate')} on {_count(n_tasks, 'task')}. "
        f"Candidates are the values of {d.by!r}{what}; {ranks}"
        + (f" (other reward keys in the table: {_listing(other)})." if other else "."),
        "Intervals are 95 % and clustered by task: attempts of one task are repeated "
        "measures, not new tasks. A candidate is called best only when it is best at 95 %; "
        "otherwise the candidates tied with the leader are named.",
    ]
    if "_status" in d.valued.columns:
        no_reward = int(d.valued["_status"].astype(str).isin(_NO_REWARD).sum())
        if no_reward:
            text.append(
                f"{_count(no_reward, 'finished trial')} without a reward (the run failed "
                f"before the verifier scored it) count as {d.value} 0, as in Harbor's own "
                "mean; the Errors section lists them."
            )
    notes = list(d.notes)
    if d.by == "candidate" and "run" in d.all.columns:  # which runs pool, which stay apart
        notes += pooling_notes(d.all, by=d.by)
    if d.by != "eval" and "eval" in d.valued.columns:
        pooled = d.valued.groupby(d.by)["eval"].nunique()
        pooled = pooled[pooled > 1]
        if len(pooled):
            notes.append(
                f"{_listing(list(pooled.index))} pool(s) several evaluations (agent, model, "
                f"data set) under one {d.by!r}: up to {int(pooled.max())}; their means mix "
                "them, and pass@k counts every attempt of a task across them"
            )
    for x in datas:
        if x.missing:
            notes.append(
                f"{x.value!r} is missing (NA) for {_listing(x.missing)}: no trial of their "
                "evaluation has that key. They are shown as missing (not measured), never as "
                "0, and are left out of the rankings and plots of that value."
            )
    return Section("overview", "Overview", text=text, notes=notes)


@dataclass
class _Versus:
    """Each candidate against the leader, paired on the tasks both ran, and the tie rule.

    Computed once (:func:`_versus`) and read by the verdict, the table, the bar chart's
    colours, the trade-off's rings and the flips section, so they cannot disagree.
    """

    leader: Any
    others: list[Any]  # best-ranked first
    runs: dict[Any, Any]  # name -> RunComparison of (name, leader), None: no task in common
    p_holm: dict[Any, float]
    left_out: dict[Any, int]  # tasks only one of the two ran
    best: list[Any]  # the leader and every candidate tied with it, best-ranked first
    confidence: float = 0.95

    def significant(self, name: Any) -> bool:
        p = self.p_holm.get(name, math.nan)
        return bool(p < 1 - self.confidence)

    @property
    def n_tested(self) -> int:
        """The comparisons with a p-value: Holm's family."""
        return sum(_finite(p) is not None for p in self.p_holm.values())

    def cut(self, name: Any) -> bool:
        """Whether compare_runs cut the interval to the range a difference can take."""
        cmp = self.runs[name]
        return cmp is not None and any("cut to the range" in n for n in cmp.notes)

    def cells(self, name: Any) -> tuple[Cell, Cell, Cell, Cell]:
        """Difference, interval, p and Holm's p as printed, wherever they are printed."""
        cmp = self.runs[name]
        if cmp is None:
            return None, None, None, None
        d = cmp.difference
        return (_num(d.estimate, sign=True), _interval(d.low, d.high, sign=True),
                _p(cmp.pvalue), _p(self.p_holm.get(name)))

    def sentence(self, name: Any) -> str:
        """``name − leader = … [… , …] over N paired tasks (paired t, p = …; Holm …)``."""
        cmp = self.runs[name]
        diff, iv, p, p_holm = self.cells(name)
        test = (f"paired t, p = {p}; Holm-adjusted over {self.n_tested} comparison(s) "
                f"with the leader: {p_holm}" if p is not None else "no test")
        return (f"{name} − {self.leader} = {diff}" + (f" {iv}" if iv else "")
                + f" over {_count(cmp.n_tasks, 'paired task')} ({test})")


def _versus(frame: Any, column: str, by: str, ranks: _Ranked) -> _Versus | None:
    """Compare every candidate of ``ranks`` (:func:`_rank`) with the leader by
    :func:`metrickit.compute.stats.compare_runs`: on the tasks both ran, a paired t interval
    (cut to the range a difference can take) and test over them; Holm's adjustment over the
    comparisons with the leader.

    The tie rule is ``compare_metrics``' ``best_group`` alone: the candidates that may be
    best at 95 % confidence (:func:`metrickit.compute.ranking.best_group`, a permutation
    test over tasks). The comparisons with the leader are shown beside it; they do not
    decide who is tied.
    """
    from metrickit.compute.ranking import holm
    from metrickit.compute.stats import compare_runs
    from metrickit.errors import StatsError

    if not len(ranks.ranked):
        return None
    leader, others = ranks.names[0], ranks.names[1:]
    # only the columns the comparisons read: each compare_runs copies what it is given
    wanted = [by, _LABEL, column, f"_kind_{column}", "_status", "has_reward", "reward_valid",
              "trial_dir", "source", _TASK]
    frame = frame[[c for c in dict.fromkeys(wanted) if c in frame.columns]]
    tasks = _task_sets(frame, by)
    runs: dict[Any, Any] = {}
    left_out: dict[Any, int] = {}
    for name in others:
        try:
            runs[name] = compare_runs(frame, name, leader, by=by, task=_LABEL, value=column)
        except StatsError:
            runs[name] = None  # no task in common: nothing to pair
        shared = tasks[name] & tasks[leader]
        left_out[name] = len(tasks[name] | tasks[leader]) - len(shared)
    pvalues = [runs[n].pvalue if runs[n] is not None else math.nan for n in others]
    p_holm = dict(zip(others, holm(pvalues).tolist(), strict=True))
    return _Versus(leader, others, runs, p_holm, left_out, ranks.best)


def _task_sets(frame: Any, by: str) -> dict[Any, frozenset[Any]]:
    """Each candidate's tasks (their labels), from one row per candidate and task."""
    pairs = frame[[by, _LABEL]].drop_duplicates()
    return {name: frozenset(labels.to_numpy(dtype=object).tolist())
            for name, labels in pairs.groupby(by, sort=False)[_LABEL]}


def _order(ranked: Any) -> tuple[list[Any], list[Any]]:
    """The candidates of ``ranked`` (``compare_metrics``' table by group) best-ranked first,
    and those that may be best at 95 % confidence (its ``best_group``; none without rank
    intervals: no verdict)."""
    table = ranked.assign(__order=range(len(ranked))).sort_values(
        ["rank", "p_best", "__order"], ascending=[True, False, True])
    names = list(table.index)
    if not len(table) or table["rank_low"].isna().all():
        return names, []
    return names, [n for n in names if bool(table.loc[n, "best_group"])]


def _against_leader(v: _Versus | None, value: str) -> Table | None:
    """The table of :func:`_versus`: the numbers behind the verdict."""
    if v is None or not v.others:
        return None
    rows: list[list[Cell]] = []
    cut = False
    for name in v.others:
        cmp = v.runs[name]
        if cmp is None:
            rows.append([str(name), "no task in common", None, "0", _int(v.left_out[name]),
                         None, None, "not tested"])
            continue
        diff, iv, p, p_holm = v.cells(name)
        cut = cut or v.cut(name)
        rows.append([str(name), diff, iv, _int(cmp.n_tasks), _int(v.left_out[name]), p,
                     p_holm, "yes" if v.significant(name) else "no"])
    bounds = ("; an interval wider than the range a difference of two means can take is "
              "cut to it (±1 for 0/1 values)" if cut else "")
    return Table(
        ["candidate", f"{value} − leader", "95% CI", "paired tasks", "left out", "p",
         "p (Holm)", "significant"],
        rows, "name num num num num num num -", id="against-leader",
        caption=f"Each candidate against the leader, {v.leader}: the mean difference on the "
        "tasks both ran (paired by task; 'left out': tasks only one of the two ran, not "
        "compared), so it need not equal the difference of the means above when they ran "
        "different tasks. Paired t interval and test over those tasks; p (Holm) is adjusted "
        f"over the {v.n_tested} comparison(s) with the leader, the intervals are not (an "
        f"interval may exclude 0 where the adjusted test does not){bounds}.")


@dataclass
class _Ranked:
    """A value's candidates summarised (``breakdown``) and ranked (``compare_metrics``), with
    the candidates that may be best at 95 % (:func:`_order`)."""

    table: Any
    ranking: Any
    ranked: Any  # ranking.table by group
    names: list[Any]  # best-ranked first
    best: list[Any]


def _rank(d: _Data) -> _Ranked:
    """What the verdict and the plots' highlights need, before the comparisons with the
    leader (:func:`_versus`), so that the drawings can begin while those are computed."""
    from metrickit.compute.metrics import compare_metrics
    from metrickit.compute.stats import breakdown

    table = breakdown(d.finished, by=d.by, value=d.value)
    ranking = compare_metrics(d.valued, {d.value: d.value}, by=d.by, cluster=_LABEL)
    ranked = ranking.table.set_index("group")
    return _Ranked(table, ranking, ranked, *_order(ranked))


def _headline(d: _Data, ranks: _Ranked) -> tuple[Section, _Versus | None]:
    """The candidates table, the ranking (:func:`_rank`), each candidate against the
    leader (:func:`_versus`, which decides the verdict) and the bar chart."""
    from metrickit.reporting import plots

    table, ranking, ranked = ranks.table, ranks.ranking, ranks.ranked
    versus = _versus(d.valued, d.value, d.by, ranks)
    best = ranks.best
    position = {name: i for i, name in enumerate(
        [] if versus is None else [versus.leader, *versus.others])}
    order = sorted(
        range(len(table)),
        key=lambda i: (
            position.get(table[d.by].iloc[i], len(position)),
            str(table[d.by].iloc[i]),
        ),
    )
    rows: list[list[Cell]] = []
    marks: list[str] = []
    times = _durations(list(table["mean_latency_ms"]))
    for i in order:
        r = table.iloc[i]
        name = r[d.by]
        k = ranked.loc[name] if name in ranked.index else None
        note = str(r["note"]) if isinstance(r["note"], str) else ""
        rows.append([
            None if k is None else str(int(k["rank"])),
            str(name),
            _num(r["mean"]),
            _interval(r["ci_low"], r["ci_high"]),
            None if k is None else _ranks(k["rank_low"], k["rank_high"]),
            None if k is None else _share(k["p_best"]),
            _int(r["n"]),
            _int(r["n_tasks"]),
            _int(r["n_errors"]),
            _usd(r["mean_cost_usd"]),
            times[i],
            str(r["method"]) if isinstance(r["method"], str) and k is not None else None,
            note,
        ])
        marks.append(("best" if len(best) == 1 else "tied") if name in best else "")
    columns = ["rank", "candidate", f"mean {d.value}", "95% CI", "rank 95%", "P(best)",
               "trials", "tasks", "errors", "cost / trial", "time / trial", "interval", "note"]
    if len(ranked) == 1:
        verdict = f"One candidate has {d.value!r}: {ranked.index[0]}; nothing to rank."
    elif len(best) == 1:
        verdict = f"Best: {best[0]} (best at 95 %)."
    elif best:
        verdict = f"Tied for best: {_listing(best)} (none is best at 95 %)."
    else:
        verdict = "No ranking: no candidate has a rank interval."
    text = [
        "Rank 95 % is the interval of each candidate's rank over 1,000 draws of the "
        "candidates' means from their task-clustered joint sampling distribution; P(best) "
        "is the share of draws it is best in. A candidate is tied for best when it is one of "
        "the candidates that may be best at 95 % confidence (a permutation test over "
        "tasks); the comparisons with the leader below show the paired differences and do "
        "not decide the tie.",
    ]
    # compare_metrics' notes on its own pairwise table: the report shows _versus' instead
    notes = [n for n in ranking.notes if "(p_holm)" not in n and not n.startswith("pairwise")]
    apart = [] if versus is None else [n for n in versus.others if versus.runs[n] is None]
    if apart:
        notes.append(
            f"{_listing(apart)} ran none of the tasks the leader ran: no paired comparison "
            "with it")
    sets = set(_task_sets(d.valued, d.by).values())
    if len(sets) > 1:
        notes.append(
            f"the candidates did not all run the same tasks ({len(sets)} different task "
            "sets): their means are over different tasks, compare them with care"
        )
    section = Section("candidates", "Candidates", verdict=verdict, text=text, notes=notes)
    classes = "num name num num num num num num num num num - note"
    if not any(row[-1] for row in rows):  # no candidate has a note: no empty column
        columns, rows, classes = columns[:-1], [row[:-1] for row in rows], classes[:-5]
    section.blocks.append(Table(columns, rows, classes, marks=marks, id="headline",
                                caption=f"Mean {d.value} per candidate, best first"))
    against = _against_leader(versus, d.value)
    if against is not None:
        section.blocks.append(against)
    colours = ("" if len(ranked) < 2 else
               "; orange: best at 95 %, gold: tied for best")
    # the bars draw the table's numbers (breakdown, computed once above)
    section.blocks.append(_figure(
        "candidates", f"Mean {d.value} per candidate with 95 % task-clustered intervals"
        f"{colours}.",
        f"bar chart of mean {d.value} per candidate",
        plots.candidate_bars, None, column=d.value, by=d.by, cluster="task", best=best,
        means=table))
    return section, versus


def _pass_at_k(d: _Data) -> Section:
    from metrickit.compute.passk import pass_at_k

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = pass_at_k(d.finished, by=d.by, value=d.value)
    table = result.table
    notes = [str(w.message) for w in caught] + list(result.notes)
    section = Section(
        "pass-at-k", "pass@k",
        text=[f"pass@k per candidate from {d.value!r} (a trial passes when the value is 1): "
              "the unbiased estimator over each task's attempts, averaged over tasks. "
              "pass^k is the chance that all k attempts pass."],
        notes=notes,
    )
    if not len(table):
        section.text.append("No candidate has pass@k (it needs 0/1 values and a task run "
                            "at least once).")
        return section
    ks = sorted(int(k) for k in table["k"].unique())
    rows = []
    for name in d.candidates:
        part = table[table[d.by] == name].set_index("k")
        cells: list[Cell] = [str(name)]
        cells += [_num(part["pass_at_k"].get(k)) for k in ks]
        cells += [_num(part["pass_hat_k"].get(k)) for k in ks]
        cells.append(_int(part["n_tasks"].iloc[0]) if len(part) else None)
        rows.append(cells)
    columns = ["candidate", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks), "tasks"]
    section.blocks.append(Table(columns, rows, "name" + " num" * (len(columns) - 1),
                                id="pass-at-k-table"))
    return section


def _tradeoff(d: _Data, best: list[Any]) -> Section | None:
    import numpy as np

    from metrickit.reporting import plots

    def measured(column: str) -> bool:
        return column in d.valued and np.isfinite(
            d.valued[column].to_numpy(dtype=float, na_value=np.nan)).any()

    if not measured("total_ms"):
        return None
    cost = "cost_usd" if measured("cost_usd") else None
    # computed once: the plot draws this table (means=), so its P(front) labels and the
    # table below are the same numbers, written by the same formatter
    columns = ["total_ms", d.value, *([cost] if cost else [])]
    frame = d.valued[[d.by, _LABEL, *columns]].copy()
    for column in columns:
        frame[column] = frame[column].astype(float)
    means = plots.candidate_means(frame, columns, by=d.by, cluster=_LABEL, maximize=(d.value,),
                                  minimize=("total_ms", "cost_usd"))
    front = plots.pareto_front(means, maximize=(d.value,), minimize=("total_ms", "cost_usd"))
    caption = (f"Mean {d.value} against time per trial" + (", colour: cost per trial" if cost
                                                            else "")
               + "; whiskers: 95 % intervals; ringed and joined: the Pareto front, with each "
               "candidate's probability of being on it.")
    figure = _figure("tradeoff", caption, f"scatter of mean {d.value} against time per trial",
                     _placed_tradeoff, frame, x="total_ms", y=d.value, color=cost, by=d.by,
                     cluster=_LABEL, highlight=best[0] if len(best) == 1 else None,
                     tied=best if len(best) > 1 else None, means=means)
    section = Section("tradeoff", "Trade-off", text=[
        f"A candidate is on the Pareto front when no other has a higher {d.value} and is "
        "also at least as fast" + (" and as cheap" if cost else "") + ". The front is an "
        "estimate: P(front) is the share of draws of the means in which the candidate is "
        "on it."])
    section.blocks.append(figure)
    rows = []
    marks = []
    order = np.argsort(-means[d.value].to_numpy(dtype=float), kind="stable")
    times = _durations(list(means["total_ms"]))
    for i in order:
        r = means.iloc[int(i)]
        rows.append([str(r[d.by]), _num(r[d.value]), times[int(i)],
                     _usd(r[cost]) if cost else None, "yes" if front[int(i)] else "no",
                     _share(r["p_front"])])
        marks.append("best" if front[int(i)] else "")
    section.blocks.append(Table(
        ["candidate", f"mean {d.value}", "time / trial", "cost / trial", "on the front",
         "P(front)"], rows, "name num num num - num", marks=marks,
        id="pareto"))
    if not cost:
        section.notes.append("no cost was recorded: the front is over value and time only")
    return section


def _task_named(frame: Any) -> tuple[Any, str]:
    """``frame`` with the task label under a name a plot may print (``task``), and that
    name (``task_name`` when the table already has a ``task`` column)."""
    if "task" in frame.columns:
        return frame, _TASK
    return frame.rename(columns={_LABEL: "task"}), "task"


def _heatmap(d: _Data) -> Section:
    from metrickit.reporting import plots
    from metrickit.reporting.painter import later

    frame, task = _task_named(d.finished)
    grid = plots.task_grid(frame, task=task, by=d.by, value=d.value)
    text = ["Mean value per task and candidate: tasks easiest first, candidates best first. "
            "A grey cell was not measured (the candidate did not run the task, or the key "
            "is missing from its evaluation); it is not a 0."]
    if grid.detail:
        text.append(f"{grid.detail[0].upper()}{grid.detail[1:]}: an italic row is the mean "
                    f"over its tasks (one row per task would be {grid.n_tasks:,} rows).")
    caption = (f"Mean {d.value} per task (rows) and candidate (columns); grey: not measured"
               + (f"; {grid.detail}." if grid.detail else "."))
    alt = f"heatmap of mean {d.value} per task and candidate"

    def draw() -> Figure:
        return _figure("heatmap", caption, alt, plots.task_heatmap, frame, task=task, by=d.by,
                       value=d.value, grid=grid)

    heatmap = Heatmap("heatmap", caption, alt, grid, d.value, draw,
                      later(_heatmap_rgb, grid.values))
    return Section("tasks", "Tasks", text=text, blocks=[heatmap])


def _heatmap_rgb(values: Any) -> tuple[Any, Any, float]:
    """The colours of the heatmap's cells and of its scale's 11 stops (RGB in [0, 1]), and
    the scale's top: the plot's own (:func:`metrickit.reporting.plots.heatmap_colours`)."""
    import numpy as np

    from metrickit.reporting.plots import heatmap_colours, heatmap_top

    top = heatmap_top(values)
    return (heatmap_colours(values, top=top),
            heatmap_colours(np.linspace(0, top, 11)[None, :], top=top)[0], top)


def _flips(d: _Data, v: _Versus | None) -> Section:
    """The leader against the best-ranked candidate that shares tasks with it: the same
    comparison as its row of the table against the leader (:func:`_versus`), task by task."""
    section = Section("flips", "Flips between the two best")
    if v is None or not v.others:
        section.text.append("Only one candidate has values: nothing to compare.")
        return section
    leader = v.leader
    other = next((c for c in v.others if v.runs[c] is not None), None)
    if other is None:
        section.text.append(f"No other candidate ran a task {leader} ran: nothing to pair.")
        return section
    if other != v.others[0]:
        section.notes.append(
            f"{v.others[0]} (second) shares no task with {leader}; compared with {other}, "
            "the best-ranked candidate that does")
    cmp = v.runs[other]  # (other, leader): a is B here, b is A
    section.verdict = v.sentence(other)
    section.text.append(f"A: {leader}. B: {other}.")
    section.text.append(
        f"Tasks won / lost / tied by A: {cmp.losses} / {cmp.wins} / {cmp.ties}. "
        "A flip is a task one passes (mean over its attempts at least 0.5) and the other "
        "fails.")
    flips = cmp.flips
    section.notes.extend(cmp.notes)
    if not len(flips):
        section.text.append("No task flips between them.")
        return section

    def trial_names(folders: Any) -> str:
        """Trial folder names; a file several trials share (an Inspect log) once, counted."""
        if not isinstance(folders, list):
            return ""
        counts: dict[str, int] = {}
        for f in folders:
            counts[Path(str(f)).name] = counts.get(Path(str(f)).name, 0) + 1
        return ", ".join(name if n == 1 else f"{name} ({n} trials)" for name, n in counts.items())

    rows = []
    shown = flips.head(_MAX_ROWS)
    if len(flips) > len(shown):
        section.notes.append(f"the first {len(shown):,} of {len(flips):,} flips are listed")
    for _, r in shown.iterrows():
        rows.append([
            str(r[_LABEL]), _num(r["mean_b"], 2), _num(r["mean_a"], 2),
            "B passes, A fails" if r["flip"] == "pass→fail" else "A passes, B fails",
            trial_names(r.get("trials_b")), trial_names(r.get("trials_a")),
        ])
    section.blocks.append(Table(
        ["task", "mean A", "mean B", "flip", "trials of A", "trials of B"], rows,
        "name num num name",
        id="flips-table", caption=f"{len(flips)} flip(s)"))
    return section


def _errors(d: _Data) -> Section:
    import pandas as pd

    f = d.finished
    section = Section("errors", "Errors and exceptions")
    status = f["_status"].astype(str) if "_status" in f else pd.Series("ok", index=f.index)
    has_exc = f["exception_type"].notna() if "exception_type" in f else pd.Series(
        False, index=f.index)
    rows = []
    every = d.all[d.by].value_counts()
    for name in d.candidates:
        mine = (f[d.by] == name).to_numpy()
        running = int(every.get(name, 0)) - int(mine.sum())  # what counted_trials left out
        no_reward = int((mine & status.isin(_NO_REWARD).to_numpy()).sum())
        rows.append([str(name), _int(mine.sum()), _int(no_reward),
                     _int((mine & has_exc.to_numpy()).sum()), _int(running)])
    section.blocks.append(Table(
        ["candidate", "finished", "without a reward", "with an exception", "running"], rows,
        "name num num num num", id="outcomes",
        caption="Trials by outcome"))
    for column, caption in (("exception_type", "Exceptions by type"),
                            ("step_exception_type", "Step exceptions by type")):
        if column not in f or not f[column].notna().any():
            continue
        rows = []
        counts = f[column].dropna().astype(str).value_counts()
        for kind, count in counts.items():
            these = f[f[column].astype(str) == kind]
            per = these[d.by].astype(str).value_counts()
            message = ""
            if column == "exception_type" and "exception_message" in these:
                first = these["exception_message"].dropna()
                message = " ".join(str(first.iloc[0]).split())[:_LONG_MESSAGE] if len(
                    first) else ""
            rows.append([str(kind), _int(count), _share(count / len(f)),
                         ", ".join(f"{c}: {n}" for c, n in per.items()), message])
        section.blocks.append(Table(
            ["type", "trials", "share of finished", "per candidate", "example message"],
            rows, "name num num - note", caption=caption,
            id=column.replace("_", "-")))
    if not has_exc.any():
        section.text.append("No trial recorded an exception.")
    return section


def _costs(d: _Data) -> Section:
    import pandas as pd

    f = d.finished
    section = Section("costs", "Cost and tokens")

    def column(name: str) -> Any:
        if name not in f:
            return pd.Series(float("nan"), index=f.index)
        return pd.to_numeric(f[name], errors="coerce").astype(float)

    cost, time = column("cost_usd"), column("total_ms")
    tokens = {k: column(k) for k in ("n_input_tokens", "n_cache_tokens", "n_output_tokens")}
    value = pd.to_numeric(f[d.value], errors="coerce").astype(float)
    rows = []
    names: list[Any] = [*d.candidates, None]
    times = _durations([time[(f[d.by] == n).to_numpy() if n is not None else slice(None)].mean()
                        for n in names])
    for k, name in enumerate(names):
        mine = (f[d.by] == name).to_numpy() if name is not None else slice(None)
        c = cost[mine]
        mean_value = value[mine].mean()
        per_success = (c.mean() / mean_value if c.notna().any() and _finite(mean_value)
                       and mean_value > 0 else None)
        rows.append([
            "all candidates" if name is None else str(name),
            _int(len(c)),
            _usd(c.sum(min_count=1)),
            _usd(c.mean()),
            _usd(per_success),
            *(_int(t[mine].sum(min_count=1)) for t in tokens.values()),
            times[k],
            _int(int(c.isna().sum())),
        ])
    section.blocks.append(Table(
        ["candidate", "trials", "total cost", "cost / trial", f"cost / unit of {d.value}",
         "input tokens", "cache tokens", "output tokens", "time / trial",
         "trials without cost"],
        rows, "name" + " num" * 9, marks=[""] * len(d.candidates) + ["total"],
        id="costs-table"))
    section.text.append(
        f"Cost / unit of {d.value} is the mean cost per trial divided by the mean {d.value} "
        "(for 0/1 rewards: the cost of one success). Sums and means are over the trials "
        "that recorded the quantity.")
    return section


def _spec_section(d: _Data, spec: Any, source: str) -> Section:
    import numpy as np
    import pandas as pd

    from metrickit.compute.metrics import compare_metrics

    frame = d.valued
    acc = pd.to_numeric(frame[d.value], errors="coerce").to_numpy(dtype=float)

    def measured(name: str) -> Any:
        if name not in frame:
            return None
        return pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float,
                                                                   na_value=np.nan)

    latency, cost = measured("total_ms"), measured("cost_usd")
    scores = spec.score_arrays(acc, latency, cost)
    scored = pd.DataFrame({d.by: frame[d.by].to_numpy(), _LABEL: frame[_LABEL].to_numpy(),
                           "__spec": scores["reward"]})
    parts = {p: scores[f"{p}_score"] for p in ("accuracy", "speed", "cost")}
    ranking = compare_metrics(scored, {"spec": "__spec"}, by=d.by, cluster=_LABEL)
    ranked = ranking.table.set_index("group")
    order, best = _order(ranked)  # the headline's order and tie rule
    t = ranked.loc[order].reset_index()
    rows, marks = [], []
    codes = frame[d.by].to_numpy()
    for _, r in t.iterrows():
        mine = codes == r["group"]
        rows.append([str(int(r["rank"])), str(r["group"]), _num(r["value"]),
                     _interval(r["ci_low"], r["ci_high"]), _ranks(r["rank_low"], r["rank_high"]),
                     _share(r["p_best"]), *(_num(parts[p][mine].mean()) for p in parts)])
        marks.append(("best" if len(best) == 1 else "tied") if r["group"] in best else "")
    verdict = (f"One candidate scored: {t['group'].iloc[0]}; nothing to rank." if len(t) == 1
               else f"Best under the spec: {best[0]} (best at 95 %)." if len(best) == 1
               else f"Tied for best under the spec: {_listing(best)}.")
    literal = json.dumps(spec.to_dict(), indent=4)
    weights = ", ".join(f"{k} {v:.2f}" for k, v in spec.weights.items())
    section = Section("reward-spec", "REWARD_SPEC", verdict=verdict, text=[
        f"Each trial scored with the spec: accuracy is {d.value!r}, speed the trial's "
        "total time (total_ms), cost its cost_usd; normalised weights: " + weights + "."])
    section.blocks.append(Code(f"REWARD_SPEC = {literal}",
                               caption=f"The spec used{f' ({source})' if source else ''}:",
                               language="python"))
    section.blocks.append(Table(
        ["rank", "candidate", "spec reward", "95% CI", "rank 95%", "P(best)",
         "accuracy score", "speed score", "cost score"], rows,
        "num name num num num num num num num", marks=marks,
        id="spec-ranking"))
    if getattr(spec, "accuracy_reference", None) is not None:
        section.notes.append(
            f"the spec has accuracy.reference, so {d.value!r} is read as an error (lower is "
            f"better): a candidate with a lower {d.value!r} scores higher on accuracy")
    for name, part, arr in (("time", "speed", latency), ("cost", "cost", cost)):
        unmeasured = len(frame) if arr is None else int(np.isnan(arr).sum())
        if unmeasured and spec.weights.get(part, 0) > 0:
            section.notes.append(
                f"{unmeasured} trial(s) have no measured {name}: that part scores 0 (the "
                "spec's rule for a part that cannot be measured)")
    if d.missing:
        section.notes.append(f"not scored ({d.value!r} missing): {_listing(d.missing)}")
    return section


# -- provenance ------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.cache  # each look-up scans the installed distributions
def _version(package: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _table_versions(d: _Data) -> dict[Path, str]:
    """The ``harness_version`` the trial table records (the readers fill it: Harbor's from
    the job's lock.json, Inspect's from the log) per job folder or log file."""
    if "harness_version" not in d.all or "trial_dir" not in d.all:
        return {}
    found: dict[Path, set[str]] = {}
    part = d.all[["trial_dir", "harness_version"]].dropna().drop_duplicates()
    for folder, version in part.itertuples(index=False):
        path = Path(str(folder))
        key = path if path.suffix in (".eval", ".json") else path.parent
        found.setdefault(key, set()).add(str(version))
    return {k: ", ".join(sorted(v)) for k, v in found.items()}


def _harbor_version(job: Path) -> str | None:
    """What the job's own files say about the Harbor that wrote them (when the trial table
    does not say: a table saved before it had ``harness_version``)."""
    from metrickit.io.harbor_trials import load_json

    for name in ("lock.json", "result.json", "config.json"):
        obj = load_json(job / name)
        if not isinstance(obj, dict):
            continue
        harbor = obj.get("harbor")
        if isinstance(harbor, dict) and isinstance(harbor.get("version"), str | int | float):
            return f"{harbor['version']} ({name} harbor.version)"
        for key in ("harbor_version", "version"):
            if isinstance(obj.get(key), str | int | float):
                return f"{obj[key]} ({name} {key})"
        if "schema_version" in obj:
            return f"Harbor ≥ 0.26 ({name} schema_version {obj['schema_version']})"
    return None


def _trial_files(d: _Data) -> tuple[list[Path], list[Path]]:
    """Harbor job folders and Inspect log files the trials came from."""
    if "trial_dir" not in d.all:
        return [], []
    jobs: dict[Path, bool] = {}  # every parent folder seen: whether it is a job's
    logs: dict[Path, None] = {}
    for entry in d.all["trial_dir"].dropna().astype(str).unique():
        path = Path(entry)
        if path.suffix in (".eval", ".json") and path.is_file():
            logs[path] = None
        elif path.parent not in jobs:  # a job's trials share it: looked at once
            jobs[path.parent] = any((path.parent / n).exists()
                                    for n in ("result.json", "config.json", "job.log"))
    return [job for job, is_job in jobs.items() if is_job], list(logs)


def _task_checksums(folders: Sequence[Any], tasks: Sequence[Any]) -> dict[str, dict[str, int]]:
    """``{task: {checksum: trials}}`` from the trials' ``result.json`` (``folders``, the
    trial table's ``trial_dir``; ``tasks``, their task labels)."""
    from metrickit.io.harbor_trials import load_json

    found: dict[str, dict[str, int]] = {}
    for folder, task in zip(folders, tasks, strict=True):
        if not isinstance(folder, str):
            continue
        obj = load_json(Path(folder) / "result.json")
        checksum = obj.get("task_checksum") if isinstance(obj, dict) else None
        if isinstance(checksum, str):
            seen = found.setdefault(str(task), {})
            seen[checksum] = seen.get(checksum, 0) + 1
    return found


def _inspect_version(log: Path) -> str | None:
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return None
    header = read_eval_log(str(log), header_only=True)
    packages = getattr(header.eval, "packages", None) or {}
    return str(packages.get("inspect_ai")) if packages.get("inspect_ai") else None


def _provenance(d: _Data, command: str, process: str, generated: str,
                task_checksums: Callable[[], dict[str, dict[str, int]]]) -> Section:
    """The provenance section; ``task_checksums`` gives :func:`_task_checksums` of the
    trials (begun in the drawing process: it reads every trial's ``result.json`` again)."""
    import platform

    section = Section("provenance", "Provenance")
    jobs, logs = _trial_files(d)
    table = _table_versions(d)
    recorded = {j: (f"{table[j]} (harness_version)" if j in table else _harbor_version(j))
                for j in jobs}
    harbor = sorted({v for v in recorded.values() if v})
    logged = {log: table.get(log) or _inspect_version(log) for log in logs}
    inspect = sorted({v for v in logged.values() if v})
    facts: list[list[Cell]] = [
        ["metrickit", _version("metrickit")],
        ["Python", f"{platform.python_version()} ({platform.system()})"],
        ["pandas / numpy / matplotlib / scipy",
         " / ".join(_version(p) for p in ("pandas", "numpy", "matplotlib", "scipy"))],
    ]
    if jobs:
        unrecorded = sum(v is None for v in recorded.values())
        facts.append(["Harbor", (", ".join(harbor) + (
            f"; {unrecorded} of {len(jobs)} job(s) record no version" if unrecorded else ""))
            if harbor else
            "not recorded (the trial table has no harness_version, and the jobs' "
            "lock.json, result.json and config.json name none)"])
    if logs:
        facts.append(["Inspect AI", ", ".join(inspect) if inspect else
                      "not recorded (or inspect_ai is not installed to read the logs)"])
    facts += [["command", command]]
    if process and process != command:
        facts.append(["process", process])
    facts.append(["generated (UTC)", generated])
    section.blocks.append(Table(["", ""], facts, "name mono", id="provenance-facts"))
    if jobs:
        rows: list[list[Cell]] = []
        for job in jobs:
            result = job / "result.json"
            rows.append([str(job), _sha256(result) if result.is_file() else "not written yet",
                         recorded[job] or "not recorded"])
        section.blocks.append(Table(
            ["job folder", "sha256 of result.json", "Harbor version"], rows, "- mono",
            id="jobs", caption="Harbor jobs"))
    if logs:
        section.blocks.append(Table(
            ["log", "sha256", "Inspect AI version"],
            [[str(log), _sha256(log), logged[log] or "not recorded"] for log in logs],
            "- mono", id="logs", caption="Inspect AI logs"))
    if not jobs and not logs:
        section.notes.append("the trials name no job folder or log file (a table built in "
                             "Python): there is nothing to hash")
    checksums = task_checksums() if jobs else {}
    if checksums:
        rows = [[task, checksum, _int(n)]
                for task, seen in sorted(checksums.items()) for checksum, n in seen.items()]
        if len(rows) > _MAX_ROWS:  # the tasks that changed first, then the first of the rest
            rows.sort(key=lambda r: len(checksums[str(r[0])]) == 1)
            section.notes.append(f"{len(rows) - _MAX_ROWS:,} of {len(rows):,} task checksums "
                                 "not listed (tasks with more than one are listed first)")
            rows = rows[:_MAX_ROWS]
        section.blocks.append(Table(["task", "task checksum", "trials"], rows, "name mono num",
                                    id="task-checksums", caption="Task checksums"))
        changed = [t for t, seen in checksums.items() if len(seen) > 1]
        if changed:
            section.notes.append(
                f"{len(changed)} task(s) ran with more than one checksum (the task changed "
                f"between trials): {_listing(sorted(changed))}")
    elif jobs:
        section.notes.append("the trials' result.json record no task checksum")
    return section


# -- assembling and writing ------------------------------------------------------------------


def _check_output(path: Path) -> None:
    """Refuse an output the report cannot be written as (before anything is computed or
    any folder made)."""
    if path.suffix.lower() not in (".html", ".htm", ".md"):
        raise MetrickitError(
            f"{path}: the report is written as .html (or .htm) or as Markdown (.md); "
            f"{path.suffix or 'no suffix'} is neither")
    if path.exists() and path.is_dir():
        raise MetrickitError(f"{path} is a folder; name the report file to write")


def _check_spec(spec: Any) -> None:
    if spec is not None and not (hasattr(spec, "score_arrays") and hasattr(spec, "to_dict")):
        hint = (" (a REWARD_SPEC dict: pass mk.RewardSpec.from_dict(REWARD_SPEC))"
                if isinstance(spec, Mapping) else "")
        raise MetrickitError(f"spec= takes a metrickit.RewardSpec, not {type(spec).__name__}"
                             + hint)


def build_sections(
    trials: Any,
    *,
    value: str | None = None,
    spec: Any = None,
    by: str = "candidate",
    command: str = "",
    spec_source: str = "",
) -> dict[str, Any]:
    """Compute everything the report shows: the template context.

    Returns
    -------
    dict
        ``sections`` (a list of :class:`Section`), ``value``, ``by``, ``generated`` (UTC,
        ISO 8601), ``version`` and ``subtitle``; :func:`report` adds ``title`` and renders.

    Raises
    ------
    MetrickitError
        No trial, no value column, a value missing on every trial, or a spec that is not a
        :class:`metrickit.RewardSpec`.
    """
    _check_spec(spec)
    return _build_sections(trials, value=value, spec=spec, by=by, command=command,
                           spec_source=spec_source)


def _build_sections(trials: Any, *, value: str | None, spec: Any, by: str, command: str,
                    spec_source: str) -> dict[str, Any]:
    from metrickit.reporting.painter import later

    datas = _prepare(trials, value, by)
    d = datas[0]  # the value ranked first: the costs and the spec read it
    checksums = (later(_task_checksums, d.all["trial_dir"].tolist(), d.all[_LABEL].tolist())
                 if "trial_dir" in d.all else dict)
    generated = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    n_tasks = int(d.all[_LABEL].nunique())
    headlines, rest = [], []
    for i, x in enumerate(datas):
        ranked = _rank(x)
        # the trade-off's drawing is the longest: it begins before the comparisons with the
        # leader, which it does not need
        tradeoff = _tradeoff(x, ranked.best)
        headline, versus = _headline(x, ranked)
        keyed = [_pass_at_k(x), tradeoff, _heatmap(x), _flips(x, versus)]
        headlines += _keyed([headline], x.value, len(datas), i)
        rest += _keyed([k for k in keyed if k is not None], x.value, len(datas), i)
    sections = [_overview(datas, n_tasks), *headlines, *rest, _errors(d), _costs(d)]
    if spec is not None:
        sections.append(_spec_section(d, spec, spec_source))
    process = shlex.join(sys.argv) if sys.argv and sys.argv[0] else ""
    sections.append(_provenance(d, command, process, generated, checksums))
    return {
        "sections": sections,
        "value": ", ".join(x.value for x in datas),
        "by": d.by,
        "generated": generated,
        "version": _version("metrickit"),
        "subtitle": (f"{_count(len(d.all), 'trial')} · {_count(len(d.candidates), 'candidate')} · "
                     f"{n_tasks} tasks · {_values_shown(datas)} · generated {generated}"),
        "candidates": d.candidates,
    }


def _values_shown(datas: list[_Data]) -> str:
    if len(datas) == 1:
        return f"value {datas[0].value!r}"
    return "values " + ", ".join(repr(x.value) for x in datas)


def _keyed(sections: list[Section], key: str, n_keys: int, i: int) -> list[Section]:
    """The sections of one of several reward keys, headed by it. The first key keeps the
    plain anchors (those of a one-key report); each further key's anchors, table ids and
    image names end in ``-<key>``, so none is written twice."""
    if n_keys == 1:
        return sections
    suffix = "" if i == 0 else "-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", key).strip("-")
                                      or str(i))
    for section in sections:
        section.heading = f"{section.heading}: {key}"
        section.id += suffix
        for block in section.blocks:
            if isinstance(block, Table) and block.id:
                block.id += suffix
            elif isinstance(block, Figure | Heatmap):
                block.name += suffix
    return sections


def _environment() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("metrickit.reporting", "templates"),
        # HTML is escaped; Markdown escapes its cells with the |md filter instead.
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                            disabled_extensions=("md.j2", "css.j2"),
                                            default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def _default_title(trials_context: dict[str, Any]) -> str:
    return f"Evaluation report: {trials_context['value']} by {trials_context['by']}"


def _python_call(path: Path, value: str | None, spec: Any, title: str | None, by: str) -> str:
    args = ["trials", f"path={str(path)!r}"]
    if value is not None:
        args.append(f"value={value!r}")
    if spec is not None:
        args.append("spec=RewardSpec.from_dict("
                    + json.dumps(spec.to_dict(), separators=(",", ":")) + ")")
    if title is not None:
        args.append(f"title={title!r}")
    if by != "candidate":
        args.append(f"by={by!r}")
    return f"metrickit.report({', '.join(args)})"


def report(
    trials: Any,
    path: str | Path = "report.html",
    *,
    value: str | None = None,
    spec: Any = None,
    title: str | None = None,
    by: str = "candidate",
    command: str | None = None,
    spec_source: str = "",
) -> Path:
    """Write a self-contained report of a trial table (HTML, or Markdown for ``.md``).

    Parameters
    ----------
    trials
        A trial table (pandas or polars): :func:`metrickit.read_harbor_job`,
        :func:`metrickit.read_inspect_log`, :func:`metrickit.trials_from_frame`, ...
    path
        Where to write. A name ending in ``.md`` writes Markdown, with the plots as PNG
        files in ``<stem>_files/`` beside it; anything else one HTML file with the plots
        inside it.
    value
        The reward column to rank by; default every reward key with values, each with its
        own headline, ranking and comparisons (``reward`` first where the table has it), as
        Harbor reports every key of a multi-dimensional reward. The costs and the spec
        read the first.
    spec
        A :class:`metrickit.RewardSpec`: adds the spec and the candidates ranked by it
        (accuracy = ``value``, speed = ``total_ms``, cost = ``cost_usd``).
    title
        The page title (default names the value and the candidate column).
    by
        The candidate column (default ``candidate``: one per recorded configuration, as
        metrickit's readers label it; runs with identical recorded configurations pool
        into one, and the overview says which did).
    command
        The command shown under provenance (default: this call, spelled out).
    spec_source
        Where the spec came from (a file name), shown beside it.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    MetrickitError
        No trial, no value column, a value missing (NA) on every trial, a spec that is
        not a RewardSpec.

    Examples
    --------
    >>> import tempfile, pandas as pd, metrickit as mk
    >>> from metrickit.reporting.html import report
    >>> df = pd.DataFrame({"task": ["q1", "q2", "q3"] * 2, "run": ["a"] * 3 + ["b"] * 3,
    ...                    "ok": [1, 1, 0, 1, 0, 0], "ms": [900.0, 1200, 800, 400, 300, 500]})
    >>> trials = mk.trials_from_frame(df, task="task", candidate="run", reward="ok",
    ...                               latency_ms="ms")
    >>> out = report(trials, tempfile.mkdtemp() + "/report.html")
    >>> text = out.read_text()
    >>> "Tied for best: a, b" in text, "http://" in text
    (True, False)
    """
    from urllib.parse import quote

    path = Path(path)
    _check_output(path)  # before any work: a refused output computes and writes nothing
    _check_spec(spec)
    if command is None:
        command = _python_call(path, value, spec, title, by)
    context = build_sections(trials, value=value, spec=spec, by=by, command=command,
                             spec_source=spec_source)
    context["title"] = title or _default_title(context)
    env = _environment()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".md":
        images = path.with_name(f"{path.stem}_files")
        images.mkdir(exist_ok=True)
        for section in context["sections"]:
            # Markdown has no coloured cells: a heatmap is its PNG there
            section.blocks = [_drawn(b) if isinstance(b, Heatmap) else b
                              for b in section.blocks]
            for block in section.blocks:
                if isinstance(block, Figure):
                    (images / f"{block.name}.png").write_bytes(block.png)
                    # a link is a URL: "my report_files" and "report (1)_files" encoded
                    block.path = quote(f"{images.name}/{block.name}.png")
        env.filters["md"] = _md
        text = env.get_template("report.md.j2").render(**context)
        text = re.sub(r"\n{3,}", "\n\n", text)  # the template's blank lines, collapsed
    else:
        text = env.get_template("report.html.j2").render(**context)
    path.write_text(text, encoding="utf-8")
    return path


def _drawn(heatmap: Heatmap) -> Figure:
    figure = heatmap.draw()
    figure.name = heatmap.name  # with its reward key's suffix (_keyed)
    return figure


# -- command line ----------------------------------------------------------------------------


def load_sources(paths: Sequence[Path], *, value: str | None = None, by: str = "eval") -> Any:
    """One trial table from every path, whatever its format (:func:`metrickit.load`: job
    folders, Inspect logs, lm-evaluation-harness output, Terminal-Bench runs, trial table
    files). A tidy table is read with ``task_name``, the value column (default
    ``reward``) and, when present, ``by`` as the candidates, ``total_ms`` and ``cost_usd``.

    Raises
    ------
    TrialSourceError
        A path of no format, or reward JSONL (a reward frame has no tasks or candidates).
    """
    from metrickit.io.registry import FORMATS, read_sources, sources

    found = sources(paths)
    rewards = [s.path for s in found if not FORMATS[s.format].trials]
    if rewards:
        from metrickit.errors import TrialSourceError

        raise TrialSourceError(
            f"{rewards[0]}: reward JSONL (one reward per line, no tasks or candidates) is "
            "not a trial source the report can rank; give it Harbor job folders, logs, runs "
            "or a trial table (`metrickit summarize` summarises reward files)")
    return read_sources(found, value=value, candidate=by, progress=False)


def run_report(
    args: argparse.Namespace,
    *,
    command: str | None = None,
    spec_loader: SpecLoader | None = None,
) -> int:
    """Run ``metrickit report`` from parsed arguments (:func:`add_report_arguments`).

    ``spec_loader`` turns ``--spec`` into a spec object (the command line passes one that
    reads the file's REWARD_SPEC); ``command`` is recorded under provenance (default:
    ``sys.argv``).
    """
    from metrickit.reporting.painter import painting

    _check_output(Path(args.output))  # before the sources are read
    # the figures are drawn in a second process while this one reads and computes, where
    # that is safe (see metrickit.reporting.painter)
    with painting() as forked:
        if not forked:  # drawn here: never with a backend that opens windows
            import matplotlib

            matplotlib.use("Agg")
        spec = None
        if args.spec is not None:
            if spec_loader is None:
                raise MetrickitError("--spec needs a spec loader: run it as `metrickit report`")
            spec = spec_loader(args.spec)
        trials = load_sources(args.sources, value=args.value, by=args.by)
        written = report(trials, args.output, value=args.value, spec=spec, title=args.title,
                         by=args.by, command=command or shlex.join(sys.argv),
                         spec_source=str(args.spec) if args.spec else "")
    print(f"wrote {written}")
    return 0
