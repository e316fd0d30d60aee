"""Task groups: the macro mean (each group weighted once) and HELM's mean win rate.

A benchmark whose tasks fall into groups (a subject, a difficulty, an lm-eval subtask's
group; the trial table's ``task_group`` column) can be summarised two ways:

* the **micro mean**, every task weighted once (metrickit's estimand everywhere: the mean
  over tasks of each task's mean over its counted attempts), where a large group weighs
  more;
* the **macro mean** (:func:`macro_mean`), every group weighted once and every task once
  within its group: what Inspect's ``grouped()`` and lm-eval's unweighted group
  aggregation report.

:func:`win_rate` gives HELM's *mean win rate*: in each group, the share of the other
candidates a candidate beats (a tie counts half), averaged over the groups, with an
interval from a seeded bootstrap over tasks within groups.

Both read only the trials that count (:func:`metrickit._core.frame.counted_trials`) and
take the task (``(source, task_name)``, :func:`metrickit.compute.tables.task_labels`) as
the sampling unit.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit._core.frame import Policy, counted_trials
from metrickit.compute.intervals import FEW, Interval, mean_ci
from metrickit.compute.metrics import Metric, StatedInterval
from metrickit.compute.tables import as_pandas, require_by, task_codes, value_column
from metrickit.errors import MetricError, StatsError

__all__ = ["MacroMean", "WinRate", "macro_mean", "win_rate"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

#: Below this many groups a mean win rate takes few distinct values: flagged in ``notes``.
FEW_GROUPS = 5


@dataclass(frozen=True)
class _Cells:
    """One task mean per (candidate, task) cell, with the cell's group."""

    mean: FloatArray  # cell means
    candidate: IntArray  # candidate code of each cell
    task: IntArray  # task code of each cell
    group: IntArray  # group code of each cell
    groups: list[Any]  # group labels
    row_cell: IntArray  # the cell of each measured row (-1: not measured)


def _group_labels(df: Any, over: str, where: str) -> Any:
    """The ``over`` column as labels; a trial without a group is refused."""
    if over not in df.columns:
        raise StatsError(
            f"{where}: over={over!r} is not a column of the table; columns are "
            f"{list(df.columns)} (trials_from_frame(group=...) fills task_group)"
        )
    labels = df[over]
    null = labels.isna().to_numpy(dtype=bool)
    if null.any():
        raise StatsError(
            f"{where}: {int(null.sum()):,} trial(s) have no {over!r} (the first at row "
            f"{int(np.argmax(null))}): every task needs a group; fill them explicitly "
            f"(e.g. trials[{over!r}] = trials[{over!r}].fillna('other')) or pass another over="
        )
    return labels


def _cells(x: FloatArray, candidates: IntArray, units: IntArray, labels: Any,
           where: str, tasks: Any = None) -> _Cells:
    import pandas as pd

    measured = np.isfinite(x)
    codes, groups = pd.factorize(labels, sort=True)
    k = int(units.max()) + 1 if units.size else 1
    key = candidates[measured].astype(np.int64) * k + units[measured]
    cells, inverse = np.unique(key, return_inverse=True)
    n = np.bincount(inverse, minlength=cells.size)
    mean = np.bincount(inverse, weights=x[measured], minlength=cells.size) / n
    cell_group = np.full(cells.size, -1, dtype=np.intp)
    row_group = codes[measured]
    cell_group[inverse] = row_group
    # every row of a cell must be in its cell's group: a task in two groups is ambiguous
    clash = row_group != cell_group[inverse]
    if clash.any():
        i = int(np.argmax(clash))
        row = int(np.flatnonzero(measured)[i])
        name = tasks[row] if tasks is not None else row
        raise StatsError(
            f"{where}: task {name!r} (row {row}) has trials in two groups "
            f"({groups[row_group[i]]!r} and {groups[cell_group[inverse][i]]!r}); a task "
            "belongs to one group"
        )
    row_cell = np.full(x.size, -1, dtype=np.intp)
    row_cell[measured] = inverse
    return _Cells(mean, (cells // k).astype(np.intp), (cells % k).astype(np.intp),
                  cell_group, list(groups), row_cell)


def _reward(df: Any, value: str | None) -> tuple[str, FloatArray]:
    import pandas as pd

    column = value_column(df, value)
    return column, pd.to_numeric(df[column]).to_numpy(dtype=np.float64, na_value=np.nan)


def _units(df: Any) -> IntArray:
    units, _ = task_codes(df, "auto")
    return np.arange(len(df), dtype=np.intp) if units is None else units


def _task_names(df: Any) -> Any:
    from metrickit.compute.tables import TASK_COLUMNS

    column = next((c for c in TASK_COLUMNS if c in df.columns), None)
    return None if column is None else df[column].to_numpy(dtype=object)


def _candidate_codes(df: Any) -> IntArray:
    import pandas as pd

    if "candidate" not in df.columns:
        return np.zeros(len(df), dtype=np.intp)
    return pd.factorize(df["candidate"], use_na_sentinel=False)[0].astype(np.intp)


def _macro_rows(frame: Any, over: str, value: str | None, name: str) -> FloatArray:
    """Per-row values whose mean over tasks (of each task's mean) is the macro mean, and
    whose task-clustered spread is the stratified one: what the rank intervals and the
    pairwise tests of :func:`metrickit.compare_metrics` resample (the interval itself is
    stated directly: :func:`_stratified`).

    Within each candidate, with ``T`` tasks in ``G`` groups, ``T_g`` in group ``g``, group
    means ``m_g`` (over their tasks) and macro mean ``M``:
    ``u = M + k_g (x - m_g)``, ``k_g = T / (G T_g) * sqrt((T - 1) T_g / (T (T_g - 1))) * r``.
    Each task's mean of ``u`` is ``M + k_g (t - m_g)`` (``t``: the task's mean), so their
    mean over tasks is ``M``; their variance over the ``T`` tasks (ddof 1) over ``T`` is the
    unbiased stratified variance ``sum_g s_g^2 / (G^2 T_g)`` times ``r^2``, where ``r`` is
    the ratio of the 95 % t quantiles with Welch-Satterthwaite's degrees of freedom and with
    ``T - 1`` (>= 1): so a task-clustered t interval of ``u`` is the stratified interval,
    narrow groups' few degrees of freedom included. The spread between groups is not
    sampling error (the groups are fixed) and is not in it.
    """
    df = as_pandas(frame)
    _, x = _reward(df, value)
    out = np.full(len(df), np.nan)
    if not len(df):
        return out
    labels = _group_labels(df, over, f"macro_mean({over!r})")
    c = _cells(x, _candidate_codes(df), _units(df), labels, f"macro_mean({over!r})",
               _task_names(df))
    n_cand = int(c.candidate.max()) + 1 if c.candidate.size else 0
    n_groups = len(c.groups)
    flat = c.candidate * n_groups + c.group

    def per_group(weights: Any = None) -> FloatArray:
        return np.bincount(flat, weights=weights, minlength=n_cand * n_groups).reshape(
            n_cand, n_groups).astype(np.float64)

    size = per_group()
    with np.errstate(invalid="ignore", divide="ignore"):
        group_mean = per_group(c.mean) / size
        present = size > 0
        n_present = present.sum(axis=1)
        n_tasks = size.sum(axis=1)
        macro = np.where(present, group_mean, 0.0).sum(axis=1) / n_present
        ss = per_group((c.mean - group_mean[c.candidate, c.group]) ** 2)
        several = size > 1
        unbiased = np.where(several, np.sqrt((n_tasks[:, None] - 1) * size
                                             / (n_tasks[:, None] * (size - 1))), 0.0)
        part = np.where(several, ss / np.maximum(size - 1, 1)
                        / (n_present[:, None] ** 2 * size), 0.0)
        satterthwaite = part.sum(axis=1) ** 2 / np.where(
            several, part**2 / np.maximum(size - 1, 1), 0.0).sum(axis=1)
        scale = (n_tasks[:, None] / (n_present[:, None] * size) * unbiased
                 * _t_ratio(satterthwaite, n_tasks - 1)[:, None])
    rows = c.row_cell >= 0
    cell = c.row_cell[rows]
    cand, grp = c.candidate[cell], c.group[cell]
    out[rows] = macro[cand] + scale[cand, grp] * (x[rows] - group_mean[cand, grp])
    return out


def _one_task_note(name: str, lonely: list[Any]) -> str:
    return (f"{name}: group(s) {lonely[:5]} have one task: a group's spread cannot be "
            "estimated from one task, so the interval leaves that group's uncertainty out "
            "(it is too narrow); group such tasks together")


def _stratified(frame: Any, over: str, value: str | None, name: str,
                confidence: float) -> tuple[Interval, tuple[str, ...]]:
    """The macro mean over ``frame``'s tasks with its stratified interval (tasks sampled
    within fixed groups): ``M = mean_g m_g``, ``se**2 = sum_g s_g**2 / (G**2 T_g)`` over the
    groups with at least two tasks, and Student's t with Welch-Satterthwaite's degrees of
    freedom, cut to the range of the values. One group: the plain mean over tasks
    (:func:`metrickit.compute.intervals.mean_ci`, clustered by task)."""
    from metrickit._core.dist import t_ppf

    df = as_pandas(frame)
    _, x = _reward(df, value)
    where = f"macro_mean({over!r})"
    labels = _group_labels(df, over, where)
    units = _units(df)
    measured = np.isfinite(x)
    if not measured.any():  # the key is absent from this evaluation: NA, not 0
        return Interval(math.nan, math.nan, math.nan, math.nan, 0, "none (missing: NA)",
                        confidence, 0), ()
    c = _cells(x, _candidate_codes(df), units, labels, where, _task_names(df))
    size = np.bincount(c.group, minlength=len(c.groups)).astype(np.float64)
    present = size > 0
    n_groups, n_tasks = int(present.sum()), int(c.mean.size)
    if n_groups == 1:
        iv = mean_ci(x[measured], clusters=units[measured], confidence=confidence)
        return Interval(iv.estimate, iv.low, iv.high, iv.se, iv.n, iv.method, confidence,
                        n_tasks, iv.note), ()
    with np.errstate(invalid="ignore", divide="ignore"):
        group_mean = np.bincount(c.group, weights=c.mean, minlength=size.size) / size
        ss = np.bincount(c.group, weights=(c.mean - group_mean[c.group]) ** 2,
                         minlength=size.size)
        several = size > 1
        part = np.where(several, ss / np.maximum(size - 1, 1) / (n_groups**2 * size), 0.0)
    macro = float(group_mean[present].mean())
    se = math.sqrt(float(part.sum()))
    df_w = float(part.sum() ** 2 / np.sum(part[several] ** 2 / (size[several] - 1))
                 ) if se > 0 else math.nan
    notes: tuple[str, ...] = ()
    note = []
    lonely = [c.groups[g] for g in np.flatnonzero(size == 1)]
    if lonely:
        notes = (_one_task_note(name, lonely),)
        note.append(f"{len(lonely)} group(s) of one task: too narrow")
    if n_tasks < FEW:
        note.append(f"few tasks ({n_tasks})")
    if math.isfinite(df_w) and df_w >= 1:
        crit = float(t_ppf(0.5 + confidence / 2, df_w))
        low = max(macro - crit * se, float(x[measured].min()))
        high = min(macro + crit * se, float(x[measured].max()))
    elif se == 0 and several.any():
        low = high = macro
        note.append("every task in a group has the same mean: the interval has no width")
    else:
        low = high = math.nan
        note.append("no group has two tasks: no interval")
    return Interval(macro, low, high, se, int(measured.sum()), "stratified", confidence,
                    n_tasks, "; ".join(note)), notes


def _t_ratio(df: FloatArray, df_all: FloatArray) -> FloatArray:
    """How much wider the stratified interval's t quantile (``df``, Welch-Satterthwaite) is
    than the one a task-clustered mean interval uses (``df_all``: tasks - 1), at 95 %."""
    from metrickit._core.dist import t_ppf

    ok = np.isfinite(df) & (df > 0) & (df_all >= 1)
    out = np.ones(df.shape)
    out[ok] = t_ppf(0.975, df[ok]) / t_ppf(0.975, df_all[ok])
    return np.maximum(out, 1.0)


@dataclass(frozen=True)
class MacroMean(Metric):
    """The :class:`~metrickit.Metric` of :func:`macro_mean`: it states its value and
    stratified interval to :func:`metrickit.compare_metrics` (:attr:`Metric.stated`), and
    its per-row values serve the rank intervals and pairwise tests; called on a frame it
    gives the macro mean over the frame's trials."""

    over: str = "task_group"
    value: str | None = None

    def __post_init__(self) -> None:
        # bound to this instance, so a renamed copy (dataclasses.replace) states its name
        object.__setattr__(self, "stated", self.state)

    def state(self, frame: Any, confidence: float) -> StatedInterval:
        """The macro mean over ``frame``'s tasks and its stratified interval; the macro
        mean over trials as ``harbor_value``; a note for groups of one task."""
        try:
            iv, notes = _stratified(frame.to_native() if hasattr(frame, "to_native")
                                    else frame, self.over, self.value, self.name, confidence)
        except StatsError as exc:
            raise MetricError(str(exc)) from None
        harbor = self.compute(frame) if iv.n else math.nan
        return StatedInterval(iv, harbor if isinstance(harbor, float) else math.nan, notes)

    def compute(self, frame: Any) -> float | dict[str, float]:
        import pandas as pd

        from metrickit._core.frame import is_lazy, materialize, native_frame

        native = materialize(frame) if is_lazy(frame) else native_frame(frame)
        df = as_pandas(counted_trials(native).frame)
        try:
            _, x = _reward(df, self.value)
            labels = _group_labels(df, self.over, f"macro_mean({self.over!r})")
            _cells(x, _candidate_codes(df), _units(df), labels,
                   f"macro_mean({self.over!r})", _task_names(df))  # a task in two groups
        except StatsError as exc:
            raise MetricError(str(exc)) from None
        keep = np.isfinite(x)
        if not keep.any():
            raise MetricError(f"metric {self.name!r}: no trial has a value of "
                              f"{self.value or 'the reward'!r} to average")
        codes = pd.factorize(labels[keep])[0]
        return float((np.bincount(codes, weights=x[keep]) / np.bincount(codes)).mean())


def macro_mean(over: str = "task_group", *, value: str | None = None,
               name: str | None = None) -> Metric:
    """The mean over groups of each group's mean over its tasks (each group weighted once,
    each task once within its group), as a metric for :func:`metrickit.compare_metrics`.

    Beside :func:`metrickit.harbor_metric` (the micro mean: every task once), it shows
    whether a ranking holds when every group counts equally. Within a group each task is
    the mean over its counted attempts, as everywhere in metrickit.

    Parameters
    ----------
    over
        The group column: ``"task_group"`` (default; filled by the readers where the source
        records a group, and by ``trials_from_frame(group=...)``), or any other column
        that gives each task one group.
    value
        The reward column; default the table's only reward key.
    name
        Label in tables (default ``macro_mean[<over>]``).

    Returns
    -------
    Metric
        Called on a frame: the macro mean over the frame's trials grouped as given (each
        group's mean over its trials: Inspect's and lm-eval's unweighted group means). In
        ``compare_metrics``: ``value`` is the macro mean over tasks (each group's mean over
        its tasks, each task's mean over its attempts), ``harbor_value`` the one over
        trials, and the interval is the stratified one, stated directly (method
        ``"stratified"``: tasks sampled within their groups, Student's t with
        Welch-Satterthwaite's degrees of freedom; the groups are fixed: the estimand is
        the mean over *these* groups). A group with one task adds a line to
        ``Comparison.notes`` (its spread is unknown: the interval is too narrow). Rank
        intervals and the pairwise tests are task-clustered with the stratified spread.
        Candidates are weighted within each ``candidate`` (compare them with
        ``by="candidate"``).

    Raises
    ------
    MetricError
        A trial without a group, a task in two groups, a missing ``over`` or ``value``
        column.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["a1", "a2", "a3", "b1"], "subject": ["a", "a", "a", "b"],
    ...                    "ok": [1, 1, 1, 0]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model=None, group="subject")
    >>> mk.harbor_metric("mean")(t), mk.macro_mean("task_group")(t)
    (0.75, 0.5)
    """
    label = name or f"macro_mean[{over}]"

    def values(nf: Any) -> dict[str, FloatArray]:
        try:
            return {label: _macro_rows(nf.to_native(), over, value, label)}
        except StatsError as exc:
            raise MetricError(str(exc)) from None

    macro = MacroMean(
        label,
        values=values,
        description=f"mean over {over!r} groups of each group's mean (each group once)",
        skip_na=True,
        over=over,
        value=value,
    )
    return macro


# ---------------------------------------------------------------------------
# win rate
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WinRate:
    """Each candidate's mean win rate across groups (HELM's), from :func:`win_rate`.

    Attributes
    ----------
    table
        One row per candidate, best first: ``win_rate`` (in each group, the share of the
        other candidates it beats, a tie counting half, averaged over the groups),
        ``ci_low``/``ci_high`` (simultaneous over every candidate; see :func:`win_rate`),
        ``n_groups`` (the groups it was compared in) and ``mean`` (its macro mean).
    per_group
        One row per (group, candidate): ``mean`` (over the group's tasks), ``win_rate``
        (in that group), ``n_tasks``.
    notes
        What was left out and where the interval is rough.
    """

    table: Any
    per_group: Any
    over: str
    by: str
    value: str
    confidence: float
    notes: list[str] = field(default_factory=list)

    def _headline(self) -> str:
        top = self.table.iloc[0] if len(self.table) else None
        if top is None:
            return "mean win rate: no candidate"
        return (f"mean win rate over {self.per_group[self.over].nunique():,} groups "
                f"({self.over}): first {top[self.by]} {top['win_rate']:.3f} "
                f"[{top['ci_low']:.3f}, {top['ci_high']:.3f}] "
                f"({self.confidence:.0%} simultaneous)")

    def __repr__(self) -> str:
        notes = "".join(f"\nnote: {n}" for n in self.notes)
        shown = self.table.to_string(index=False, float_format=lambda v: f"{v:.3f}")
        return f"{self._headline()}\n{shown}{notes}"

    def _repr_html_(self) -> str:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (f"<p><b>{html.escape(self._headline())}</b></p>"
                + self.table.to_html(index=False, float_format=lambda v: f"{v:.3f}")
                + (f"<ul>{notes}</ul>" if notes else ""))


def _group_wins(scores: FloatArray) -> FloatArray:
    """Win rates within one group: ``scores`` (..., C) -> (..., C), NaN where a candidate
    has no score or no other candidate has one."""
    known = np.isfinite(scores)
    s = np.where(known, scores, 0.0)
    beats = (s[..., :, None] > s[..., None, :]) + 0.5 * (s[..., :, None] == s[..., None, :])
    pair = known[..., :, None] & known[..., None, :]
    c = scores.shape[-1]
    pair &= ~np.eye(c, dtype=bool)
    others = pair.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known & (others > 0), (beats * pair).sum(axis=-1) / others, np.nan)


def _mean_over_groups(wins: FloatArray) -> FloatArray:
    """(..., G, C) -> (..., C): the mean over the groups where a win rate exists."""
    known = np.isfinite(wins)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(known, wins, 0.0).sum(axis=-2) / known.sum(axis=-2)


def _simultaneous(
    matrix: FloatArray,
    present: npt.NDArray[np.bool_],
    members: list[IntArray],
    scores: FloatArray,
    confidence: float,
) -> tuple[FloatArray, FloatArray, int]:
    """Low and high mean win rates from every pair's Holm-adjusted paired t test."""
    from metrickit.compute.paired import paired_t
    from metrickit.compute.ranking import holm

    n_g, n_c = scores.shape
    pairs: list[tuple[int, int, int, float]] = []  # group, c, d, signed difference
    pvalues: list[float] = []
    for g, idx in enumerate(members):
        for c in range(n_c):
            for d in range(c + 1, n_c):
                if not (np.isfinite(scores[g, c]) and np.isfinite(scores[g, d])):
                    continue
                both = idx[present[idx, c] & present[idx, d]]
                diff = matrix[both, c] - matrix[both, d]
                if both.size < 2:
                    p, mean = math.nan, 0.0
                else:
                    p, mean = paired_t(diff)[1], float(diff.mean())
                pairs.append((g, c, d, mean))
                pvalues.append(p)
    significant = holm(pvalues) < 1 - confidence
    low = np.zeros((n_g, n_c, n_c))
    high = np.zeros((n_g, n_c, n_c))
    compared = np.zeros((n_g, n_c, n_c), dtype=bool)
    for (g, c, d, mean), sig in zip(pairs, significant, strict=True):
        compared[g, c, d] = compared[g, d, c] = True
        if sig and mean > 0:  # c beats d
            low[g, c, d] = high[g, c, d] = 1.0
        elif sig and mean < 0:
            low[g, d, c] = high[g, d, c] = 1.0
        else:
            high[g, c, d] = high[g, d, c] = 1.0
    others = compared.sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        low_g = np.where(others > 0, low.sum(axis=2) / others, np.nan)
        high_g = np.where(others > 0, high.sum(axis=2) / others, np.nan)
    return _mean_over_groups(low_g), _mean_over_groups(high_g), len(pairs)


def win_rate(
    trials: Any,
    *,
    over: str = "task_group",
    by: str = "candidate",
    value: str | None = None,
    policy: Policy = "0.25",
    confidence: float = 0.95,
) -> WinRate:
    """Each candidate's mean win rate across groups (HELM's "mean win rate").

    In each group a candidate's score is the mean over the group's tasks of each task's
    mean over its counted attempts; its win rate there is the share of the other candidates
    with a score in that group that it beats (equal scores count half); its mean win rate
    is the mean over the groups where it was compared.

    The interval is simultaneous: every pair of candidates in every group is compared
    paired on the tasks both ran (a paired t test over the tasks' means, as
    :func:`metrickit.compare_runs` does), with Holm's adjustment over all those pairs. A
    pair whose order is significant counts as won or lost at both ends of the interval;
    any other pair may be a win, a tie or a loss, so it counts 0 at the low end and 1 at
    the high end. So the interval holds the true mean win rate whenever no significant
    order is wrong: with probability at least ``confidence``. A bootstrap over tasks
    within groups is not used: on near-ties it covers 60-90 % instead of 95 % (a win rate
    jumps between 0 and 1 there), while this interval widens where orders are uncertain.

    Parameters
    ----------
    trials
        A trial table (any metrickit reader, ``trials_from_frame(group=...)``).
    over
        The group column (default ``"task_group"``).
    by
        What is compared (default ``"candidate"``).
    value
        The reward column; default the table's only reward key.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`).
    confidence
        The simultaneous level of the intervals.

    Returns
    -------
    WinRate
        ``.table`` (one row per candidate, best first), ``.per_group``, ``.notes``.

    Raises
    ------
    StatsError
        A missing column, a trial without a group, a task in two groups, fewer than two
        candidates.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["a1", "a2", "b1", "b2"] * 2,
    ...                    "subject": ["a", "a", "b", "b"] * 2,
    ...                    "model": ["m1"] * 4 + ["m2"] * 4, "ok": [1, 1, 0, 1, 0, 1, 1, 1]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model="model", group="subject")
    >>> mk.win_rate(t).table[["candidate", "win_rate", "n_groups"]]
      candidate  win_rate  n_groups
    0        m1       0.5         2
    1        m2       0.5         2
    """
    import pandas as pd

    if not 0 < confidence < 1:
        raise StatsError(f"confidence={confidence!r}; expected a number between 0 and 1")
    df = as_pandas(trials)
    require_by(list(df.columns), by, "win_rate")
    counted = counted_trials(df, policy=policy)
    df = as_pandas(counted.frame).reset_index(drop=True)
    notes = counted.notes()
    column, x = _reward(df, value)
    n_na = int(np.isnan(x).sum())
    if n_na:
        notes.append(f"{n_na:,} trial(s) without {column!r} (missing, NA) left out")
    labels = _group_labels(df, over, "win_rate")
    cand_codes, cand_names = pd.factorize(df[by], sort=True)
    if (cand_codes < 0).any():
        raise StatsError(f"win_rate: {int((cand_codes < 0).sum()):,} trial(s) have no {by!r}")
    if len(cand_names) < 2:
        raise StatsError(f"win_rate: one {by} ({list(cand_names)}); a win rate needs two")
    units, _ = task_codes(df, "auto")
    if units is None:
        units = np.arange(len(df), dtype=np.intp)
        notes.append("no task column: every trial is a task of its own")
    cells = _cells(x, cand_codes.astype(np.intp), units, labels, "win_rate", _task_names(df))
    n_c, n_g = len(cand_names), len(cells.groups)
    # tasks (within their group) x candidates: each cell's task mean, NaN where not run
    task_ids, task_of_cell = np.unique(cells.task, return_inverse=True)
    matrix = np.full((task_ids.size, n_c), np.nan)
    matrix[task_of_cell, cells.candidate] = cells.mean
    task_group = np.empty(task_ids.size, dtype=np.intp)
    task_group[task_of_cell] = cells.group
    present = np.isfinite(matrix)
    filled = np.where(present, matrix, 0.0)
    scores = np.full((n_g, n_c), np.nan)
    n_tasks = np.zeros((n_g, n_c), dtype=int)
    members = [np.flatnonzero(task_group == g) for g in range(n_g)]
    for g, idx in enumerate(members):
        n_tasks[g] = present[idx].sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            scores[g] = np.where(n_tasks[g] > 0, filled[idx].sum(axis=0) / n_tasks[g], np.nan)
    wins = _group_wins(scores)
    mean_wins = _mean_over_groups(wins)
    low, high, n_pairs = _simultaneous(matrix, present, members, scores, confidence)
    compared = np.isfinite(wins).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        macro = np.nansum(np.where(np.isfinite(scores), scores, 0), axis=0) / np.isfinite(
            scores).sum(axis=0)
    table = pd.DataFrame({
        by: list(cand_names), "win_rate": mean_wins, "ci_low": low, "ci_high": high,
        "n_groups": compared, "mean": macro,
    }).sort_values(["win_rate", "mean"], ascending=False, kind="stable").reset_index(drop=True)
    per_group = pd.DataFrame({
        over: np.repeat(np.asarray(cells.groups, dtype=object), n_c),
        by: np.tile(np.asarray(list(cand_names), dtype=object), n_g),
        "mean": scores.ravel(), "win_rate": wins.ravel(), "n_tasks": n_tasks.ravel(),
    })
    per_group = per_group[per_group["n_tasks"] > 0].reset_index(drop=True)
    missing = table.loc[table["n_groups"] < n_g, by].tolist()
    if missing:
        notes.append(
            f"{len(missing)} {by}(s) were not compared in every group (no counted trial "
            f"there): their mean win rate is over the groups they ran (e.g. {missing[0]!r}: "
            f"{int(table.loc[table[by] == missing[0], 'n_groups'].iloc[0])} of {n_g})"
        )
    if n_g < FEW_GROUPS:
        notes.append(
            f"few groups ({n_g}): a mean win rate over {n_g} group(s) of {n_c} candidates "
            f"takes few distinct values, so its interval is coarse"
        )
    notes.append(
        f"intervals: {n_pairs:,} paired comparisons (every pair of {by}s in every group, on "
        "the tasks both ran), Holm-adjusted; a pair whose order is not significant counts "
        "from a loss to a win"
    )
    notes.append(
        "a win rate is a rank statistic: it depends on which other candidates are compared"
    )
    return WinRate(table=table, per_group=per_group, over=over, by=by, value=column,
                   confidence=confidence, notes=notes)


