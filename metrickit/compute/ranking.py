"""Ranks, ties and Pareto fronts with their uncertainty.

A ranking of candidates is an estimate: with another sample of tasks it could come out
differently. The sampling unit is the task (or the case, when each case is run once):
everything here draws the candidates' means jointly from their task-clustered sampling
distribution and reports how stable the ranking is over the draws:

* :class:`MeanDraws`: the draws; candidates run on the same tasks stay correlated (paired).
* :func:`rank_intervals`: each candidate's rank interval, its probability of being best,
  and the group of candidates tied with the leader.
* :func:`permutation_best_set`: the confidence set for the best from shuffling results
  within tasks (step-down max-T), which :func:`best_group` uses on tables of tasks.
* :func:`pareto_probability`: each candidate's probability of being on the Pareto front.
* :func:`pairwise_tests`: every pair of candidates compared task by task, on the tasks both
  ran, with Holm's adjustment for the number of pairs.
* :func:`candidate_table`: per-candidate means with task-clustered intervals, cost per
  success, and ``p_front``, for :func:`metrickit.reporting.plots.tradeoff` and the tuner.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit._core.cache import BytesLRU
from metrickit._core.display import result_html, result_repr, short_column, short_names
from metrickit._core.dist import chi2_ppf, norm_ppf, norm_sf, t_isf, t_ppf, t_sf
from metrickit._core.frame import Policy
from metrickit.compute.stats import (
    StatsError,
    group_codes,
    grouped_intervals,
    require_by,
    task_codes,
)

__all__ = [
    "MeanDraws",
    "RankIntervals",
    "WeightedBestSet",
    "best_group",
    "candidate_table",
    "holm",
    "pairwise_tests",
    "pareto_probability",
    "permutation_best_set",
    "rank_intervals",
    "shrunk_draws",
    "weighted_best_set",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]



class MeanDraws:
    """Draws of every candidate's mean from its estimated sampling distribution.

    The candidates' means are jointly normal with the task-clustered covariance: with
    ``units`` (task codes, one per row) a task's attempts for every candidate form one
    cluster, so candidates run on the same tasks keep their correlation (the pairing);
    without ``units`` each row is its own unit and candidates are independent. This is
    the large-sample form of resampling tasks, and it costs one ``tasks × candidates``
    matrix product per column instead of a resample matrix, so the tuner can redo it on
    every slider move. The standard normal draws are fixed by ``seed``: the same data
    give the same ranks.

    Parameters
    ----------
    groups
        Group (candidate) code of each row, ``0 .. n_groups - 1``.
    units
        Task code of each row, or None.
    n_draws
        Number of draws behind rank intervals, ``p_best`` and ``p_front``.
    """

    def __init__(
        self,
        groups: IntArray,
        n_groups: int,
        units: IntArray | None = None,
        *,
        n_draws: int = 1000,
        seed: int = 0,
    ) -> None:
        self.groups = groups
        self.n_groups = n_groups
        self.paired = units is not None
        self.units = np.arange(groups.size, dtype=np.intp) if units is None else units
        self.n_units = int(self.units.max()) + 1 if groups.size else 0
        self.n_draws = n_draws
        self.seed = seed
        self._normal: dict[int, FloatArray] = {}

    def _z(self, dim: int) -> FloatArray:
        if dim not in self._normal:
            self._normal[dim] = np.random.default_rng([self.seed, dim]).standard_normal(
                (self.n_draws, dim)
            )
        return self._normal[dim]

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

    def _deviations(self, x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Group means, group counts, and per (unit, group) sums of deviations from the
        group mean, scaled by the group count (the unit's share of the mean's error)."""
        sums, counts = self.unit_sums(x)
        ran = counts > 0
        g = ran.sum(axis=0).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            cell = np.where(ran, sums / np.where(ran, counts, 1.0), 0.0)
            mean = cell.sum(axis=0) / g  # the mean over tasks of each task's mean
            dev = np.where(ran, (cell - mean) / g, 0.0)
        return mean, g, np.nan_to_num(dev)

    def covariance(self, *columns: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The stacked group means of ``columns`` and their task-clustered covariance
        (``U/(U-1) * sum over tasks of the outer products of the deviations``)."""
        if not self.paired:
            return self._independent_covariance(columns)
        parts = [self._deviations(x) for x in columns]
        mean = np.concatenate([p[0] for p in parts])
        dev = np.concatenate([p[2] for p in parts], axis=1)
        u = max(self.n_units, 2)
        return mean, dev.T @ dev * (u / (u - 1))

    def _independent_covariance(
        self, columns: tuple[FloatArray, ...]
    ) -> tuple[FloatArray, FloatArray]:
        """Rows are the units: groups are independent, so only each group's own block
        (its columns' covariances) is filled; the same numbers as the general formula
        without a rows × groups matrix."""
        g, k = self.n_groups, len(columns)
        means, devs, counts = [], [], []
        for x in columns:
            measured = np.isfinite(x)
            n = np.bincount(self.groups, weights=measured, minlength=g)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = np.bincount(self.groups, weights=np.where(measured, x, 0.0),
                                   minlength=g) / n
            devs.append(np.where(measured, x - mean[self.groups], 0.0))
            means.append(mean)
            counts.append(n)
        u = max(self.n_units, 2)
        cov = np.zeros((k * g, k * g))
        idx = np.arange(g)
        for a in range(k):
            for b in range(a, k):
                prod = np.bincount(self.groups, weights=devs[a] * devs[b], minlength=g)
                with np.errstate(invalid="ignore", divide="ignore"):
                    block = np.nan_to_num(prod / (counts[a] * counts[b])) * (u / (u - 1))
                cov[a * g + idx, b * g + idx] = block
                cov[b * g + idx, a * g + idx] = block
        return np.concatenate(means), cov

    def joint(self, columns: dict[str, FloatArray]) -> dict[str, FloatArray]:
        """``n_draws × n_groups`` draws of each column's group means, drawn jointly."""
        names = list(columns)
        mean, cov = self.covariance(*columns.values())
        values, vectors = np.linalg.eigh(cov)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))
        draws = mean + self._z(mean.size) @ root.T
        g = self.n_groups
        return {name: draws[:, i * g : (i + 1) * g] for i, name in enumerate(names)}

    def means(self, x: FloatArray) -> FloatArray:
        """``n_draws × n_groups`` draws of the group means of ``x``."""
        return self.joint({"x": x})["x"]


@dataclass(frozen=True)
class RankIntervals:
    """Ranks with uncertainty, one entry per group (see :func:`rank_intervals`)."""

    rank: IntArray
    rank_low: IntArray
    rank_high: IntArray
    p_best: FloatArray
    best_group: npt.NDArray[np.bool_]
    leader: int
    #: the groups' names, in the order of the arrays (None: shown as their positions)
    labels: tuple[Any, ...] | None = None

    @property
    def table(self) -> Any:
        """One row per group, best first (pandas): ``group``, ``rank``, ``rank_low``,
        ``rank_high``, ``p_best``, ``best_group``."""
        import pandas as pd

        names = list(self.labels) if self.labels is not None else list(range(len(self.rank)))
        table = pd.DataFrame({"group": names, "rank": self.rank, "rank_low": self.rank_low,
                              "rank_high": self.rank_high, "p_best": self.p_best,
                              "best_group": self.best_group})
        return table.sort_values(["rank", "p_best"], ascending=[True, False],
                                 kind="stable").reset_index(drop=True)

    def __str__(self) -> str:
        table = self.table
        names = short_names(list(table["group"]))
        best = [n for n, b in zip(names, table["best_group"], strict=True) if b]
        if len(best) == 1:
            return f"best: {best[0]} (the only group that may be best at the stated confidence)"
        return f"tied for best: {', '.join(best)} ({len(best)} of {len(names)} may be best)"

    def _display(self) -> tuple[str, Any, list[str]]:
        return str(self), short_column(self.table, "group"), []

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="RankIntervals")

    def __repr__(self) -> str:
        return result_repr("RankIntervals", *self._display())


def _ranks(values: FloatArray, higher_is_better: bool) -> IntArray:
    """Competition ranks ('min' method) along the last axis; NaN ranks last."""
    v = values if higher_is_better else -values
    v = np.where(np.isnan(v), -np.inf, v)
    better = (v[..., None, :] > v[..., :, None]).sum(axis=-1)
    return (better + 1).astype(np.intp)


# Points of the slab's grid over the between-candidate spread tau (besides the spike at 0):
# enough that a finer grid moves p_front by less than its Monte-Carlo error.
_TAU_GRID = 25
_TAU_DRAWS = 50
# Strata of the noise's scale when the noise was estimated from few tasks (_noise_scales).
_SCALE_GRID = 8
#: Prior probability that a column's candidates are all equal (tau = 0), the spike of the
#: spike-and-slab prior of :func:`shrunk_draws`.
P_NULL = 0.5


def _contrasts(k: int) -> FloatArray:
    """The Helmert contrasts: ``k - 1`` orthonormal rows, each orthogonal to the ones."""
    h = np.zeros((k - 1, k))
    for i in range(1, k):
        h[i - 1, :i] = 1.0
        h[i - 1, i] = -float(i)
        h[i - 1] /= math.sqrt(i * (i + 1))
    return h


def _noise_scales(df: float | None) -> FloatArray:
    """Equal-probability strata of the noise's scale ``w = sigma**2 / s**2`` when the
    covariance was estimated with ``df`` degrees of freedom (``df / chi2_df``, the
    posterior of a variance's ratio to its estimate under the scale-free prior): a normal
    mixed over ``w`` is the t with ``df`` degrees of freedom, the noise of a mean over
    ``df + 1`` tasks whose spread is estimated. One scale of 1 (normal noise) when
    ``df`` is None or infinite."""
    if df is None or not math.isfinite(df) or df < 1:
        return np.ones(1)
    u = (np.arange(_SCALE_GRID) + 0.5) / _SCALE_GRID
    return np.asarray(df / np.asarray(chi2_ppf(u, df), dtype=np.float64), dtype=np.float64)


def _tau_posterior(
    e: FloatArray, noise: FloatArray, p_null: float = P_NULL, df: float | None = None
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Cells of ``(tau, w)`` and their posterior weights for one column: ``tau`` the
    between-candidate spread (0 in the spike's cells), ``w`` the noise's scale.

    The prior on ``tau`` is spike-and-slab: ``tau = 0`` (the candidates all equal) with
    probability ``p_null``; otherwise the uniform shrinkage prior (``B = s2 / (s2 +
    tau**2)`` uniform on (0, 1), ``s2`` the estimates' noise variance around their
    average: proper, and free of any scale but the data's own noise). The likelihood is
    the restricted one: the common mean has a flat prior and is integrated out, which
    leaves the ``k - 1`` contrasts ``y = H e`` (:func:`_contrasts`) with ``y ~ N(0,
    tau**2 I + w H noise H')``. ``w`` is 1 for a known noise; with ``df`` (the noise
    estimated from ``df + 1`` tasks) it takes the :func:`_noise_scales` strata, each with
    equal prior weight, and ``B`` is relative to the scaled noise (``tau**2 = w s2 (1/B -
    1)``), so the likelihood is ``w`` times the known-noise one's variances. In the
    eigenbasis of ``H noise H'`` that covariance is diagonal for every cell, so the whole
    grid is one vectorised sum. The spike's weight (summed over ``w``) is the posterior
    probability that all are equal (its Bayes factor against the slab is pinned to a
    direct numerical integral by the tests). The slab's cells in ``B`` are finer toward 0
    (well separated candidates)."""
    k = e.size
    h = _contrasts(k)
    s = h @ noise @ h.T
    lam, vectors = np.linalg.eigh((s + s.T) / 2)
    s2 = float(lam.mean())
    if not s2 > 0:  # no noise: the estimates are the truth (or all exactly tied)
        return np.full(1, 1e3 * float(np.std(e))), np.ones(1), np.ones(1)
    lam = np.maximum(lam, 1e-9 * s2)
    z = vectors.T @ (h @ e)
    edges = np.linspace(0.0, 1.0, _TAU_GRID + 1) ** 2
    shrink = (edges[1:] + edges[:-1]) / 2
    tau2 = np.concatenate([[0.0], s2 * (1.0 / shrink - 1.0)])  # at w = 1
    scales = _noise_scales(df)
    var = scales[:, None, None] * (tau2[None, :, None] + lam[None, None, :])
    loglik = -0.5 * (np.log(var) + z**2 / var).sum(axis=-1)  # (scales, cells of B)
    prior = np.concatenate([[p_null], (1.0 - p_null) * np.diff(edges)])[None, :]
    w = (prior * np.exp(loglik - loglik.max())).ravel()
    tau = np.sqrt(scales[:, None] * tau2[None, :]).ravel()
    scale = np.repeat(scales, tau2.size)
    return tau, scale, w / w.sum()


def _plug_in_draws(
    estimate: FloatArray, cov: FloatArray, *, blocks: int = 1, n_draws: int = 1000,
    seed: int = 0,
) -> FloatArray:
    """:func:`shrunk_draws` with ``tau`` plugged in: its moment estimate, at least 0."""
    est = np.asarray(estimate, dtype=np.float64)
    size = est.size
    g = size // blocks
    prior_mean = np.zeros(size)
    prior_var = np.zeros(size)
    for b in range(blocks):
        part = slice(b * g, (b + 1) * g)
        e = est[part]
        ok = np.isfinite(e)
        if ok.sum() < 2:
            prior_mean[part] = np.where(ok, e, 0.0)
            prior_var[part] = 0.0
            continue
        centre = np.eye(int(ok.sum())) - 1.0 / ok.sum()
        sub = cov[part, part][np.ix_(ok, ok)]
        spread = float(np.sum((e[ok] - e[ok].mean()) ** 2))
        noise = float(np.trace(centre @ sub @ centre))
        prior_mean[part] = e[ok].mean()
        prior_var[part] = max(0.0, (spread - noise) / (ok.sum() - 1))
    finite = np.isfinite(est)
    e0 = np.where(finite, est, prior_mean)
    p = np.diag(prior_var)
    a = p + np.where(np.outer(finite, finite), np.nan_to_num(cov), 0.0)
    a_inv = np.linalg.pinv(a)
    mean = prior_mean + p @ a_inv @ (e0 - prior_mean)
    var = p - p @ a_inv @ p
    values, vectors = np.linalg.eigh((var + var.T) / 2)
    root = vectors * np.sqrt(np.clip(values, 0.0, None))
    z = np.random.default_rng([seed, size, 7]).standard_normal((n_draws, size))
    out = mean + z @ root.T
    out[:, ~finite] = np.nan
    return np.asarray(out, dtype=np.float64)


def shrunk_draws(
    estimate: FloatArray, cov: FloatArray, *, blocks: int = 1, n_draws: int = 1000,
    seed: int = 0, tau: str = "plug-in", p_null: float = P_NULL, df: float | None = None,
) -> FloatArray:
    """Draws of the candidates' true values from a hierarchical normal model's posterior.

    The model: each candidate's true value is drawn from a normal around a common mean
    (flat prior) with a between-candidate standard deviation ``tau``, and its estimate is
    normal around it with the (task-clustered) covariance ``cov``. ``blocks`` columns
    (accuracy, cost, ...) are stacked in ``estimate``, each with its own mean and
    ``tau``; their noise stays correlated.

    ``tau="plug-in"`` (what ``p_best`` uses) plugs in the moment estimate of the spread,
    at least 0: an empirical-Bayes posterior. ``tau="integrated"`` (what
    :func:`pareto_probability` uses) is the posterior under a stated prior on ``tau``,
    integrated over: a **spike-and-slab** prior, ``tau = 0`` (the column's candidates all
    equal) with probability ``p_null`` (default :data:`P_NULL`, 1/2) and otherwise the
    uniform shrinkage prior (:func:`_tau_posterior`). Each draw takes its own ``tau``
    (stratified over the posterior: :data:`_TAU_DRAWS` values a column, each behind an
    equal share of the draws). The spike is read as the limit ``tau -> 0+``: the
    candidates differ by amounts negligible against the noise, so in its draws the
    column's order is uniformly at random (each of ``k`` is best with probability
    ``1/k``); exact ties there would let the other columns alone decide the front, and
    measured worse (:mod:`benchmarks.coverage`'s ``front_scenarios``: 25 % of those shown
    ``p_front < 0.05`` truly on the front, against 9 %). ``p_null=0`` is the uniform
    shrinkage prior alone.

    ``df`` (integrated only): the noise covariance was estimated from ``df + 1`` tasks, so
    the noise of the estimates is t with ``df`` degrees of freedom rather than normal:
    each column's noise takes a scale ``w`` (:func:`_noise_scales`) drawn with ``tau``
    from their joint posterior (:func:`_tau_posterior`), which widens the posterior where
    tasks are few. None (the default) is normal noise.
    """
    if tau == "plug-in":
        return _plug_in_draws(estimate, cov, blocks=blocks, n_draws=n_draws, seed=seed)
    if tau != "integrated":
        raise ValueError(f"shrunk_draws: tau={tau!r}; expected 'plug-in' or 'integrated'")
    est = np.asarray(estimate, dtype=np.float64)
    size = est.size
    g = size // blocks
    finite = np.isfinite(est)
    e0 = np.where(finite, est, 0.0)
    noise = np.where(np.outer(finite, finite), np.nan_to_num(cov), 0.0)
    rng = np.random.default_rng([seed, size, 7])
    centre = np.where(finite, est, 0.0)
    common = np.zeros((size, size))  # a nearly flat prior on each column's mean
    member = np.zeros((blocks, size))
    n_tau = min(n_draws, _TAU_DRAWS)
    picks = np.zeros((n_tau, blocks), dtype=np.intp)
    grids = []
    scales = []
    for b in range(blocks):
        idx = np.flatnonzero(finite[b * g : (b + 1) * g]) + b * g
        if idx.size < 2:
            grids.append(np.zeros(1))
            scales.append(np.ones(1))
            continue
        e = est[idx]
        sub = noise[np.ix_(idx, idx)]
        grid, scale, weight = _tau_posterior(e, sub, p_null, df)
        # the spike is tau -> 0+: differences negligible against the noise, so the
        # column's order is at random (exact ties would let one column decide the front)
        grid = np.maximum(grid, 1e-6 * math.sqrt(float(np.mean(np.diag(sub)))))
        grids.append(grid)
        scales.append(scale)
        # stratified: the posterior's n_tau quantiles, paired across columns at random
        cells = np.searchsorted(np.cumsum(weight), (np.arange(n_tau) + 0.5) / n_tau)
        picks[:, b] = rng.permutation(np.minimum(cells, grid.size - 1))
        centre[idx] = e.mean()
        flat = 100.0 * float(np.var(e) + np.mean(np.diag(sub)) + 1e-300)
        common[np.ix_(idx, idx)] = flat
        member[b, idx] = 1.0
    z = rng.standard_normal((n_draws, size))
    out = np.empty((n_draws, size))
    # each of the n_tau values of tau (a column's) behind an equal share of the draws:
    # p_best and p_front change smoothly with tau, and one posterior costs a decomposition
    picks = picks[np.arange(n_draws) % n_tau]
    combos, which = np.unique(picks, axis=0, return_inverse=True)
    for c, combo in enumerate(combos):
        tau2 = sum(grids[b][combo[b]] ** 2 * member[b] for b in range(blocks))
        root_w = np.sqrt(sum(scales[b][combo[b]] * member[b] for b in range(blocks))
                         + (member.sum(axis=0) == 0))
        p = common + np.diag(tau2)
        p_inv = p @ np.linalg.pinv(p + noise * np.outer(root_w, root_w), hermitian=True)
        mean = centre + p_inv @ (e0 - centre)
        var = p - p_inv @ p
        values, vectors = np.linalg.eigh((var + var.T) / 2)
        root = vectors * np.sqrt(np.clip(values, 0.0, None))
        rows = np.flatnonzero(which.ravel() == c)
        out[rows] = mean + z[rows] @ root.T
    out[:, ~finite] = np.nan
    return np.asarray(out, dtype=np.float64)


def _max_t_quantile(
    centred: FloatArray, se: FloatArray, family: npt.NDArray[np.bool_], level: float,
    df: float | None,
) -> float:
    """The ``level`` quantile of the largest |t| over the pairs in ``family``."""
    if not family.any():
        return math.inf
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.abs(centred[:, family]) / se[family]
    t = np.where(np.isfinite(t), t, 0.0)
    return _widen(float(np.quantile(t.max(axis=1), level)), df)


def _t_scale(df: float | None) -> float:
    """Small-sample widening of a normal critical value: t over normal at 97.5 %."""
    if df is None or df < 1:
        return 1.0
    return float(t_ppf(0.975, df) / norm_ppf(0.975))


def _widen(c: float, df: float | None) -> float:
    """A normal critical value ``c`` as the t quantile (``df``) of the same tail
    probability: the max-|t| statistic's t-ratios have estimated standard errors."""
    if df is None or df < 1 or not math.isfinite(c):
        return c
    return float(t_isf(norm_sf(c), df))


def _best_set(
    e: FloatArray, d: FloatArray, confidence: float, df: float | None
) -> npt.NDArray[np.bool_]:
    """The confidence set for the best (Mogstad, Romano, Shaikh & Wilhelm 2024, the
    step-down confidence set for the tau-best with tau = 1): start from every group;
    the critical value is the ``confidence`` quantile, over the draws, of the largest
    one-sided t of any group against a group still in the set; a group leaves when some
    other beats it by more than that many standard errors; repeat until none leaves. The
    first step is over all pairs, so k identical groups are all kept with probability
    ``confidence``; the later steps give power once clearly worse groups have left."""
    keep = np.isfinite(e).copy()
    if d.shape[0] < 2 or keep.sum() < 2:
        return keep
    ok = np.flatnonzero(keep)
    spread = d[:, None, ok] - d[:, ok, None]  # [b, j, k]: k minus j
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.std(spread, axis=0, ddof=1)
        gap = e[ok][None, :] - e[ok][:, None]
        t = np.where(se > 0, gap / se, np.where(gap > 0, np.inf, 0.0))
        z = np.where(se > 0, (spread - np.mean(spread, axis=0)) / se, 0.0)
    z = np.nan_to_num(z)
    diag = np.eye(ok.size, dtype=bool)
    t[diag] = -np.inf
    z[:, diag] = -np.inf
    inside = np.ones(ok.size, dtype=bool)
    while True:
        c = _widen(float(np.quantile(z[:, inside, :].max(axis=(1, 2)), confidence)), df)
        out = inside & (t > c).any(axis=1)
        if not out.any():
            break
        inside &= ~out
    keep[ok] = inside
    return keep


# Cells of the permutations × tasks × pairs arrays computed at once (a few MB each), and
# the largest tasks × groups table the permutation best set is computed on; beyond it the
# normal draws' set is used (with that many tasks the two agree).
_PERM_CELLS = 2_000_000
#: relative rounding of a t statistic: closer than this to the critical value is a tie
_TIE = 1e-9
_PERM_TABLE = 20_000
# The shuffles depend only on which cells were measured, the seed and the groups still in
# the set, never on the values: a tuner ranks the same tasks × groups table on every slider
# move, and drawing the shuffles was four fifths of the cost. They are kept (as flat
# gather indices, with the generator's state after them so later steps draw the same
# numbers) up to this many bytes, least recently used first out.
_PERM_CACHE_BYTES = 64_000_000
_perm_cache: BytesLRU[tuple[list[Any], Any]] = BytesLRU(
    _PERM_CACHE_BYTES, lambda kept: sum(chunk.nbytes for chunk in kept[0]))


def _shuffles(
    rng: np.random.Generator, sub_ran: npt.NDArray[np.bool_], n_permutations: int,
    step: int, key: tuple[Any, ...],
) -> list[npt.NDArray[np.intp]]:
    """Flat indices into a tasks × members table that shuffle each task's measured cells
    among themselves, ``step`` permutations a chunk (drawn from ``rng``, or the same ones
    from the cache, leaving ``rng`` where drawing them would)."""
    hit = _perm_cache.hit(key)
    if hit is not None:
        rng.bit_generator.state = hit[1]
        return hit[0]
    n_tasks, size = sub_ran.shape
    offsets = (np.arange(n_tasks) * size)[:, None]
    # native-width indices: numpy gathers with them in 60 % of the time int32 ones take
    # (it widens those first), and the gather is most of a tuner update's best set
    index = np.intp
    # each task's measured cells first, in their order; shuffled, they go back there
    natural = np.argsort(np.where(sub_ran, 0.0, np.inf), axis=-1, kind="stable")
    chunks = []
    for start in range(0, n_permutations, step):
        b = min(step, n_permutations - start)
        keys = np.where(sub_ran, rng.random((b, n_tasks, size)), np.inf)
        shuffled = np.argsort(keys, axis=-1, kind="stable")
        perm = np.empty_like(shuffled)
        np.put_along_axis(perm, np.broadcast_to(natural, shuffled.shape), shuffled, axis=-1)
        chunks.append((perm + offsets).astype(index))
    _perm_cache.keep(key, (chunks, rng.bit_generator.state))
    return chunks


def _pair_t(cell: FloatArray, ran: npt.NDArray[np.bool_], i: IntArray, j: IntArray
            ) -> FloatArray:
    """Paired t of ``j`` over ``i`` (``[..., pair]``) on the tasks both ran: the mean of the
    per-task differences over their standard error; 0 with fewer than two such tasks, ±inf
    when the differences are all equal and not 0."""
    d = cell[..., :, j] - cell[..., :, i]
    if ran.all():  # every group ran every task: no masking
        c = np.full(d.shape[:-2] + d.shape[-1:], d.shape[-2])
        mean = d.mean(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            var = d.var(axis=-2, ddof=1) if d.shape[-2] > 1 else np.zeros_like(mean)
    else:
        both = ran[..., :, i] & ran[..., :, j]
        d = np.where(both, d, 0.0)
        c = both.sum(axis=-2)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = d.sum(axis=-2) / c
            var = (np.where(both, d - mean[..., None, :], 0.0) ** 2).sum(axis=-2) / (c - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(var > 0, mean / np.sqrt(var / c),
                     np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    return np.where(c >= 2, np.nan_to_num(t, nan=0.0), 0.0)


def _gram_pair_t(cell: FloatArray, ran: npt.NDArray[np.bool_], i: IntArray, j: IntArray
                 ) -> FloatArray:
    """:func:`_pair_t` from matrix products of the tasks × groups tables (sums, sums of
    squares and cross products over the tasks both ran) instead of a tasks × pairs array
    of differences: five times faster, the tuner's hot path. Groups with the same results
    on the tasks both ran give equal sums exactly, so their t is 0 there too."""
    if ran.all():
        return _gram_pair_t_complete(cell, i, j)
    return _masked_t(_part_sums([np.where(ran, cell, 0.0)], ran), [1.0], i, j)


def _part_sums(parts: list[FloatArray], ran: npt.NDArray[np.bool_]) -> tuple[Any, ...]:
    """The sums :func:`_gram_pair_t` needs, for each of ``parts`` (tables ``[..., task,
    group]`` with 0 where a group did not run the task) and each pair of them: a table
    ``w_1 * parts[0] + w_2 * parts[1] + ...`` has its sums from these (:func:`_complete_t`
    and :func:`_masked_t` combine them), for any weights, without being formed.

    Every group ran every task: ``(None, totals, None, grams)``, the column sums of each
    part and ``parts[p]ᵀ parts[q]`` for ``p <= q``. Otherwise ``(both, crosses, squares,
    grams)`` with ``both`` the tasks each pair of groups both ran, ``crosses[p][a, b]`` the
    sum of ``parts[p]``'s column ``b`` over the tasks ``a`` ran, and ``squares`` the same
    of the products ``parts[p] * parts[q]``."""
    pairs = _pairs(len(parts))
    grams = [np.swapaxes(parts[p], -1, -2) @ parts[q] for p, q in pairs]
    if ran.all():
        n = parts[0].shape[-2]
        return None, [np.ones(n) @ x for x in parts], None, grams
    wt = ran.astype(np.float64).T
    return (wt @ ran.astype(np.float64), [wt @ x for x in parts],
            [wt @ (parts[p] * parts[q]) for p, q in pairs], grams)


def _pairs(k: int) -> list[tuple[int, int]]:
    """The pairs of ``k`` parts, ``p <= q``, in the order :func:`_part_sums` keeps them."""
    return [(p, q) for p in range(k) for q in range(p, k)]


def _combine(terms: list[Any], weights: list[float]) -> Any:
    """``Σ w_p terms[p]``; one part with weight 1 gives its term's numbers exactly."""
    out = weights[0] * terms[0]
    for w, term in zip(weights[1:], terms[1:], strict=True):
        out = out + w * term
    return out


def _quadratic(terms: list[FloatArray], weights: list[float], transpose: bool) -> FloatArray:
    """``Σ_p Σ_q w_p w_q T_pq`` from the terms of :func:`_part_sums` (``p <= q``): a term of
    ``p < q`` stands for ``T_pq`` and ``T_qp``, its transpose (``transpose``: the grams
    ``parts[p]ᵀ parts[q]``) or itself (the sums of products). One part with weight 1 gives
    its term's numbers exactly."""
    out = None
    for (p, q), term in zip(_pairs(len(weights)), terms, strict=True):
        mirror = np.swapaxes(term, -1, -2) if transpose else term
        part = weights[p] * weights[q] * (term if p == q else term + mirror)
        out = part if out is None else out + part
    assert out is not None
    return out


def _masked_t(sums: tuple[Any, ...], weights: list[float], i: IntArray, j: IntArray
              ) -> FloatArray:
    """:func:`_gram_pair_t` (some groups did not run some tasks) of ``Σ w_p parts[p]``
    from :func:`_part_sums`' ``sums``."""
    both, crosses, squares, grams = sums
    cross = _combine(crosses, weights)
    square = _quadratic(squares, weights, transpose=False)
    gram = _quadratic(grams, weights, transpose=True)
    c = both[i, j]
    s = cross[..., i, j] - cross[..., j, i]
    ss = square[..., i, j] + square[..., j, i] - 2.0 * gram[..., i, j]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / c
        var = np.clip((ss - s * mean) / (c - 1), 0.0, None)
        # rounding leaves a trace of variance where the differences are all equal
        var = np.where(var > 1e-12 * np.maximum(ss / c, 1e-300), var, 0.0)
        t = np.where(var > 0, mean / np.sqrt(var / c),
                     np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
    return np.where(c >= 2, np.nan_to_num(t, nan=0.0), 0.0)


def _center_tasks(cell: FloatArray, ran: npt.NDArray[np.bool_]) -> FloatArray:
    """Each task's measured cells less their mean (unmeasured cells 0). Paired
    differences and within-task shuffles are the same on it, and the matrix products of
    :func:`_gram_pair_t` lose no precision to a large common level (latencies in ms that
    differ in the fifth digit)."""
    counts = ran.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        level = np.where(ran, cell, 0.0).sum(axis=-1, keepdims=True) / counts
    return np.where(ran, cell - np.where(counts > 0, level, 0.0), 0.0)


def _gram_pair_t_complete(cell: FloatArray, i: IntArray, j: IntArray) -> FloatArray:
    """:func:`_gram_pair_t` when every group ran every task: the column sums (a product
    with a vector of ones) and one Gram matrix per shuffle give every pair's sum and sum
    of squared differences (a quarter of the general path's time: no masks, no cross
    products)."""
    n = cell.shape[-2]
    return _complete_t([np.ones(n) @ cell], [np.swapaxes(cell, -1, -2) @ cell], [1.0], n,
                       i, j)


def _complete_t(totals: list[FloatArray], grams: list[FloatArray], weights: list[float],
                n: int, i: IntArray, j: IntArray) -> FloatArray:
    """:func:`_gram_pair_t_complete` of ``Σ w_p parts[p]`` on ``n`` tasks from
    :func:`_part_sums`. Rounding in the products can leave a trace where two groups'
    results are equal: a sum of squared differences within 1e-12 of their sums of
    squares is no spread, and then a mean difference within 1e-12 of their sums no
    difference. The tasks' levels should be taken out first (:func:`_center_tasks`): the
    sums of squares are then of the spread, not of the level."""
    total = _combine(totals, weights)  # [..., group]
    gram = _quadratic(grams, weights, transpose=True)
    square = np.einsum("...ii->...i", gram)
    s = total[..., j] - total[..., i]
    scale = square[..., i] + square[..., j]
    ss = scale - 2.0 * gram[..., i, j]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        var = np.clip((ss - s * mean) / (n - 1), 0.0, None)
        var = np.where(var > 1e-12 * np.maximum(scale / n, 1e-300), var, 0.0)
        same = np.abs(s) <= 1e-12 * (np.abs(total[..., i]) + np.abs(total[..., j]))
        t = np.where(var > 0, mean / np.sqrt(var / n),
                     np.where(same, 0.0, np.sign(mean) * np.inf))
    return np.nan_to_num(t, nan=0.0) if n >= 2 else np.zeros_like(t)


def permutation_best_set(
    cell: FloatArray, ran: npt.NDArray[np.bool_], *, confidence: float = 0.95,
    n_permutations: int = 1000, seed: int = 0,
) -> npt.NDArray[np.bool_]:
    """The confidence set for the best by a step-down permutation test over tasks.

    ``cell`` is a tasks × groups table of each group's mean on each task (higher is
    better), ``ran`` says which cells were measured. A group leaves the set when some other
    group in it beats it, task by task on the tasks both ran, by a paired t above the
    critical value: the ``confidence`` quantile of the largest paired |t| over the pairs of
    the set when, within every task, the set's groups' results are shuffled among the
    groups that ran it (Westfall & Young's step-down max-T; the critical value is
    recomputed over the groups still in the set until none leaves). When the set's groups
    are identical their results are exchangeable within a task, so the shuffles have the
    statistic's exact distribution: identical groups are all kept with probability at
    least ``confidence``, whatever their number, the number of tasks, or the shape of the
    rewards (no normal or t approximation). The truly best group is kept with that
    probability too. With 0/1 rewards on few tasks it has more power than normal draws
    with a t-widened critical value, whose widening is paid in the far tail.
    """
    return WeightedBestSet([cell], ran, confidence=confidence,
                           n_permutations=n_permutations, seed=seed)([1.0])


def _nbytes(sums: tuple[Any, ...]) -> int:
    """The bytes of one chunk's :func:`_part_sums`."""
    return sum(a.nbytes for part in sums if part is not None
               for a in (part if isinstance(part, list) else [part]))


class WeightedBestSet:
    """:func:`permutation_best_set` of ``w_1 * cells[0] + w_2 * cells[1] + ...`` for weights
    given later, many times over (the tuner's weight sliders).

    The shuffles permute cells, which commutes with a weighted sum: each shuffle's sums
    and sums of products are kept per part and per pair of parts (:func:`_part_sums`), and
    a call with new weights combines them (a few products per pair of groups per shuffle)
    instead of gathering and multiplying the shuffled tables anew. The sets are those of
    :func:`permutation_best_set` on the summed table up to rounding in the last bits of
    the t statistics; with one part and weight 1 they are its own computation. The sums
    are kept for up to ``_PERM_CACHE_BYTES`` per instance; where the first step's would not
    fit (many groups), a call is :func:`permutation_best_set` of the summed table.
    """

    def __init__(self, cells: list[FloatArray], ran: npt.NDArray[np.bool_], *,
                 confidence: float = 0.95, n_permutations: int = 1000, seed: int = 0
                 ) -> None:
        self.cells = [np.asarray(c, dtype=np.float64) for c in cells]
        self.ran = np.asarray(ran, dtype=bool)
        self.confidence = confidence
        self.n_permutations = n_permutations
        self.seed = seed
        # the sums of each step's shuffles, with the generator's state after them
        self._sums: BytesLRU[tuple[list[tuple[Any, ...]], Any]] = BytesLRU(
            _PERM_CACHE_BYTES, lambda kept: sum(map(_nbytes, kept[0])))

    def __call__(self, weights: list[float]) -> npt.NDArray[np.bool_]:
        ran = self.ran
        n_tasks, n_groups = ran.shape
        keep: npt.NDArray[np.bool_] = np.asarray(ran.any(axis=0), dtype=bool)
        if n_groups < 2 or keep.sum() < 2:
            return keep
        w = [float(x) for x in weights]
        cell = _combine(self.cells, w)
        if len(self.cells) > 1 and not self._fits(n_groups):
            # the sums could not be kept: one part's worth of work on the summed table
            return permutation_best_set(cell, ran, confidence=self.confidence,
                                        n_permutations=self.n_permutations, seed=self.seed)
        rng = np.random.default_rng([self.seed, n_tasks, n_groups, 11])
        key: tuple[Any, ...] = (self.seed, n_tasks, n_groups, self.n_permutations,
                                hashlib.blake2b(np.packbits(ran).tobytes()).digest())
        inside = keep.copy()
        while inside.sum() >= 2:
            members = np.flatnonzero(inside)
            key += (members.tobytes(),)
            sub_ran = ran[:, members]
            i, j = np.triu_indices(members.size, k=1)
            sub = _center_tasks(cell[:, members], sub_ran)
            t = _gram_pair_t(sub, sub_ran, i, j)
            complete = bool(sub_ran.all())
            largest = []
            # one part at weight 1 is its own sum: its centred table is the one just made
            alone = sub if len(self.cells) == 1 and w[0] == 1.0 else None
            for sums in self._shuffled_sums(rng, key, members, sub_ran, i.size, alone):
                shuffled = (_complete_t(sums[1], sums[3], w, n_tasks, i, j) if complete
                            else _masked_t(sums, w, i, j))
                largest.append(np.abs(shuffled).max(axis=-1))
            # a t within rounding of the critical value is a tie with it, not above it:
            # with few tasks the observed t is one of the shuffles' values, and the
            # weighted sums reach it by another order of the same additions
            c = float(np.quantile(np.concatenate(largest), self.confidence))
            c += _TIE * abs(c)
            beaten = np.zeros(members.size, dtype=bool)
            np.logical_or.at(beaten, i, t > c)
            np.logical_or.at(beaten, j, -t > c)
            if not beaten.any():
                break
            inside[members[beaten]] = False
        return inside

    def _fits(self, n_groups: int) -> bool:
        """Whether the first step's sums (every group in the set, the largest) fit in what
        is kept (:func:`_part_sums` per shuffle: a Gram matrix per pair of parts and the
        column sums of each part; where some groups did not run some tasks, a matrix of
        sums of products per pair and one of sums per part instead of the column sums)."""
        k, parts = n_groups, len(self.cells)
        pairs = parts * (parts + 1) // 2
        per_shuffle = (pairs * k * k + parts * k if self.ran.all()
                       else (2 * pairs + parts) * k * k)
        return self.n_permutations * per_shuffle * 8 <= _PERM_CACHE_BYTES

    def _shuffled_sums(self, rng: np.random.Generator, key: tuple[Any, ...],
                       members: IntArray, sub_ran: npt.NDArray[np.bool_], n_pairs: int,
                       centred: FloatArray | None) -> Iterator[tuple[Any, ...]]:
        """:func:`_part_sums` of each chunk of shuffles of the members' centred parts, one
        chunk at a time; kept for the next call when there is more than one part (with
        one, the caller is :func:`permutation_best_set`, which calls once; with several,
        :meth:`_fits` said they fit)."""
        hit = self._sums.hit(key)
        if hit is not None:
            rng.bit_generator.state = hit[1]
            yield from hit[0]
            return
        n_tasks = sub_ran.shape[0]
        step = max(1, _PERM_CELLS // max(n_tasks * n_pairs, 1))
        tables = [centred] if centred is not None else [
            _center_tasks(c[:, members], sub_ran) for c in self.cells]
        flats = [np.ascontiguousarray(table).ravel() for table in tables]
        kept: list[tuple[Any, ...]] = []
        for index in _shuffles(rng, sub_ran, self.n_permutations, step, key):
            sums = _part_sums([flat[index] for flat in flats], sub_ran)
            if len(self.cells) > 1:
                kept.append(sums)
            yield sums
        if kept:
            self._sums.keep(key, (kept, rng.bit_generator.state))


def rank_intervals(
    estimate: FloatArray,
    draws: FloatArray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    df: float | None = None,
    seed: int = 0,
    best: npt.NDArray[np.bool_] | None = None,
) -> RankIntervals:
    """Simultaneous confidence sets for the ranks, the set of candidates that may be best,
    and a calibrated probability of being best.

    Parameters
    ----------
    estimate
        Each group's value on the data (``n_groups``).
    draws
        Each group's value in each draw of its sampling distribution (``n_draws ×
        n_groups``), e.g. from :meth:`MeanDraws.means` (normal with the task-clustered
        covariance: the multiplier bootstrap over tasks).
    df
        Degrees of freedom of the standard errors (tasks − 1); the critical value is
        widened from normal to t. None: normal.
    best
        The confidence set for the best when the caller has it from the data (e.g.
        :func:`permutation_best_set`, as :func:`best_group` does); None: the step-down set
        from the draws.

    Returns
    -------
    RankIntervals
        ``rank`` from the estimates (1 = best, ties share the lower rank). ``rank_low``,
        ``rank_high``: **simultaneous** confidence sets for all ranks at once (Mogstad,
        Romano, Shaikh & Wilhelm 2024, "Inference for Ranks"): every pair of groups is
        compared by its difference over its standard error, the critical value is the
        ``confidence`` quantile of the largest |t| over the pairs in the draws (step-down:
        recomputed over the pairs not yet told apart until none is added), and a group's
        rank set runs from 1 + the number of groups confidently better to ``n_groups`` −
        the number confidently worse. All the sets hold the true ranks together with
        probability ``confidence``. ``best_group``: a step-down confidence set for the
        best (:func:`_best_set`; it holds the truly best group with probability
        ``confidence``, ten identical groups are all in it about 95 % of the time, and it
        has more power than the all-pairs sets); ``rank_low`` is
        1 exactly for its members (2 at least for the others), so "its rank set holds 1"
        and "may be best" say the same. ``p_best``: the probability of being best under
        an empirical-Bayes normal model of the groups' true values (:func:`shrunk_draws`):
        plug-in draws around the estimates make the leader look best far too often
        (0.53 for the leader of five identical candidates); shrinking by the estimated
        between-candidate spread gives each of *k* indistinguishable candidates about 1/k.
        The leader of 5 / 10 identical candidates is still shown 0.32 / 0.21 (truth 0.20 /
        0.10): no rule gets both that and the close candidates' 0.355 within 0.05, since
        the two designs' data are within total variation 0.06 of each other
        (``benchmarks/coverage.py``'s ``p_best_bound``); the spike-and-slab posterior of
        :func:`shrunk_draws` measured worse here (0.30 / 0.24, and 0.60 instead of 0.76
        for one clearly best candidate among four tied), so ``p_best`` keeps the plug-in.
    """
    est = np.asarray(estimate, dtype=np.float64)
    rank = _ranks(est, higher_is_better)
    n = est.size
    sign = 1.0 if higher_is_better else -1.0
    e = np.where(np.isfinite(est), est * sign, -np.inf)
    d = np.where(np.isfinite(draws), draws * sign, 0.0)  # NaN groups: ranked last below
    i, j = np.triu_indices(n, k=1)
    with np.errstate(invalid="ignore"):
        diff = e[i] - e[j]  # NaN where both are not measured (-inf - -inf)
    spread = d[:, i] - d[:, j]
    with np.errstate(invalid="ignore"):
        se = np.std(spread, axis=0, ddof=1) if d.shape[0] > 1 else np.zeros(i.size)
        centred = spread - np.mean(spread, axis=0)
    known = np.isfinite(diff)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, np.abs(diff) / se, np.where(diff == 0, 0.0, np.inf))
    t = np.where(known, t, 0.0)
    apart = ~known & (np.isfinite(e[i]) != np.isfinite(e[j]))  # a NaN ranks last
    family = known.copy()
    level = confidence
    while True:
        c = _max_t_quantile(centred, se, family & ~apart, level, df)
        new = family & ~apart & (t > c)
        if not new.any():
            break
        apart |= new
        family &= ~new
    better = np.zeros(n, dtype=np.intp)  # groups confidently better than each group
    worse = np.zeros(n, dtype=np.intp)
    up = apart & (diff > 0)  # i above j
    down = apart & (diff < 0)
    np.add.at(better, j[up], 1)
    np.add.at(worse, i[up], 1)
    np.add.at(better, i[down], 1)
    np.add.at(worse, j[down], 1)
    low = (1 + better).astype(np.intp)
    high = (n - worse).astype(np.intp)
    leader = int(np.argmin(rank))
    best = _best_set(e, d, confidence, df) if best is None else best & np.isfinite(est)
    best[leader] = True
    low = np.where(best, 1, np.maximum(low, 2)).astype(np.intp)
    cov = np.cov(np.nan_to_num(draws), rowvar=False).reshape(n, n) if d.shape[0] > 1 else \
        np.zeros((n, n))
    post = shrunk_draws(est, cov, n_draws=max(d.shape[0], 1000), seed=seed)
    first = _ranks(post, higher_is_better) == 1
    first &= np.isfinite(est)
    p_best = (first / np.maximum(first.sum(axis=1, keepdims=True), 1)).mean(axis=0)
    return RankIntervals(rank, low, high, p_best, best, leader)


def pareto_probability(
    draws: dict[str, FloatArray], *, maximize: tuple[str, ...], minimize: tuple[str, ...],
    estimate: dict[str, FloatArray] | None = None, df: float | None = None,
) -> FloatArray:
    """Probability that each group is on the Pareto front: the posterior probability under
    the hierarchical normal model of :func:`shrunk_draws` with its stated spike-and-slab
    prior on each column's spread (all equal with probability :data:`P_NULL`, else the
    uniform shrinkage prior), integrated over.

    ``draws`` maps a column to ``n_draws × n_groups`` draws of the groups' means from
    their sampling distribution (their joint covariance is the model's noise);
    ``estimate`` the columns' values on the data (default: the draws' mean). A group is
    on the front when no other group is at least as good on every column and strictly
    better on one: exact ties (columns whose groups cannot be told apart from noise, so
    their posterior is one value) never push a group off, so exact twins are both on the
    front. Plug-in draws around the estimates are not used: they put close candidates
    and twins on the front about as often as a candidate dominated by a hair. A NaN (not
    measured) never dominates. ``df``: the draws' covariance was estimated from ``df + 1``
    tasks (``MeanDraws.n_units - 1``), so the model's noise is t with ``df`` degrees of
    freedom (:func:`shrunk_draws`); None takes it as known (normal).
    """
    cols = [c for c in maximize if c in draws] + [c for c in minimize if c in draws]
    if not cols:
        first = next(iter(draws.values()))
        return np.ones(first.shape[1])
    stacked = np.concatenate([draws[c] for c in cols], axis=1)
    est = (np.concatenate([estimate[c] for c in cols]) if estimate is not None
           else np.mean(stacked, axis=0))
    cov = np.cov(np.nan_to_num(stacked), rowvar=False).reshape(est.size, est.size)
    post = shrunk_draws(est, cov, blocks=len(cols), n_draws=stacked.shape[0],
                        tau="integrated", df=df)
    g = stacked.shape[1] // len(cols)
    signs = [1.0 if c in maximize else -1.0 for c in cols]
    v = np.stack([post[:, k * g:(k + 1) * g] * s for k, s in enumerate(signs)], axis=-1)
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
    draws: MeanDraws,
    x: FloatArray,
    *,
    confidence: float = 0.95,
) -> Any:
    """Every pair of groups compared on their means of ``x``, with Holm-adjusted p-values.

    With task codes (``draws.paired``) a pair is compared **paired, on the tasks both
    groups ran**: each group's mean over those tasks, the difference's standard error
    cluster-robust over them (``C/(C-1) * sum over the C common tasks of the squared
    differences of the two groups' deviations``) and a t test with ``C - 1`` degrees of
    freedom. When every group ran every task this is the difference of the groups' means
    with their task-clustered covariance. Tasks only one of the two ran are left out and
    counted (``n_only_a``, ``n_only_b``). Without task codes every row is its own unit and
    the groups are independent.

    Returns a pandas DataFrame with ``a``, ``b``, ``difference`` (a − b), ``ci_low``,
    ``ci_high`` (cut to the range a difference of the values can take: ``[-1, 1]`` for 0/1
    values), ``n_tasks`` (paired tasks), ``n_only_a``, ``n_only_b``, ``pvalue``, ``p_holm``
    and ``significant`` (``p_holm`` below ``1 - confidence``), one row a pair. A pair with
    no task in common has NaN for its difference and p-value (and is not in Holm's family).
    """
    import pandas as pd

    i, j = np.triu_indices(len(names), k=1)
    only_i = np.zeros(i.size, dtype=np.intp)
    only_j = np.zeros(i.size, dtype=np.intp)
    if draws.paired:
        _, counts = draws.unit_sums(x)
        if (counts > 0).all():
            # Every group ran every task: the pairs' common tasks are all of them, and the
            # joint task-clustered covariance gives the same numbers in one product.
            mean, cov = draws.covariance(x)
            diff = mean[i] - mean[j]
            var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
            paired = np.full(i.size, counts.shape[0], dtype=np.intp)
        else:
            diff, var, paired, only_i, only_j = _paired_differences(draws, x, i, j)
        df = np.maximum(paired - 1, 1)
        enough = paired >= 2
    else:  # every row its own unit: no unit is shared
        mean, cov = draws.covariance(x)
        per_group = np.bincount(draws.groups, weights=np.isfinite(x), minlength=len(names))
        paired = per_group[i] + per_group[j]
        diff = mean[i] - mean[j]
        var = cov[i, i] + cov[j, j] - 2 * cov[i, j]
        df = np.maximum(paired - 1, 1)
        enough = paired >= 2
    se = np.sqrt(np.clip(var, 0.0, None))
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, np.abs(diff) / se, np.where(diff == 0, 0.0, np.inf))
    pvalue = np.where(enough & np.isfinite(diff), 2 * t_sf(t, df), np.nan)
    half = t_ppf(0.5 + confidence / 2, df) * se
    finite = x[np.isfinite(x)]
    span = float(finite.max() - finite.min()) if finite.size else np.inf
    table = pd.DataFrame(
        {
            "a": [names[k] for k in i],
            "b": [names[k] for k in j],
            "difference": diff,
            "ci_low": np.maximum(diff - half, -span),
            "ci_high": np.minimum(diff + half, span),
            "n_tasks": np.asarray(paired).astype(int),
            "n_only_a": only_i,
            "n_only_b": only_j,
            "pvalue": pvalue,
        }
    )
    table["p_holm"] = holm(pvalue)
    table["significant"] = table["p_holm"] < 1 - confidence
    return table


# Cells of the pairs × tasks arrays computed at once (a few MB each).
_PAIR_CELLS = 2_000_000


def _paired_differences(
    draws: MeanDraws, x: FloatArray, i: IntArray, j: IntArray
) -> tuple[FloatArray, FloatArray, IntArray, IntArray, IntArray]:
    """Per pair ``(i, j)``: the difference of the two groups' means over the tasks both ran,
    its cluster-robust variance, the number of those tasks and of the tasks only one ran."""
    sums, counts = draws.unit_sums(x)  # tasks × groups
    n_pairs = i.size
    diff = np.full(n_pairs, np.nan)
    var = np.full(n_pairs, np.nan)
    paired = np.zeros(n_pairs, dtype=np.intp)
    only_i = np.zeros(n_pairs, dtype=np.intp)
    only_j = np.zeros(n_pairs, dtype=np.intp)
    step = max(1, _PAIR_CELLS // max(sums.shape[0], 1))
    for start in range(0, n_pairs, step):
        a, b = i[start : start + step], j[start : start + step]
        sa, na, sb, nb = sums[:, a].T, counts[:, a].T, sums[:, b].T, counts[:, b].T
        ran_a, ran_b = na > 0, nb > 0
        common = ran_a & ran_b
        c = common.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            # each task's mean, then the mean over the common tasks (one estimand)
            ca = np.where(common, sa / np.where(common, na, 1.0), 0.0)
            cb = np.where(common, sb / np.where(common, nb, 1.0), 0.0)
            ma, mb = ca.sum(axis=1) / c, cb.sum(axis=1) / c
            dev = np.where(common, (ca - ma[:, None]) / c[:, None]
                           - (cb - mb[:, None]) / c[:, None], 0.0)
            v = c / (c - 1) * (dev**2).sum(axis=1)
        block = slice(start, start + a.size)
        diff[block] = np.where(c > 0, ma - mb, np.nan)
        var[block] = np.where(c > 1, v, np.nan)
        paired[block] = c
        only_i[block] = (ran_a & ~ran_b).sum(axis=1)
        only_j[block] = (ran_b & ~ran_a).sum(axis=1)
    return diff, var, paired, only_i, only_j


def best_group(
    names: list[Any],
    estimate: FloatArray,
    draws: MeanDraws,
    x: FloatArray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    pairs: bool = True,
    best: npt.NDArray[np.bool_] | None = None,
) -> tuple[RankIntervals, Any]:
    """Simultaneous rank sets of the groups' means of ``x``, the set that may be best, and
    every pair compared.

    The best group is a confidence set for the best, with every group tied for best in it
    with probability ``confidence`` (identical candidates are all in it that often,
    whatever their number). With task codes and at most ``_PERM_TABLE`` task × group cells
    it is :func:`permutation_best_set` (results shuffled within tasks: exact for identical
    groups, and with power on few tasks, where normal draws must widen their critical
    value to t in the far tail); otherwise the step-down set of :func:`rank_intervals`
    from the draws (with many tasks the two agree). Its members' rank sets start at 1,
    the others' at 2. Returns the :class:`RankIntervals` and the :func:`pairwise_tests`
    table (Holm-adjusted p-values, for reading pair by pair; None with ``pairs=False``,
    for a caller that does not show it). ``best``: the permutation set when the caller
    has it already, from :func:`weighted_best_set` (``x`` a weighted sum of parts).
    """
    sizes = np.bincount(draws.groups, minlength=max(draws.n_groups, 1))
    units = draws.n_units if draws.paired else int(sizes.min()) if sizes.size else 2
    if best is None and _shuffles_tasks(draws):
        cell, ran = _task_cells(draws, x, higher_is_better)
        best = permutation_best_set(cell, ran, confidence=confidence,
                                    n_permutations=draws.n_draws, seed=draws.seed)
    ri = rank_intervals(
        estimate, draws.means(x), higher_is_better=higher_is_better, confidence=confidence,
        df=max(units - 1, 1), seed=draws.seed, best=best,
    )
    table = pairwise_tests(names, draws, x, confidence=confidence) if pairs else None
    return replace(ri, labels=tuple(names)), table


def _shuffles_tasks(draws: MeanDraws) -> bool:
    """Whether :func:`best_group`'s best set shuffles results within tasks
    (:func:`permutation_best_set`) rather than stepping down over the draws."""
    return draws.paired and 0 < draws.n_units * draws.n_groups <= _PERM_TABLE


def weighted_best_set(
    draws: MeanDraws, parts: list[FloatArray], *, higher_is_better: bool = True,
    confidence: float = 0.95,
) -> WeightedBestSet | None:
    """:func:`best_group`'s best set of ``x = w_1 * parts[0] + w_2 * parts[1] + ...`` for
    weights given later (``weighted_best_set(...)(weights)``, passed to ``best_group`` as
    ``best``), or None where ``best_group`` does not shuffle within tasks. A row is
    measured where every part is finite (where ``x`` is, whatever the weights)."""
    if not _shuffles_tasks(draws):
        return None
    measured = np.logical_and.reduce([np.isfinite(p) for p in parts])
    tables = [_task_cells(draws, np.where(measured, p, np.nan), higher_is_better)
              for p in parts]
    return WeightedBestSet([cell for cell, _ in tables], tables[0][1],
                           confidence=confidence, n_permutations=draws.n_draws,
                           seed=draws.seed)


def _task_cells(draws: MeanDraws, x: FloatArray, higher_is_better: bool
                ) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
    """The tasks × groups table of each group's mean of ``x`` on each task (negated when
    lower is better; 0 where not measured) and where it was measured."""
    sums, counts = draws.unit_sums(x)
    ran = counts > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        cell = np.where(ran, sums / np.where(ran, counts, 1.0), 0.0)
    return (cell if higher_is_better else -cell), ran


def candidate_table(
    frame: Any,
    columns: list[str],
    *,
    by: str = "candidate",
    cluster: str | None = "auto",
    confidence: float = 0.95,
    maximize: tuple[str, ...] = ("accuracy",),
    minimize: tuple[str, ...] = ("latency_ms", "cost_usd"),
    policy: Policy = "0.25",
    n_draws: int = 1000,
    seed: int = 0,
) -> Any:
    """Per-candidate means with task-clustered intervals, cost per success and ``p_front``.

    One row per candidate (sorted by name): ``n`` rows, ``n_tasks``, and for each column
    its mean, ``<column>_low``/``<column>_high`` (the default interval of
    :func:`metrickit.compute.stats.mean_ci`, clustered by task when tasks repeat),
    ``<column>_method`` and, when some values are NaN (not measured, or NA: the key is
    absent from the trial's evaluation; left out, never 0), ``<column>_n``.
    ``cost_per_success`` is mean cost / mean accuracy (inf when nothing succeeded) when
    both columns are there. ``p_front`` is the share of draws (:class:`MeanDraws`) in which the
    candidate is on the Pareto front of the ``maximize``/``minimize`` columns present;
    ``note`` flags intervals that may fall short (few tasks).

    The rows that count are :func:`metrickit._core.frame.counted_trials`'s under ``policy``
    (running trials never count); ``table.attrs["notes"]`` says what was left out. ``by``
    defaults to ``"candidate"``; a frame without the column is refused (StatsError naming
    ``by=`` and the columns).
    """
    import narwhals as nw
    import pandas as pd

    from metrickit._core.frame import counted_trials

    nf = nw.from_native(frame, eager_only=True)
    require_by(list(nf.columns), by, "candidate_table")
    absent = [c for c in columns if c not in nf.columns]
    if absent:
        raise StatsError(f"candidate_table: column {absent[0]!r} is not in the frame; columns "
                         f"are {list(nf.columns)}")
    counted = counted_trials(frame, policy=policy)
    frame = counted.frame
    nf = nw.from_native(frame, eager_only=True)
    codes, groups = group_codes(nf.get_column(by).to_numpy(), by)
    n_groups = len(groups)
    units, _ = task_codes(frame, cluster)
    out: dict[str, Any] = {by: list(groups), "n": np.bincount(codes, minlength=n_groups)}
    if units is not None:
        pairs = np.unique(codes.astype(np.int64) * (int(units.max()) + 1) + units)
        out["n_tasks"] = np.bincount(pairs // (int(units.max()) + 1), minlength=n_groups)
    notes = [""] * n_groups
    front: dict[str, FloatArray] = {}
    for column in columns:
        x = nf.get_column(column).cast(nw.Float64).to_numpy()
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
            front[column] = x
    table = pd.DataFrame(out)
    if "accuracy" in table and "cost_usd" in table:
        with np.errstate(divide="ignore", invalid="ignore"):
            table["cost_per_success"] = np.where(
                table["accuracy"] > 0, table["cost_usd"] / table["accuracy"], np.inf
            )
    if front:
        md = MeanDraws(codes, n_groups, units, n_draws=n_draws, seed=seed)
        draws = md.joint(front)
        estimate = {c: np.asarray(out[c], dtype=np.float64) for c in front}
        # the noise of a mean over few tasks is t with tasks - 1 degrees of freedom
        table["p_front"] = pareto_probability(
            draws, maximize=maximize, minimize=minimize, estimate=estimate,
            df=md.n_units - 1 if units is not None else None)
    table["note"] = notes
    table.attrs["notes"] = counted.notes()
    return table
