"""Ranks, ties and Pareto fronts with their uncertainty, by resampling tasks.

A ranking of candidates is an estimate: with another sample of tasks it could come out
differently. Everything here resamples the sampling unit (the task, or the case when each
case is run once) with replacement, recomputes every candidate's means on the same
resample, and reports how stable the ranking is:

* :class:`TaskResampler`: the resamples, drawn once; per-group means of any column under
  every resample in one matrix product (the tuner recomputes them on every slider move).
* :func:`rank_intervals`: each candidate's rank interval, its probability of being best,
  and the group of candidates tied with the leader.
* :func:`pareto_probability`: each candidate's probability of being on the Pareto front.
* :func:`pairwise_tests`: every pair of candidates compared task by task, with Holm's
  adjustment for the number of pairs.
* :func:`candidate_table`: per-candidate means with task-clustered intervals, cost per
  success, and ``p_front``, for :func:`metrickit.plots.tradeoff` and the tuner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit.stats import (
    TASK_COLUMNS,
    StatsError,
    group_codes,
    grouped_intervals,
    paired_t,
)

__all__ = [
    "RankIntervals",
    "TaskResampler",
    "best_group",
    "candidate_table",
    "holm",
    "pairwise_tests",
    "pareto_probability",
    "rank_intervals",
    "task_codes",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# Cap on resample-weight cells kept in memory (float32: 80 MB).
_MAX_CELLS = 20_000_000


def task_codes(frame: Any, cluster: str | None = "auto") -> tuple[IntArray | None, str | None]:
    """Integer codes of the task column (``"auto"``: the first of ``TASK_COLUMNS`` the frame
    has), or ``(None, None)`` when there is none or ``cluster`` is None."""
    import narwhals as nw
    import pandas as pd

    if cluster is None:
        return None, None
    nf = nw.from_native(frame, eager_only=True)
    if cluster == "auto":
        cluster = next((c for c in TASK_COLUMNS if c in nf.columns), None)
        if cluster is None:
            return None, None
    elif cluster not in nf.columns:
        raise StatsError(f"cluster={cluster!r} is not a column; columns are {list(nf.columns)}")
    labels = pd.Series(nf.get_column(cluster).to_list(), dtype=object)
    codes = pd.factorize(labels, use_na_sentinel=False)[0]
    return codes.astype(np.intp), cluster


class TaskResampler:
    """Bootstrap resamples of tasks, drawn once, shared by every candidate.

    With ``units`` (task codes, one per row) the tasks are resampled jointly: a resample
    that draws a task twice counts every candidate's attempts of it twice, so candidates
    run on the same tasks stay paired. Without ``units`` each row is its own unit and is
    resampled within its group (candidates are then independent samples).

    Parameters
    ----------
    groups
        Group (candidate) code of each row, ``0 .. n_groups - 1``.
    units
        Task code of each row, or None.
    n_resamples
        Number of resamples; lowered (not below 200) when resamples × units would exceed
        20 million weights.
    """

    def __init__(
        self,
        groups: IntArray,
        n_groups: int,
        units: IntArray | None = None,
        *,
        n_resamples: int = 1000,
        seed: int = 0,
    ) -> None:
        rng = np.random.default_rng(seed)
        n = groups.size
        self.groups = groups
        self.n_groups = n_groups
        self.paired = units is not None
        if units is None:
            self.units = np.arange(n, dtype=np.intp)
            n_units = n
        else:
            self.units = units
            n_units = int(units.max()) + 1 if n else 0
        self.n_units = n_units
        b = max(200, min(n_resamples, _MAX_CELLS // max(n_units, 1)))
        self.n_resamples = b
        offsets = (np.arange(b, dtype=np.int64) * n_units)[:, None]
        size = b * n_units
        if units is None:
            counts = np.zeros(size, dtype=np.float64)
            for g in range(n_groups):
                members = np.flatnonzero(groups == g)
                if members.size:
                    draw = members[rng.integers(0, members.size, (b, members.size))]
                    counts += np.bincount((draw + offsets).ravel(), minlength=size)
        else:
            draw = rng.integers(0, n_units, (b, n_units))
            counts = np.bincount((draw + offsets).ravel(), minlength=size).astype(np.float64)
        self.weights = counts.reshape(b, n_units).astype(np.float32)

    def unit_sums(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per (unit, group) sum and count of the measured (finite) values of ``x``."""
        measured = np.isfinite(x)
        cell = self.units.astype(np.int64) * self.n_groups + self.groups
        size = self.n_units * self.n_groups
        sums = np.bincount(cell, weights=np.where(measured, x, 0.0), minlength=size)
        counts = np.bincount(cell, weights=measured.astype(np.float64), minlength=size)
        shape = (self.n_units, self.n_groups)
        return (
            np.asarray(sums, dtype=np.float64).reshape(shape),
            np.asarray(counts, dtype=np.float64).reshape(shape),
        )

    def means(self, x: FloatArray) -> FloatArray:
        """``(n_resamples, n_groups)``: each group's mean of ``x`` in each resample (NaN
        where a resample holds none of the group's measured values)."""
        sums, counts = self.unit_sums(x)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (self.weights @ sums.astype(np.float32)).astype(np.float64) / (
                self.weights @ counts.astype(np.float32)
            ).astype(np.float64)


@dataclass(frozen=True)
class RankIntervals:
    """Ranks with uncertainty, one entry per group (see :func:`rank_intervals`)."""

    rank: IntArray
    rank_low: IntArray
    rank_high: IntArray
    p_best: FloatArray
    best_group: npt.NDArray[np.bool_]
    leader: int


def _ranks(values: FloatArray, higher_is_better: bool) -> IntArray:
    """Competition ranks ('min' method) along the last axis; NaN ranks last."""
    v = values if higher_is_better else -values
    v = np.where(np.isnan(v), -np.inf, v)
    better = (v[..., None, :] > v[..., :, None]).sum(axis=-1)
    return (better + 1).astype(np.intp)


def rank_intervals(
    estimate: FloatArray,
    draws: FloatArray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
) -> RankIntervals:
    """Rank intervals, probability of being best, and the group tied with the leader.

    Parameters
    ----------
    estimate
        Each group's value on the data (``n_groups``).
    draws
        Each group's value under each resample (``n_resamples × n_groups``), e.g. from
        :meth:`TaskResampler.means`.

    Returns
    -------
    RankIntervals
        ``rank`` from the estimates (1 = best, ties share the lower rank); ``rank_low`` and
        ``rank_high`` the central ``confidence`` interval of the resampled ranks;
        ``p_best`` the share of resamples in which the group is best (a tie for first
        shares it); ``best_group`` the leader and every group whose rank interval reaches
        the leader's (they are tied with it at this confidence).
    """
    rank = _ranks(np.asarray(estimate, dtype=np.float64), higher_is_better)
    ranks = _ranks(draws, higher_is_better)
    alpha = (1 - confidence) / 2
    low = np.quantile(ranks, alpha, axis=0, method="inverted_cdf").astype(np.intp)
    high = np.quantile(ranks, 1 - alpha, axis=0, method="inverted_cdf").astype(np.intp)
    first = ranks == 1
    p_best = (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
    leader = int(np.argmin(rank))
    best_group = low <= high[leader]
    best_group[leader] = True
    return RankIntervals(rank, low, high, p_best, best_group, leader)


def pareto_probability(
    draws: dict[str, FloatArray], *, maximize: tuple[str, ...], minimize: tuple[str, ...]
) -> FloatArray:
    """Share of resamples in which each group is on the Pareto front.

    ``draws`` maps a column to its ``n_resamples × n_groups`` resampled means. A group is
    on the front when no other group is at least as good on every column and strictly
    better on one; a NaN (not measured in that resample) never dominates.
    """
    cols = [c for c in maximize if c in draws] + [c for c in minimize if c in draws]
    if not cols:
        first = next(iter(draws.values()))
        return np.ones(first.shape[1])
    signs = [1.0 if c in maximize else -1.0 for c in cols]
    v = np.stack([draws[c] * s for c, s in zip(cols, signs, strict=True)], axis=-1)
    v = np.where(np.isnan(v), -np.inf, v)  # (B, G, K)
    ge = (v[:, :, None, :] >= v[:, None, :, :]).all(axis=-1)  # ge[b, j, i]: j >= i
    gt = (v[:, :, None, :] > v[:, None, :, :]).any(axis=-1)
    dominated = np.any(ge & gt, axis=1)
    return np.asarray((~dominated).mean(axis=0), dtype=np.float64)


def holm(pvalues: Any) -> FloatArray:
    """Holm's step-down adjustment of a family of p-values (as statsmodels'
    ``multipletests(method="holm")``); NaN p-values stay NaN and are not counted."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if not m:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def pairwise_tests(
    names: list[Any],
    unit_sums: tuple[FloatArray, FloatArray],
    *,
    paired: bool,
    higher_is_better: bool = True,
    confidence: float = 0.95,
) -> Any:
    """Every pair of groups compared on their means, with Holm-adjusted p-values.

    With ``paired`` (groups share tasks) the test is the paired t test over the tasks both
    groups ran (per-task means first, as :func:`metrickit.compare_runs`); otherwise
    Welch's t test over the units. Returns a pandas DataFrame with ``a``, ``b``,
    ``difference`` (a − b), ``ci_low``, ``ci_high``, ``n_tasks``, ``pvalue``,
    ``p_holm`` and ``significant`` (``p_holm`` below ``1 - confidence``), one row a pair.
    """
    import pandas as pd
    from scipy import stats as sps

    sums, counts = unit_sums
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts
    rows = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if paired:
                both = (counts[:, i] > 0) & (counts[:, j] > 0)
                d = means[both, i] - means[both, j]
                if d.size:
                    iv, p = paired_t(d, confidence=confidence)
                    diff, low, high = iv.estimate, iv.low, iv.high
                else:
                    diff = low = high = p = math.nan
                n_units = int(both.sum())
            else:
                xi = means[counts[:, i] > 0, i]
                xj = means[counts[:, j] > 0, j]
                diff = float(xi.mean() - xj.mean()) if xi.size and xj.size else math.nan
                if xi.size > 1 and xj.size > 1 and (xi.std() > 0 or xj.std() > 0):
                    res = sps.ttest_ind(xi, xj, equal_var=False)
                    p = float(res.pvalue)
                    ci = res.confidence_interval(confidence)
                    low, high = float(ci.low), float(ci.high)
                else:
                    p = low = high = math.nan
                n_units = int(xi.size + xj.size)
            rows.append(
                {"a": names[i], "b": names[j], "difference": diff, "ci_low": low,
                 "ci_high": high, "n_tasks": n_units, "pvalue": p}
            )
    table = pd.DataFrame(
        rows, columns=["a", "b", "difference", "ci_low", "ci_high", "n_tasks", "pvalue"]
    )
    table["p_holm"] = holm(table["pvalue"].to_numpy()) if len(table) else []
    table["significant"] = table["p_holm"] < 1 - confidence
    return table


def best_group(
    names: list[Any],
    estimate: FloatArray,
    resampler: TaskResampler,
    x: FloatArray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
) -> tuple[RankIntervals, Any]:
    """Rank intervals of the groups' means of ``x``, and the group tied with the leader.

    A group is tied with the leader when its rank interval reaches the leader's, or when
    its difference from the leader is not significant after Holm's adjustment over all
    pairs (so identical candidates come out tied at least 95 % of the time, whatever
    their number). Returns the :class:`RankIntervals` (its ``best_group`` is that tied
    group) and the :func:`pairwise_tests` table.
    """
    ri = rank_intervals(
        estimate, resampler.means(x), higher_is_better=higher_is_better, confidence=confidence
    )
    pairs = pairwise_tests(
        names, resampler.unit_sums(x), paired=resampler.paired,
        higher_is_better=higher_is_better, confidence=confidence,
    )
    leader = names[ri.leader]
    significant = pairs[pairs["significant"]]
    apart = set(significant.loc[significant["a"] == leader, "b"]) | set(
        significant.loc[significant["b"] == leader, "a"]
    )
    tied = np.array([name not in apart for name in names])
    return RankIntervals(
        ri.rank, ri.rank_low, ri.rank_high, ri.p_best, ri.best_group | tied, ri.leader
    ), pairs


def candidate_table(
    frame: Any,
    columns: list[str],
    *,
    by: str = "candidate",
    cluster: str | None = "auto",
    confidence: float = 0.95,
    maximize: tuple[str, ...] = ("accuracy",),
    minimize: tuple[str, ...] = ("latency_ms", "cost_usd"),
    n_resamples: int = 1000,
    seed: int = 0,
) -> Any:
    """Per-candidate means with task-clustered intervals, cost per success and ``p_front``.

    One row per candidate (sorted by name): ``n`` rows, ``n_tasks``, and for each column
    its mean, ``<column>_low``/``<column>_high`` (the default interval of
    :func:`metrickit.stats.mean_ci`, clustered by task when tasks repeat),
    ``<column>_method`` and, when some values are NaN (not measured), ``<column>_n``.
    ``cost_per_success`` is mean cost / mean accuracy (inf when nothing succeeded) when
    both columns are there. ``p_front`` is the share of task resamples in which the
    candidate is on the Pareto front of the ``maximize``/``minimize`` columns present;
    ``note`` flags intervals that may fall short (few tasks).
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    codes, groups = group_codes(nf.get_column(by).to_numpy(), by)
    n_groups = len(groups)
    units, _ = task_codes(frame, cluster)
    out: dict[str, Any] = {by: list(groups), "n": np.bincount(codes, minlength=n_groups)}
    if units is not None:
        pairs = np.unique(codes.astype(np.int64) * (int(units.max()) + 1) + units)
        out["n_tasks"] = np.bincount(pairs // (int(units.max()) + 1), minlength=n_groups)
    notes = [""] * n_groups
    resampler = TaskResampler(codes, n_groups, units, n_resamples=n_resamples, seed=seed)
    draws: dict[str, FloatArray] = {}
    for column in columns:
        x = nf.get_column(column).cast(nw.Float64).to_numpy()
        x = np.where(np.isnan(x), np.nan, x)
        gi = grouped_intervals(codes, n_groups, x, clusters=units, confidence=confidence)
        out[column] = gi.mean
        out[f"{column}_low"] = gi.low
        out[f"{column}_high"] = gi.high
        out[f"{column}_method"] = gi.method
        if gi.n.sum() < len(x):
            out[f"{column}_n"] = gi.n.astype(int)
        for i, note in enumerate(gi.note):
            if note and note not in notes[i]:
                notes[i] = f"{notes[i]}; {column}: {note}" if notes[i] else f"{column}: {note}"
        if column in maximize or column in minimize:
            draws[column] = resampler.means(x)
    table = pd.DataFrame(out)
    if "accuracy" in table and "cost_usd" in table:
        with np.errstate(divide="ignore", invalid="ignore"):
            table["cost_per_success"] = np.where(
                table["accuracy"] > 0, table["cost_usd"] / table["accuracy"], np.inf
            )
    if draws:
        table["p_front"] = pareto_probability(draws, maximize=maximize, minimize=minimize)
    table["note"] = notes
    return table
