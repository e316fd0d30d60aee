"""Intervals for means and other statistics of rewards: one estimand, task by task.

See :mod:`metrickit.compute.stats` for the overview; the names here are re-exported there.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit._core.cache import BytesLRU
from metrickit._core.dist import beta_ppf, binom_cdf, binom_sf, norm_cdf, norm_ppf, t_ppf
from metrickit.errors import StatsError

MeanMethod = Literal["auto", "analytic", "cluster", "wilson", "cluster-wilson", "bootstrap", "bca"]
MEAN_METHODS: tuple[str, ...] = (
    "auto", "analytic", "cluster", "wilson", "cluster-wilson", "bootstrap", "bca"
)
BootMethod = Literal["percentile", "bca"]
FloatArray = npt.NDArray[np.float64]

# Cap on index-array cells generated at once (about 400 MB of int64).
_MAX_CELLS = 50_000_000
# Resampled values the bootstrap-t draws at once (32 MB of int64 indices): its memory is
# bounded by this, not by resamples x tasks.
BLOCK_CELLS = 1 << 22
# From this many tasks the skewed-data interval uses Hall's (1992) transformation of the
# t statistic instead of the bootstrap-t: both correct the t interval's skewness error to
# the same (second) order, and at this size they agree to well within the Monte Carlo
# error of 2,000 resamples (coverage benchmark in ``benchmarks/bench_report_scale.py``'s
# docstring), while the bootstrap-t would cost resamples x tasks draws.
BOOTSTRAP_T_MAX = 10_000
# Below this many tasks (or values) an interval is flagged: coverage can fall short there.
FEW = 10
# Sample skewness above which a t interval is flagged (lognormal costs: ~0.87 coverage at
# n = 20, ~0.91 at n = 200 in the coverage benchmark).
SKEWED = 1.0
# The note of an interval with no width (constant or saturated data): it covers nothing
# but the observed value, so it must never come back silently.
NO_WIDTH = "all values equal: the interval has no width"
# Single attempts: Wilson's bound next to a count of at most this many successes (or
# failures) is replaced by the exact (Clopper-Pearson) one, where Wilson dips to 0.84
# coverage (Brown, Cai & DasGupta 2001); with it the minimum over rates is 0.92-0.93.
EXACT_COUNT = 3


@dataclass(frozen=True)
class Interval:
    """An estimate with its uncertainty.

    Attributes
    ----------
    estimate
        The point estimate (for a mean: the sample mean).
    low, high
        The confidence interval's bounds (NaN when there is no honest interval: see
        ``note``).
    se
        Standard error of the estimate (for bootstrap methods: the standard deviation of
        the bootstrap distribution). NaN where undefined (a single value).
    n
        Number of observations used.
    method
        How the interval was computed: ``"wilson"``, ``"cluster-wilson"``, ``"analytic"``
        (Student t), ``"cluster"`` (cluster-robust t), ``"bootstrap"``, ``"bca"`` or
        ``"none"``.
    confidence
        Confidence level, e.g. 0.95.
    n_clusters
        Number of clusters (tasks) for the clustered methods, else None.
    cluster_unit
        What a cluster is, as printed: ``"tasks"`` (default), or ``"cases"`` for judge
        repeats nested in cases.
    note
        Why the interval may fall short of its nominal coverage, or why there is none
        (``"few tasks (6)"``, ``"all values equal"``); empty when nothing to say.
    """

    estimate: float
    low: float
    high: float
    se: float
    n: int
    method: str
    confidence: float
    n_clusters: int | None = None
    note: str = ""
    cluster_unit: str = "tasks"

    def __str__(self) -> str:
        pct = f"{self.confidence * 100:g}%"
        size = f"n={self.n}"
        if self.n_clusters is not None:
            size += f", {self.cluster_unit}={self.n_clusters}"
        text = (
            f"{self.estimate:.4f} [{self.low:.4f}, {self.high:.4f}] "
            f"({pct} {self.method}, se {self.se:.4f}, {size})"
        )
        return f"{text}; {self.note}" if self.note else text

    @property
    def half_width(self) -> float:
        """Half the interval's width (the ``±`` part for symmetric intervals)."""
        return (self.high - self.low) / 2


# ---------------------------------------------------------------------------
# Means
# ---------------------------------------------------------------------------


def as_values(values: Any, what: str = "values") -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise StatsError(f"{what} must be one-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        raise StatsError(f"{what} is empty; a mean needs at least one value")
    if not np.all(np.isfinite(arr)):
        bad = int(np.argmin(np.isfinite(arr)))
        raise StatsError(
            f"{what}[{bad}] is {float(arr[bad])!r}; expected finite numbers (drop or fill "
            "missing values first)"
        )
    return arr


def check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise StatsError(f"confidence={confidence!r}; expected a number between 0 and 1")


def _t_interval(
    estimate: float, se: float, df: int, n: int, confidence: float, method: str
) -> Interval:
    if df < 1 or not math.isfinite(se):
        return Interval(estimate, math.nan, math.nan, math.nan, n, method, confidence)
    crit = float(t_ppf(0.5 + confidence / 2, df))
    note = "" if has_spread(se, estimate) else "no spread: the interval has no width"
    return Interval(estimate, estimate - crit * se, estimate + crit * se, se, n, method,
                    confidence, note=note)


def has_spread(se: float, estimate: float) -> bool:
    """Whether a standard error is more than rounding (constant data give ~1e-17)."""
    return bool(se > 1e-12 * max(1.0, abs(estimate)))


def join_notes(*notes: str) -> str:
    """Notes joined with ``"; "``, empty ones left out."""
    return "; ".join(n for n in notes if n)


def _codes(labels: Any, n: int) -> tuple[npt.NDArray[np.intp], int]:
    import pandas as pd

    arr = np.asarray(labels, dtype=object)
    if arr.shape != (n,):
        raise StatsError(
            f"clusters has {arr.size} labels for {n} values; expected one label per value"
        )
    series = pd.Series(arr)
    if series.isna().any():
        row = int(np.argmax(series.isna().to_numpy()))
        raise StatsError(
            f"clusters[{row}] is {arr[row]!r}: a value without a task label cannot be "
            "clustered (label or drop those rows, or pass clusters=None to treat every "
            "value as independent)"
        )
    codes, uniques = pd.factorize(series, use_na_sentinel=False)
    return codes.astype(np.intp), len(uniques)


@dataclass(frozen=True)
class GroupedIntervals:
    """Per-group intervals of :func:`grouped_intervals` (arrays, one entry per group).

    ``mean`` is the estimand (the mean over tasks of each task's mean over its counted
    attempts); ``harbor_mean`` the mean over trials (Harbor's metric), equal to ``mean``
    when every task has the same number of attempts.
    """

    n: FloatArray
    n_clusters: FloatArray
    mean: FloatArray
    se: FloatArray
    low: FloatArray
    high: FloatArray
    method: list[str]
    note: list[str]
    harbor_mean: FloatArray = field(default_factory=lambda: np.zeros(0))


def unit_means(
    groups: npt.NDArray[np.intp],
    n_groups: int,
    x: FloatArray,
    clusters: npt.NDArray[np.intp] | None,
) -> tuple[FloatArray, npt.NDArray[np.intp], FloatArray]:
    """Each (group, task) cell's mean over its measured values: ``(cell_mean, cell_group,
    cell_n)``, one entry per cell with a measured value. Without ``clusters`` every
    measured row is its own cell. NaN values (not measured) are left out."""
    measured = np.isfinite(x)
    if clusters is None:
        return x[measured], groups[measured], np.ones(int(measured.sum()))
    k = int(clusters.max()) + 1 if clusters.size else 1
    cells, inverse = np.unique(
        groups[measured].astype(np.int64) * k + clusters[measured], return_inverse=True
    )
    cell_n = np.bincount(inverse, minlength=cells.size).astype(np.float64)
    cell_sum = np.bincount(inverse, weights=x[measured], minlength=cells.size)
    return cell_sum / np.maximum(cell_n, 1), (cells // k).astype(np.intp), cell_n


# Small bootstraps (resamples x values at most this) keep each resample's draw counts, so
# a repeat with other values of the same size and seed (the tuner's slider: the same tasks,
# new rewards) is two matrix-vector products instead of a fresh draw; at most
# _COUNTS_BYTES of them are kept, least recently used dropped first.
_COUNTS_CELLS = 1 << 18
_COUNTS_BYTES = 64 << 20
_counts: BytesLRU[FloatArray] = BytesLRU(_COUNTS_BYTES, lambda counts: counts.nbytes)


def _resample_counts(g: int, n_resamples: int, seed: int) -> FloatArray:
    """How often each of ``g`` values is drawn in each of ``n_resamples`` resamples, from the
    stream of ``default_rng(seed).integers(0, g, (n_resamples, g))``."""
    key = (g, n_resamples, seed)
    hit = _counts.hit(key)
    if hit is not None:
        return hit
    index = np.random.default_rng(seed).integers(0, g, (n_resamples, g))
    index += g * np.arange(n_resamples)[:, None]
    counts: FloatArray = np.bincount(index.ravel(), minlength=n_resamples * g).reshape(
        n_resamples, g).astype(np.float64)
    counts.setflags(write=False)
    _counts.keep(key, counts)
    return counts


def _bootstrap_t(m: FloatArray, confidence: float, n_resamples: int, seed: int) -> tuple[
        float, float]:
    """Studentized (bootstrap-t) interval of the mean of ``m`` (resampling its entries),
    drawn in blocks of at most :data:`BLOCK_CELLS` values (the same stream as one draw of
    ``(n_resamples, g)`` indices, so the same interval). Small ones reuse the resamples'
    draw counts (:func:`_resample_counts`): the same resamples, sums in another order
    (equal to about 1e-12)."""
    g = m.size
    mean, se = float(m.mean()), float(m.std(ddof=1)) / math.sqrt(g)
    alpha = (1 - confidence) / 2
    if n_resamples * g <= _COUNTS_CELLS and g >= 2:
        counts = _resample_counts(g, n_resamples, seed)
        d = m - mean  # centred first: the sums of squares below lose no digits to the mean
        shift = counts @ d / g  # each resample's mean minus the mean
        var = (counts @ (d * d) - g * shift * shift) / (g - 1)
        # a resample of one repeated value has no spread; rounding leaves ~1e-16 of it
        flat = var <= 1e-12 * np.maximum(counts @ (d * d), np.finfo(float).tiny) / (g - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(flat, 0.0, shift / np.sqrt(np.maximum(var, 0.0) / g))
        lo, hi = np.quantile(t, [alpha, 1 - alpha])
        return mean - float(hi) * se, mean - float(lo) * se
    rng = np.random.default_rng(seed)
    rows = max(1, BLOCK_CELLS // g)
    t = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        s = m[rng.integers(0, g, (stop - start, g))]
        mu, sd = s.mean(axis=1), s.std(axis=1, ddof=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t[start:stop] = np.where(sd > 0, (mu - mean) / (sd / math.sqrt(g)), 0.0)
    lo, hi = np.quantile(t, [alpha, 1 - alpha])
    return mean - float(hi) * se, mean - float(lo) * se


def _bootstrap_t_many(ms: list[FloatArray], confidence: float, n_resamples: int,
                      seeds: list[int]) -> list[tuple[float, float]]:
    """:func:`_bootstrap_t` of each of ``ms`` with its own seed. Those of one size small
    enough to keep their resamples' draw counts go together: their counts stacked (kept as
    a stack too, :data:`_counts`) and one batched product for the lot, where a loop of
    matrix-vector products spends most of its time in Python (the tuner with 14 skewed
    candidates: 6.6 → 1 ms). The same resamples and sums as one by one, to rounding."""
    out: list[tuple[float, float] | None] = [None] * len(ms)
    by_size: dict[int, list[int]] = {}
    for k, m in enumerate(ms):
        if n_resamples * m.size <= _COUNTS_CELLS and m.size >= 2 and len(ms) > 1:
            by_size.setdefault(m.size, []).append(k)
        else:
            out[k] = _bootstrap_t(m, confidence, n_resamples, seeds[k])
    alpha = (1 - confidence) / 2
    for g, ks in by_size.items():
        key = ("stack", g, n_resamples, tuple(seeds[k] for k in ks))
        counts = _counts.hit(key)
        if counts is None:
            counts = np.stack([_resample_counts(g, n_resamples, seeds[k]) for k in ks])
            counts.setflags(write=False)
            _counts.keep(key, counts)
        m = np.stack([ms[k] for k in ks])
        mean = m.mean(axis=1)
        se = m.std(axis=1, ddof=1) / math.sqrt(g)
        d = m - mean[:, None]  # centred first, as in _bootstrap_t
        shift = (counts @ d[:, :, None])[..., 0] / g
        square = (counts @ (d * d)[:, :, None])[..., 0]
        var = (square - g * shift * shift) / (g - 1)
        flat = var <= 1e-12 * np.maximum(square, np.finfo(float).tiny) / (g - 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            t = np.where(flat, 0.0, shift / np.sqrt(np.maximum(var, 0.0) / g))
        lo, hi = np.quantile(t, [alpha, 1 - alpha], axis=1)
        for row, k in enumerate(ks):
            out[k] = (float(mean[row] - hi[row] * se[row]), float(mean[row] - lo[row] * se[row]))
    return [b for b in out if b is not None]


def _hall(m: FloatArray, confidence: float) -> tuple[float, float]:
    """Hall's (1992, "On the removal of skewness by transformation") interval of the mean:
    the t statistic ``T`` made normal to second order by ``g(T) = T + c T**2 + c**2 T**3 / 3
    + c / 2``, ``c = skewness / (3 sqrt(n))``; ``g`` is monotone and inverted in closed
    form. O(n), and second-order equivalent to the bootstrap-t."""
    g = m.size
    mean, se = float(m.mean()), float(m.std(ddof=1)) / math.sqrt(g)
    d = m - mean
    m2 = float(np.mean(d**2))
    gamma = float(np.mean(d**3)) / m2**1.5 if m2 > 0 else 0.0
    c = gamma / (3 * math.sqrt(g))
    z = float(norm_ppf(0.5 + confidence / 2))

    def inverse(x: float) -> float:
        return x if c == 0 else (math.copysign(abs(1 + 3 * c * (x - c / 2)) ** (1 / 3),
                                               1 + 3 * c * (x - c / 2)) - 1) / c

    return mean - se * inverse(z), mean - se * inverse(-z)


def _lognormal(m: FloatArray, confidence: float) -> tuple[float, float]:
    """The modified Cox interval of a lognormal mean (positive ``m``), t quantile."""
    y = np.log(m)
    g = m.size
    s2 = float(y.var(ddof=1))
    est = float(y.mean()) + s2 / 2
    se = math.sqrt(s2 / g + s2**2 / (2 * (g - 1)))
    q = float(t_ppf(0.5 + confidence / 2, g - 1))
    return math.exp(est - q * se), math.exp(est + q * se)


def skewed_interval(
    m: FloatArray, confidence: float = 0.95, *, n_resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """The interval of the mean of positive, right-skewed ``m`` (costs, latencies; one
    value per task): the union of the studentized bootstrap (bootstrap-t) over tasks and
    the modified Cox interval of a lognormal mean. Each alone falls short on skewed data
    with few tasks (bootstrap-t: 0.88 at lognormal σ = 1.5 and 20 tasks; Cox's where the
    data are not lognormal); their union holds ≥ 0.93 in the coverage benchmark from
    σ ≤ 2 with 20 tasks and σ ≤ 1.5 with 10 (0.92 at σ = 2, 10 tasks: flagged).

    From :data:`BOOTSTRAP_T_MAX` tasks Hall's transformation interval (:func:`_hall`)
    replaces the bootstrap-t: the same second-order skewness correction in O(tasks) time
    and memory, where the bootstrap-t costs ``n_resamples`` x tasks draws."""
    return skewed_intervals([m], confidence, n_resamples=n_resamples, seeds=[seed])[0]


def skewed_intervals(
    ms: list[FloatArray], confidence: float = 0.95, *, n_resamples: int = 2000,
    seeds: list[int],
) -> list[tuple[float, float]]:
    """:func:`skewed_interval` of each of ``ms`` with its own seed, the bootstrap-t of
    those of one size computed together (:func:`_bootstrap_t_many`)."""
    small = [k for k, m in enumerate(ms) if m.size < BOOTSTRAP_T_MAX]
    boot = dict(zip(small, _bootstrap_t_many([ms[k] for k in small], confidence,
                                             n_resamples, [seeds[k] for k in small]),
                    strict=True))
    out = []
    for k, m in enumerate(ms):
        a, b = boot[k] if k in boot else _hall(m, confidence)
        if np.all(m > 0) and np.ptp(m) > 0:
            c, d = _lognormal(m, confidence)
            a, b = min(a, c), max(b, d)
        out.append((max(a, float(m.min())), b))
    return out


def grouped_intervals(
    groups: npt.NDArray[np.intp],
    n_groups: int,
    x: FloatArray,
    *,
    clusters: npt.NDArray[np.intp] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> GroupedIntervals:
    """The default (``method="auto"``) interval of every group's mean at once.

    The estimand is the mean over tasks of each task's mean over its measured attempts
    (attempts are repeated measures of their task: Miller 2024, "Adding Error Bars to
    Evals"); ``harbor_mean`` is the mean over trials (Harbor's metric), the same number
    when every task has the same number of attempts. Without ``clusters`` every row is a
    task of its own. The standard error is that of the task means (``sd / sqrt(G)``, G
    tasks; with equal attempts per task the cluster-robust one). Per group:

    * values that are all 0 or 1: Wilson's interval; where tasks repeat, with the
      effective sample size ``p(1-p) / se**2`` (``G`` when p is 0 or 1) and the t quantile
      with ``G - 1`` degrees of freedom. With single attempts (at least 10), a bound next
      to at most 3 successes (or failures) is the exact Clopper-Pearson one, where
      Wilson's coverage dips to 0.84 (rare events);
    * positive values whose task means are skewed (sample skewness above 0.5: costs,
      latencies): :func:`skewed_interval` (bootstrap-t over tasks ∪ lognormal), method
      ``"skewed"`` (``"cluster-skewed"`` where tasks repeat);
    * other values: Student's t with ``G - 1`` degrees of freedom cut to the range of the
      values (``"analytic"``, ``"cluster"`` where tasks repeat).

    NaN values (not measured) are left out. ``note`` says where coverage can fall short.
    """
    measured = np.isfinite(x)
    xz = np.where(measured, x, 0.0)
    n = np.bincount(groups, weights=measured.astype(np.float64), minlength=n_groups)
    cm, cg, _ = unit_means(groups, n_groups, x, clusters)
    g = np.bincount(cg, minlength=n_groups).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        harbor = np.bincount(groups, weights=xz, minlength=n_groups) / n
        mean = np.bincount(cg, weights=cm, minlength=n_groups) / g
        dev = cm - mean[cg]
        binary = np.bincount(
            groups, weights=(measured & (xz != 0) & (xz != 1)).astype(float), minlength=n_groups
        ) == 0
        # each group's smallest and largest value (NaN left out; none: +-inf)
        present = ~np.isnan(x)
        low_x = np.full(n_groups, np.inf)
        high_x = np.full(n_groups, -np.inf)
        np.minimum.at(low_x, groups[present], x[present])
        np.maximum.at(high_x, groups[present], x[present])
        repeated = (g < n) & (g >= 2)
        sq = np.bincount(cg, weights=dev**2, minlength=n_groups)
        m2 = sq / g
        m3 = np.bincount(cg, weights=dev**3, minlength=n_groups) / g
        skewness = np.where(m2 > 0, m3 / m2**1.5, 0.0)
        se = np.sqrt(sq / (g - 1) / g)
        df = g - 1
        tq = t_ppf(0.5 + confidence / 2, np.maximum(df, 1))
        zq = float(norm_ppf(0.5 + confidence / 2))
        rare = np.zeros(n_groups, dtype=bool)
        if clusters is not None:
            with_one = np.bincount(cg, weights=(cm > 0), minlength=n_groups)
            with_zero = np.bincount(cg, weights=(cm < 1), minlength=n_groups)
            rare = repeated & (np.minimum(with_one, with_zero) < FEW) & (g >= FEW)
        p = mean
        pq = p * (1 - p)
        n_eff = np.where(
            repeated, np.where((pq > 0) & (se > 0), np.minimum(n, pq / se**2), g), n
        )
        z = np.where(repeated, tq, zq)
        denom = 1 + z * z / n_eff
        centre = (p + z * z / (2 * n_eff)) / denom
        half = z * np.sqrt(pq / n_eff + z * z / (4 * n_eff * n_eff)) / denom
        w_low = np.clip(np.minimum(centre - half, p), 0.0, 1.0)
        w_high = np.clip(np.maximum(centre + half, p), 0.0, 1.0)
        single = binary & ~repeated & (n >= FEW)
        k = np.rint(p * n)
        exact_low = single & (k >= 1) & (k <= EXACT_COUNT)
        exact_high = single & (n - k >= 1) & (n - k <= EXACT_COUNT)
        alpha = 1 - confidence
        if exact_low.any():
            w_low[exact_low] = beta_ppf(alpha / 2, k[exact_low],
                                        n[exact_low] - k[exact_low] + 1)
        if exact_high.any():
            w_high[exact_high] = beta_ppf(1 - alpha / 2, k[exact_high] + 1,
                                          n[exact_high] - k[exact_high])
        t_low = np.maximum(mean - tq * se, low_x)
        t_high = np.minimum(mean + tq * se, high_x)
        low = np.where(binary, w_low, np.where(df >= 1, t_low, np.nan))
        high = np.where(binary, w_high, np.where(df >= 1, t_high, np.nan))
    skewed = ~binary & (skewness > 0.5) & (low_x > 0) & (g >= 3)
    log_sd = np.full(n_groups, np.nan)
    which = np.flatnonzero(skewed).tolist()
    values = [cm[cg == i] for i in which]
    bounds = skewed_intervals(values, confidence, seeds=[seed + i for i in which])
    for i, m, (a, b) in zip(which, values, bounds, strict=True):
        low[i], high[i] = a, b
        log_sd[i] = float(np.log(m).std(ddof=1))
    empty = n == 0
    low[empty] = high[empty] = mean[empty] = harbor[empty] = np.nan
    methods: list[str] = []
    notes: list[str] = []
    for i in range(n_groups):
        if empty[i]:
            methods.append("none")
            notes.append("no values")
            continue
        kind = "wilson" if binary[i] else "skewed" if skewed[i] else "analytic"
        methods.append(("cluster-" + kind if kind != "analytic" else "cluster")
                       if repeated[i] else kind)
        note = []
        if repeated[i] and g[i] < FEW:
            note.append(f"few tasks ({int(g[i])})")
        elif binary[i] and rare[i]:
            note.append("few tasks with a success or a failure")
        elif not repeated[i] and 1 < n[i] < FEW and not binary[i]:
            note.append(f"few values ({int(n[i])})")
        elif not repeated[i] and binary[i] and n[i] < FEW:
            note.append(f"few tasks ({int(n[i])})")
        elif binary[i] and not repeated[i] and min(mean[i], 1 - mean[i]) * n[i] < 5:
            note.append("few tasks with a success or a failure")
        if g[i] == 1 and not binary[i]:
            note.append("one value: no interval" if n[i] == 1
                        else "one task: no interval")
        elif not binary[i] and low_x[i] == high_x[i]:
            note.append(NO_WIDTH)
        elif not binary[i] and not skewed[i] and not has_spread(se[i], mean[i]):
            note.append("every task has the same mean: the interval has no width")
        elif skewed[i] and (g[i] < 15 or (g[i] < 20 and log_sd[i] > 1.5)):
            note.append(f"skewed values, {int(g[i])} tasks: the interval may undercover")
        elif not binary[i] and not skewed[i] and skewness[i] > SKEWED:
            note.append("skewed values: the t interval may undercover")
        notes.append("; ".join(note))
    return GroupedIntervals(
        n=np.asarray(n, dtype=np.float64),
        n_clusters=np.where(repeated, g, np.nan),
        mean=mean, se=se, low=low, high=high,
        method=methods, note=notes, harbor_mean=harbor,
    )


def mean_ci(
    values: Any,
    *,
    method: MeanMethod | str = "auto",
    confidence: float = 0.95,
    clusters: Any = None,
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean of ``values`` with standard error and confidence interval.

    Parameters
    ----------
    values
        One-dimensional finite numbers (e.g. one reward per trial).
    method
        ``"auto"`` (default): the interval that holds its coverage for this data. 0/1
        values get Wilson's interval; other values a t interval cut to the range of the
        values. When ``clusters`` repeat (several attempts of a task), both are clustered
        by task: ``"cluster-wilson"`` and ``"cluster"``. See :func:`grouped_intervals`.
        ``"analytic"``: sample standard error ``s / sqrt(n)`` and Student's t with n-1
        degrees of freedom (``scipy.stats.sem`` and ``scipy.stats.t``), not cut to range.
        ``"cluster"``: cluster-robust standard error with ``clusters`` as groups:
        ``sqrt(G/(G-1) * sum_g (sum_{i in g} (x_i - mean))**2) / n`` and t with G-1 degrees
        of freedom, as statsmodels' OLS ``cov_type="cluster"`` on an intercept-only model.
        ``"wilson"``: Wilson score interval for 0/1 values (se is ``sqrt(p(1-p)/n)``).
        ``"cluster-wilson"``: Wilson with the clustered effective sample size.
        ``"bootstrap"`` (percentile) and ``"bca"`` (bias-corrected and accelerated): see
        :func:`bootstrap_ci`.
    confidence
        Confidence level in (0, 1).
    clusters
        Cluster labels (the task of each value), one per value. With ``"auto"`` they are
        used when some label repeats.
    n_resamples, seed
        For the bootstrap methods.

    Returns
    -------
    Interval
        ``note`` says when the interval may fall short (few tasks) or has no width.

    Raises
    ------
    StatsError
        Empty or non-finite values, non-0/1 values for Wilson, missing or mismatched
        clusters, fewer than two clusters for ``"cluster"``, an unknown method.

    Examples
    --------
    >>> from metrickit.compute.stats import mean_ci
    >>> ci = mean_ci([1, 0, 1, 1])
    >>> ci.method, round(ci.estimate, 2), round(ci.low, 3), round(ci.high, 3)
    ('wilson', 0.75, 0.301, 0.954)
    >>> mean_ci([1, 0]).low >= 0
    True
    """
    check_confidence(confidence)
    if method not in MEAN_METHODS:
        raise StatsError(f"method={method!r}; expected one of {', '.join(map(repr, MEAN_METHODS))}")
    x = as_values(values)
    n = x.size
    estimate = float(x.mean())
    if clusters is not None and method in ("analytic", "wilson", "bootstrap", "bca"):
        codes, g = _codes(clusters, n)
        if g < n:  # tasks repeat: the explicit method keeps the clustering
            if method == "wilson":
                method = "cluster-wilson"
            else:
                sums = np.bincount(codes, weights=x, minlength=g)
                m = sums / np.bincount(codes, minlength=g)
                if method == "analytic":
                    se = float(m.std(ddof=1)) / math.sqrt(g) if g > 1 else math.nan
                    iv = _t_interval(float(m.mean()), se, g - 1, n, confidence, "analytic")
                else:
                    iv = replace(bootstrap_ci(m, np.mean, confidence=confidence,
                                              n_resamples=n_resamples, seed=seed,
                                              method="bca" if method == "bca" else "percentile"),
                                 n=n)
                note = join_notes(f"few tasks ({g})" if g < FEW else "", iv.note)
                return replace(iv, n_clusters=g, note=note)
    if method in ("auto", "cluster-wilson"):
        auto_codes = None if clusters is None else _codes(clusters, n)[0]
        if method == "cluster-wilson":
            if auto_codes is None:
                raise StatsError("method='cluster-wilson' needs clusters= (e.g. the task)")
            _require_binary(x, method)
        gi = grouped_intervals(
            np.zeros(n, dtype=np.intp), 1, x, clusters=auto_codes, confidence=confidence
        )
        g = gi.n_clusters[0]
        return Interval(
            float(gi.mean[0]), float(gi.low[0]), float(gi.high[0]), float(gi.se[0]), n,
            gi.method[0], confidence, None if math.isnan(g) else int(g), gi.note[0],
        )
    if method == "analytic":
        se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        return _t_interval(estimate, se, n - 1, n, confidence, "analytic")
    if method == "cluster":
        if clusters is None:
            raise StatsError("method='cluster' needs clusters= (one label per value, e.g. task)")
        codes, g = _codes(clusters, n)
        if g < 2:
            raise StatsError(
                f"method='cluster' needs at least 2 clusters; got {g}. Use 'analytic' instead"
            )
        sums = np.bincount(codes, weights=x - estimate, minlength=g)
        se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n
        iv = _t_interval(estimate, se, g - 1, n, confidence, "cluster")
        return replace(iv, n_clusters=g)
    if method in ("bootstrap", "bca"):
        return bootstrap_ci(
            x,
            np.mean,
            confidence=confidence,
            n_resamples=n_resamples,
            method="bca" if method == "bca" else "percentile",
            seed=seed,
        )
    _require_binary(x, method)
    z = float(norm_ppf(0.5 + confidence / 2))
    p = estimate
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    se = math.sqrt(p * (1 - p) / n)
    # Rounding can put a bound a hair past the estimate (6.9e-18 for all zeros): clamp.
    low, high = max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))
    k = round(p * n)
    note = (f"few tasks ({n})" if n < FEW else
            f"{min(k, n - k)} {'successes' if k <= n - k else 'failures'} in {n}: Wilson's "
            "coverage can fall to 0.84 here (method='auto' uses the exact bound)"
            if min(k, n - k) <= EXACT_COUNT and min(k, n - k) >= 1 else "")
    return Interval(estimate, low, high, se, n, "wilson", confidence, note=note)


def _require_binary(x: FloatArray, method: str) -> None:
    if not np.all((x == 0) | (x == 1)):
        bad = int(np.argmax((x != 0) & (x != 1)))
        raise StatsError(
            f"method={method!r} needs 0/1 values; values[{bad}] is {float(x[bad])!r}. Use "
            "'auto', 'analytic' or 'bootstrap' for non-binary rewards"
        )


# ---------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------


def _vectorised(statistic: Callable[..., Any]) -> Callable[[FloatArray], FloatArray]:
    """``statistic`` as a function of a 2-D array reducing along the last axis."""
    try:
        takes_axis = "axis" in inspect.signature(statistic).parameters
    except (TypeError, ValueError):  # some numpy ufunc-likes have no signature
        takes_axis = False
    if takes_axis:
        return lambda a: np.asarray(statistic(a, axis=-1), dtype=np.float64)

    def rowwise(a: FloatArray) -> FloatArray:
        return np.array([float(statistic(row)) for row in a], dtype=np.float64)

    return rowwise


def _resample_stats(
    x: FloatArray, stat: Callable[[FloatArray], FloatArray], n_resamples: int, seed: int
) -> FloatArray:
    rng = np.random.default_rng(seed)
    n = x.size
    rows = max(1, _MAX_CELLS // max(n, 1))
    if rows >= n_resamples:
        # One draw of shape (n_resamples, n): the same stream scipy.stats.bootstrap uses.
        return stat(x[rng.integers(0, n, (n_resamples, n))])
    out = np.empty(n_resamples, dtype=np.float64)
    for start in range(0, n_resamples, rows):
        stop = min(start + rows, n_resamples)
        out[start:stop] = stat(x[rng.integers(0, n, (stop - start, n))])
    return out


def bootstrap_ci(
    values: Any,
    statistic: Callable[..., Any],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    method: BootMethod | str = "percentile",
    seed: int = 0,
) -> Interval:
    """Seeded, vectorised bootstrap confidence interval of ``statistic(values)``.

    Parameters
    ----------
    values
        One-dimensional finite numbers.
    statistic
        A reduction. If it accepts an ``axis`` keyword (``np.mean``, ``np.median``, or
        ``def f(x, axis=-1)``) it is called once on the 1-D sample and once on a 2-D
        ``(n_resamples, n)`` array of resamples with ``axis=-1`` and must return one value
        per row: the fast path. Otherwise it is called on each 1-D resample in turn.
    confidence
        Confidence level in (0, 1).
    n_resamples
        Number of bootstrap resamples.
    method
        ``"percentile"`` or ``"bca"`` (bias-corrected and accelerated, with jackknife
        acceleration), as ``scipy.stats.bootstrap`` defines them.
    seed
        Seed of ``np.random.default_rng``. The resample indices are
        ``rng.integers(0, n, (n_resamples, n))``, which is what
        ``scipy.stats.bootstrap(..., rng=np.random.default_rng(seed))`` draws, so both
        give the same interval.

    Returns
    -------
    Interval
        ``se`` is the standard deviation (ddof=1) of the bootstrap distribution.

    Examples
    --------
    >>> import numpy as np
    >>> from metrickit.compute.stats import bootstrap_ci
    >>> ci = bootstrap_ci([0.2, 0.4, 0.9, 1.0, 0.5], np.median, seed=1)
    >>> ci.estimate, ci.low <= ci.estimate <= ci.high
    (0.5, True)
    """
    check_confidence(confidence)
    if method not in ("percentile", "bca"):
        raise StatsError(f"method={method!r}; expected 'percentile' or 'bca'")
    if n_resamples < 2:
        raise StatsError(f"n_resamples={n_resamples!r}; expected at least 2")
    x = as_values(values)
    n = x.size
    stat = _vectorised(statistic)
    estimate = float(stat(x[np.newaxis, :])[0])
    name = "bootstrap" if method == "percentile" else "bca"
    if np.all(x == x[0]):
        # Every resample equals the sample: the interval is the point (BCa would be 0/0).
        return Interval(estimate, estimate, estimate, 0.0, n, name, confidence, note=NO_WIDTH)
    theta = _resample_stats(x, stat, n_resamples, seed)
    alpha = (1 - confidence) / 2
    if method == "bca":
        z0 = float(
            norm_ppf(
                (np.count_nonzero(theta < estimate) + np.count_nonzero(theta <= estimate))
                / (2 * theta.size)
            )
        )
        keep = ~np.eye(n, dtype=bool)
        jack = stat(np.broadcast_to(x, (n, n))[keep].reshape(n, n - 1))
        u = (n - 1) * (jack.mean() - jack)
        num = float(np.sum(u**3)) / n**3
        den = float(np.sum(u**2)) / n**2
        a_hat = num / (6 * den**1.5) if den > 0 else 0.0
        z_lo = float(norm_ppf(alpha))
        probs = []
        for z in (z_lo, -z_lo):
            shifted = z0 + z
            probs.append(float(norm_cdf(z0 + shifted / (1 - a_hat * shifted))))
        lo_p, hi_p = probs
    else:
        lo_p, hi_p = alpha, 1 - alpha
    if not (math.isfinite(lo_p) and math.isfinite(hi_p)):
        raise StatsError(
            "the BCa interval cannot be computed for this sample (degenerate bootstrap "
            "distribution); use method='percentile'"
        )
    low, high = np.quantile(theta, [lo_p, hi_p])
    se = float(theta.std(ddof=1))
    return Interval(estimate, float(low), float(high), se, n, name, confidence)


# ---------------------------------------------------------------------------
# Quantiles and sums over tasks
# ---------------------------------------------------------------------------


def _task_values(
    values: Any, clusters: Any, reduce: Callable[[FloatArray], FloatArray]
) -> tuple[FloatArray, int]:
    """One value per task (``reduce`` of the task's counts and sums) and the number of
    values; without ``clusters`` every value is a task of its own."""
    x = as_values(values)
    if clusters is None:
        return x, x.size
    codes, g = _codes(clusters, x.size)
    return reduce(np.stack([np.bincount(codes, weights=x, minlength=g),
                            np.bincount(codes, minlength=g).astype(np.float64)])), x.size


def _order_statistics(g: int, q: float, confidence: float) -> tuple[int, int, float]:
    """Ranks ``(l, u)`` (1-based) of the order-statistic interval of the ``q`` quantile of
    ``g`` values and its exact coverage ``P(l <= B < u)``, ``B ~ Binomial(g, q)`` the count
    of values below the quantile; each side misses at most half of ``1 - confidence``,
    and a side that cannot is the extreme value."""
    alpha = 1 - confidence
    ks = np.arange(1, g + 1)
    below = binom_cdf(ks - 1, g, q)  # P(B < k): X_(k) lies above the quantile
    above = binom_sf(ks - 1, g, q)  # P(B >= k): X_(k) lies below it
    lows = ks[below <= alpha / 2]
    highs = ks[above <= alpha / 2]
    lo = int(lows.max()) if lows.size else 1
    hi = int(highs.min()) if highs.size else g
    attained = float(binom_cdf(hi - 1, g, q) - binom_cdf(lo - 1, g, q))
    return lo, hi, attained


def quantile_ci(
    values: Any, q: float, *, clusters: Any = None, confidence: float = 0.95
) -> Interval:
    """The ``q`` quantile over tasks of each task's mean, with an exact interval.

    The estimand follows the one of every metrickit mean: each task's attempts are
    averaged first (``clusters`` labels the task of each value; without them every value
    is a task), and the estimate is the ``q`` quantile of the task means (numpy's linear
    interpolation). The interval is the distribution-free one from order statistics,
    ``[X_(l), X_(u)]`` with the number of task means below the true quantile binomial
    ``(G, q)``: it holds at least ``confidence`` for any distribution of task means
    (conservative where values tie), with ``l`` and ``u`` chosen with at most half the
    miss on each side. Where ``G`` tasks cannot give such an interval (at 95 %, the 0.9
    quantile needs 31 tasks, the median 6), the bound that cannot be had is the extreme
    task mean, and a ``"few tasks"`` note says the interval's exact coverage and how many
    tasks would do.

    Examples
    --------
    >>> from metrickit.compute.intervals import quantile_ci
    >>> ci = quantile_ci(list(range(1, 21)), 0.5)
    >>> ci.estimate, ci.low, ci.high
    (10.5, 6.0, 15.0)
    """
    check_confidence(confidence)
    if not 0 <= q <= 1:
        raise StatsError(f"q={q!r}; expected a quantile between 0 and 1")
    m, n = _task_values(values, clusters, lambda sc: sc[0] / sc[1])
    g = m.size
    estimate = float(np.quantile(m, q))
    lo, hi, attained = _order_statistics(g, q, confidence)
    note = ""
    if g == 1:
        note = "one task: no interval"
    elif attained < confidence:
        need = g + 1
        while _order_statistics(need, q, confidence)[2] < confidence and need < 10**6:
            need += 1
        note = (f"few tasks ({g}) for the {q:g} quantile: this interval holds it "
                f"{math.floor(attained * 1000) / 10:g}% of the time; {confidence:.0%} needs "
                f"{need} tasks")
    order = np.sort(m)
    low, high = float(order[lo - 1]), float(order[hi - 1])
    if low == high and not note:
        note = NO_WIDTH
    clustered = g if clusters is not None and g < n else None
    return Interval(estimate, low, high, math.nan, n, "order-statistic", confidence,
                    clustered, note)


def sum_ci(
    values: Any, *, clusters: Any = None, confidence: float = 0.95, seed: int = 0
) -> Interval:
    """The sum of ``values`` with an interval over tasks.

    The sum over all values is ``G`` times the mean over tasks of each task's sum (``G``
    tasks, ``clusters`` labels the task of each value; without them every value is a
    task): the interval is ``G`` times the default interval (:func:`grouped_intervals`)
    of the mean of the task sums, so the tasks, not the attempts, are the sampling unit:
    Wilson for 0/1 task sums, the skewed-data interval for positive skewed ones (costs),
    else Student's t over tasks cut to the range. Below 10 tasks ``note`` says "few
    tasks".

    Examples
    --------
    >>> from metrickit.compute.intervals import sum_ci
    >>> ci = sum_ci([1, 0, 1, 1, 0, 1], clusters=["a", "a", "b", "b", "c", "c"])
    >>> ci.estimate, ci.n_clusters
    (4.0, 3)
    """
    check_confidence(confidence)
    s, n = _task_values(values, clusters, lambda sc: sc[0])
    g = s.size
    gi = grouped_intervals(np.zeros(g, dtype=np.intp), 1, s, confidence=confidence, seed=seed)
    note = gi.note[0].replace("few values", "few tasks").replace("one value:", "one task:")
    if g < FEW and "few tasks" not in note and g > 1:
        note = join_notes(f"few tasks ({g})", note)
    method = gi.method[0] if clusters is None or g == n else "cluster-" + gi.method[0]
    return Interval(float(s.sum()), g * float(gi.low[0]), g * float(gi.high[0]),
                    g * float(gi.se[0]), n, method, confidence,
                    g if clusters is not None and g < n else None, note)
