"""Uncertainty for means of rewards, and paired comparison of two runs.

Every function here takes plain arrays (or a trial frame for :func:`compare_runs` and
:func:`breakdown`) and returns small frozen records, so the numbers can be checked
against scipy and statsmodels (the tests do exactly that):

* :func:`mean_ci`: a mean with its standard error and confidence interval, by the
  t distribution (``"analytic"``), clustered by task (``"cluster"``), bootstrap
  (``"bootstrap"`` percentile, ``"bca"``) or Wilson (``"wilson"``, 0/1 values).
* :func:`bootstrap_ci`: the seeded, vectorised bootstrap behind the above, for any
  statistic; it draws the same resamples as ``scipy.stats.bootstrap`` given the same seed.
* :func:`paired_difference` and :func:`mcnemar_exact`: two runs over the same items.
* :func:`compare_runs`: two candidates (or runs, models, ...) of a trial table, paired
  task by task on the tasks both ran.
* :func:`breakdown`: n, mean ± CI, errors, cost and latency per group (per candidate by
  default).

The trials that count are :func:`metrickit._core.frame.counted_trials`'s (running trials
never do); a task is ``(source, task_name)`` (:func:`task_labels`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit.errors import MetrickitError, StatsError

if TYPE_CHECKING:
    from metrickit._core.frame import Policy


class _LazyScipyStats:
    """``scipy.stats`` imported on first use: it costs ~1.5 s, and ``import metrickit``
    should not pay that for users who never ask for an interval."""

    def __getattr__(self, name: str) -> Any:
        from scipy import stats

        return getattr(stats, name)


_sps = _LazyScipyStats()

__all__ = [
    "TASK_COLUMNS",
    "GroupedIntervals",
    "Interval",
    "RunComparison",
    "StatsError",
    "bootstrap_ci",
    "breakdown",
    "compare_runs",
    "group_codes",
    "grouped_intervals",
    "mcnemar_exact",
    "mean_ci",
    "min_detectable_difference",
    "paired_difference",
    "paired_t",
    "task_codes",
    "tasks_needed",
]

MeanMethod = Literal["auto", "analytic", "cluster", "wilson", "cluster-wilson", "bootstrap", "bca"]
MEAN_METHODS: tuple[str, ...] = (
    "auto", "analytic", "cluster", "wilson", "cluster-wilson", "bootstrap", "bca"
)
BootMethod = Literal["percentile", "bca"]
FloatArray = npt.NDArray[np.float64]

# Cap on index-array cells generated at once (about 400 MB of int64).
_MAX_CELLS = 50_000_000
# Below this many tasks (or values) an interval is flagged: coverage can fall short there.
FEW = 10
# Sample skewness above which a t interval is flagged (lognormal costs: ~0.87 coverage at
# n = 20, ~0.91 at n = 200 in the coverage benchmark).
SKEWED = 1.0


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


def _as_values(values: Any, what: str = "values") -> FloatArray:
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


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise StatsError(f"confidence={confidence!r}; expected a number between 0 and 1")


def _t_interval(
    estimate: float, se: float, df: int, n: int, confidence: float, method: str
) -> Interval:
    if df < 1 or not math.isfinite(se):
        return Interval(estimate, math.nan, math.nan, math.nan, n, method, confidence)
    crit = float(_sps.t.ppf(0.5 + confidence / 2, df))
    return Interval(estimate, estimate - crit * se, estimate + crit * se, se, n, method, confidence)


def _codes(labels: Any, n: int) -> tuple[npt.NDArray[np.intp], int]:
    import pandas as pd

    arr = np.asarray(labels, dtype=object)
    if arr.shape != (n,):
        raise StatsError(
            f"clusters has {arr.size} labels for {n} values; expected one label per value"
        )
    codes, uniques = pd.factorize(pd.Series(arr), use_na_sentinel=False)
    return codes.astype(np.intp), len(uniques)


@dataclass(frozen=True)
class GroupedIntervals:
    """Per-group intervals of :func:`grouped_intervals` (arrays, one entry per group)."""

    n: FloatArray
    n_clusters: FloatArray
    mean: FloatArray
    se: FloatArray
    low: FloatArray
    high: FloatArray
    method: list[str]
    note: list[str]


def grouped_intervals(
    groups: npt.NDArray[np.intp],
    n_groups: int,
    x: FloatArray,
    *,
    clusters: npt.NDArray[np.intp] | None = None,
    confidence: float = 0.95,
) -> GroupedIntervals:
    """The default (``method="auto"``) interval of the mean of ``x`` in every group at once.

    Per group: values that are all 0 or 1 get a Wilson interval; other values a Student-t
    interval cut to the range of the group's values. When ``clusters`` (task codes) repeat
    within a group, attempts of one task are not independent: the standard error is the
    cluster-robust one with ``G - 1`` degrees of freedom (G tasks), and the Wilson interval
    uses the effective sample size ``p(1-p) / se**2`` (``G`` when p is 0 or 1) with the
    t quantile. NaN values (not measured) are left out. Vectorised with ``bincount``.
    """
    import pandas as pd

    measured = np.isfinite(x)
    xz = np.where(measured, x, 0.0)
    w = measured.astype(np.float64)
    n = np.bincount(groups, weights=w, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(groups, weights=xz, minlength=n_groups) / n
        dev = np.where(measured, xz - mean[groups], 0.0)
        binary = np.bincount(
            groups, weights=(measured & (xz != 0) & (xz != 1)).astype(float), minlength=n_groups
        ) == 0
        # The range of each group's values (pandas' grouped min/max skip NaN).
        extremes = (
            pd.Series(x).groupby(groups).agg(["min", "max"]).reindex(range(n_groups))
        )
        low_x = extremes["min"].to_numpy(dtype=np.float64, na_value=np.inf)
        high_x = extremes["max"].to_numpy(dtype=np.float64, na_value=-np.inf)
        rare = np.zeros(n_groups, dtype=bool)
        if clusters is not None:
            # Only the (group, task) cells that occur: memory grows with the rows.
            k = int(clusters.max()) + 1 if clusters.size else 1
            cells, inverse = np.unique(
                groups.astype(np.int64) * k + clusters, return_inverse=True
            )
            cell_group = cells // k
            cell_n = np.bincount(inverse, weights=w, minlength=cells.size)
            cell_dev = np.bincount(inverse, weights=dev, minlength=cells.size)
            g = np.bincount(cell_group, weights=(cell_n > 0), minlength=n_groups)
            se_cluster = np.sqrt(
                g / (g - 1) * np.bincount(cell_group, weights=cell_dev**2, minlength=n_groups)
            ) / n
            repeated = (g < n) & (g >= 2)
            # Few tasks with a success (or a failure): the clustered interval's coverage
            # can fall short there (the coverage benchmark shows where).
            ones = np.bincount(inverse, weights=(measured & (xz == 1)), minlength=cells.size)
            zeros = np.bincount(inverse, weights=(measured & (xz == 0)), minlength=cells.size)
            with_one = np.bincount(cell_group, weights=(ones > 0), minlength=n_groups)
            with_zero = np.bincount(cell_group, weights=(zeros > 0), minlength=n_groups)
            rare = repeated & (np.minimum(with_one, with_zero) < FEW) & (g >= FEW)
        else:
            g = n.copy()
            se_cluster = np.full(n_groups, np.nan)
            repeated = np.zeros(n_groups, dtype=bool)
        m2 = np.bincount(groups, weights=dev**2, minlength=n_groups) / n
        m3 = np.bincount(groups, weights=dev**3, minlength=n_groups) / n
        skewed = (np.abs(m3) > SKEWED * m2**1.5) & (m2 > 0)
        sq = np.bincount(groups, weights=dev**2, minlength=n_groups)
        se_plain = np.sqrt(sq / (n - 1) / n)
        se = np.where(repeated, se_cluster, se_plain)
        df = np.where(repeated, g - 1, n - 1)
        tq = _sps.t.ppf(0.5 + confidence / 2, np.maximum(df, 1))
        zq = float(_sps.norm.ppf(0.5 + confidence / 2))
        # Wilson, with the effective sample size when tasks repeat.
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
        t_low = np.maximum(mean - tq * se, low_x)
        t_high = np.minimum(mean + tq * se, high_x)
        low = np.where(binary, w_low, np.where(df >= 1, t_low, np.nan))
        high = np.where(binary, w_high, np.where(df >= 1, t_high, np.nan))
    empty = n == 0
    low[empty] = high[empty] = mean[empty] = np.nan
    methods: list[str] = []
    notes: list[str] = []
    for i in range(n_groups):
        if empty[i]:
            methods.append("none")
            notes.append("no values")
            continue
        kind = "wilson" if binary[i] else "analytic"
        methods.append(("cluster-" + kind if binary[i] else "cluster") if repeated[i] else kind)
        note = []
        if repeated[i] and g[i] < FEW:
            note.append(f"few tasks ({int(g[i])})")
        elif binary[i] and rare[i]:
            note.append("few tasks with a success or a failure")
        elif not repeated[i] and not binary[i] and 1 < n[i] < FEW:
            note.append(f"few values ({int(n[i])})")
        if n[i] == 1 and not binary[i]:
            note.append("one value: no interval")
        elif not binary[i] and low_x[i] == high_x[i]:
            note.append("all values equal: the interval has no width")
        elif not binary[i] and skewed[i]:
            note.append("skewed values: the t interval may undercover")
        notes.append("; ".join(note))
    return GroupedIntervals(
        n=np.asarray(n, dtype=np.float64),
        n_clusters=np.where(repeated, g, np.nan),
        mean=mean, se=se, low=low, high=high,
        method=methods, note=notes,
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
    _check_confidence(confidence)
    if method not in MEAN_METHODS:
        raise StatsError(f"method={method!r}; expected one of {', '.join(map(repr, MEAN_METHODS))}")
    x = _as_values(values)
    n = x.size
    estimate = float(x.mean())
    if method in ("auto", "cluster-wilson"):
        codes = None if clusters is None else _codes(clusters, n)[0]
        if method == "cluster-wilson":
            if codes is None:
                raise StatsError("method='cluster-wilson' needs clusters= (e.g. the task)")
            _require_binary(x, method)
        gi = grouped_intervals(
            np.zeros(n, dtype=np.intp), 1, x, clusters=codes, confidence=confidence
        )
        g = gi.n_clusters[0]
        return Interval(
            estimate, float(gi.low[0]), float(gi.high[0]), float(gi.se[0]), n, gi.method[0],
            confidence, None if math.isnan(g) else int(g), gi.note[0],
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
    z = float(_sps.norm.ppf(0.5 + confidence / 2))
    p = estimate
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    se = math.sqrt(p * (1 - p) / n)
    # Rounding can put a bound a hair past the estimate (6.9e-18 for all zeros): clamp.
    low, high = max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))
    return Interval(estimate, low, high, se, n, "wilson", confidence)


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
    _check_confidence(confidence)
    if method not in ("percentile", "bca"):
        raise StatsError(f"method={method!r}; expected 'percentile' or 'bca'")
    if n_resamples < 2:
        raise StatsError(f"n_resamples={n_resamples!r}; expected at least 2")
    x = _as_values(values)
    n = x.size
    stat = _vectorised(statistic)
    estimate = float(stat(x[np.newaxis, :])[0])
    name = "bootstrap" if method == "percentile" else "bca"
    if np.all(x == x[0]):
        # Every resample equals the sample: the interval is the point (BCa would be 0/0).
        return Interval(estimate, estimate, estimate, 0.0, n, name, confidence)
    theta = _resample_stats(x, stat, n_resamples, seed)
    alpha = (1 - confidence) / 2
    if method == "bca":
        z0 = float(
            _sps.norm.ppf(
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
        z_lo = float(_sps.norm.ppf(alpha))
        probs = []
        for z in (z_lo, -z_lo):
            shifted = z0 + z
            probs.append(float(_sps.norm.cdf(z0 + shifted / (1 - a_hat * shifted))))
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
# Paired comparison
# ---------------------------------------------------------------------------


def paired_difference(
    a: Any,
    b: Any,
    *,
    confidence: float = 0.95,
    method: Literal["bootstrap", "bca", "analytic"] | str = "analytic",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean of ``a - b`` over paired items, with a confidence interval.

    Parameters
    ----------
    a, b
        Values of the two runs, aligned: ``a[i]`` and ``b[i]`` belong to the same item.
    method
        ``"analytic"`` (default: paired t interval, as ``scipy.stats.ttest_rel``; it holds
        its level with few items, where a percentile bootstrap is too narrow),
        ``"bootstrap"`` (percentile; items are resampled, pairs stay together) or ``"bca"``.

    Returns
    -------
    Interval
        The estimate is ``mean(a) - mean(b)``; positive means ``a`` is higher.

    Examples
    --------
    >>> from metrickit.compute.stats import paired_difference
    >>> d = paired_difference([1, 1, 0, 1], [0, 1, 0, 0], method="analytic")
    >>> d.estimate
    0.5
    """
    xa = _as_values(a, "a")
    xb = _as_values(b, "b")
    if xa.shape != xb.shape:
        raise StatsError(
            f"a has {xa.size} values and b has {xb.size}; a paired difference needs the "
            "same items in both, in the same order"
        )
    d = xa - xb
    if method == "analytic":
        return mean_ci(d, method="analytic", confidence=confidence)
    if method in ("bootstrap", "bca"):
        return mean_ci(d, method=method, confidence=confidence, n_resamples=n_resamples, seed=seed)
    raise StatsError(f"method={method!r}; expected 'bootstrap', 'bca' or 'analytic'")


def _binary(values: Any, what: str) -> npt.NDArray[np.bool_]:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise StatsError(f"{what} must be one-dimensional; got shape {x.shape}")
    bad = ~((x == 0) | (x == 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise StatsError(f"{what}[{i}] is {float(x[i])!r}; McNemar's test needs 0/1 outcomes")
    return x == 1


def mcnemar_exact(a: Any, b: Any) -> tuple[float, float]:
    """McNemar's exact test for paired 0/1 outcomes.

    Parameters
    ----------
    a, b
        Aligned 0/1 outcomes of two runs on the same items.

    Returns
    -------
    (statistic, pvalue)
        ``statistic`` is the smaller of the two discordant counts (a won / b won);
        ``pvalue`` the two-sided exact binomial p-value, capped at 1, as statsmodels'
        ``mcnemar(table, exact=True)``.

    Examples
    --------
    >>> from metrickit.compute.stats import mcnemar_exact
    >>> mcnemar_exact([1, 1, 1, 1, 0], [0, 0, 0, 0, 0])
    (0.0, 0.125)
    """
    xa = _binary(a, "a")
    xb = _binary(b, "b")
    if xa.shape != xb.shape:
        raise StatsError(f"a has {xa.size} outcomes and b has {xb.size}; expected paired outcomes")
    only_a = int(np.sum(xa & ~xb))
    only_b = int(np.sum(~xa & xb))
    statistic = min(only_a, only_b)
    pvalue = min(1.0, 2.0 * float(_sps.binom.cdf(statistic, only_a + only_b, 0.5)))
    return float(statistic), pvalue


# ---------------------------------------------------------------------------
# Trial tables
# ---------------------------------------------------------------------------


def _pandas(frame: Any) -> Any:
    import narwhals as nw
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        return frame
    nf = nw.from_native(frame, eager_only=True)
    return pd.DataFrame({c: nf.get_column(c).to_list() for c in nf.columns})


def require_by(columns: Sequence[str], by: str | Sequence[str], where: str) -> list[str]:
    """The ``by`` column(s) as a list; StatsError naming ``by=`` and the columns there are
    when one is missing (with a hint when it is ``candidate``, which every metrickit trial
    reader fills but a table of your own may lack)."""
    by_cols = [by] if isinstance(by, str) else list(by)
    absent = [c for c in by_cols if c not in columns]
    if absent:
        hint = (
            " (metrickit's trial readers fill it; for a table of your own pass by= naming "
            "the column that tells the candidates apart)" if "candidate" in absent else ""
        )
        raise StatsError(
            f"{where}: by={by!r} is not a column of the table{hint}; columns are {list(columns)}"
        )
    return by_cols


def _value_column(df: Any, value: str | None) -> str:
    from metrickit._core.frame import reward_keys

    if value is not None:
        if value not in df.columns:
            raise StatsError(f"value={value!r} is not a column; columns are {list(df.columns)}")
        return value
    keys = reward_keys(df)
    # Keys that only other rows had (zero-filled here) are not candidates.
    present = [k for k in keys if "_kind_" + k not in df.columns
               or (df["_kind_" + k].astype(str) != "missing").any()]
    keys = present or keys
    if len(keys) == 1:
        return keys[0]
    raise StatsError(
        f"the table has {len(keys)} reward columns {keys}; pass value= to choose one"
        if keys
        else "the table has no reward column; pass value= naming a numeric column"
    )


@dataclass(frozen=True)
class RunComparison:
    """Two candidates (or runs) compared task by task, over the tasks both ran.

    The sampling unit is the task: each side's attempts of a task are averaged first, and
    the comparison is over the per-task differences. Attempt labels never pair trials.
    ``n_tasks`` says how many tasks were paired, ``only_a``/``only_b`` which were left out
    (and ``notes`` repeats both).

    Attributes
    ----------
    a, b
        The two labels compared (values of the ``by`` column).
    value
        The reward column compared.
    difference
        Mean over paired tasks of (``a``'s mean on the task − ``b``'s), with a paired t
        interval over tasks. Positive: ``a`` scores higher.
    pvalue
        Two-sided p-value of the paired t test over tasks (H0: no difference).
    n_tasks
        Number of paired tasks.
    min_detectable
        The difference this comparison would detect 80 % of the time at the 5 % level,
        given the observed spread of the per-task differences.
    underpowered
        True when the test did not reject and the observed difference is smaller than
        ``min_detectable``: "no difference found" then says little.
    mcnemar
        ``(statistic, pvalue)`` of McNemar's exact test, only where pairing is genuine:
        every paired task has exactly one 0/1 trial in each run. Else None (``notes``).
    wins, losses, ties
        Tasks where ``a``'s mean is higher, lower, equal.
    tasks
        pandas DataFrame, one row per paired task: ``n_a``, ``n_b``, ``mean_a``, ``mean_b``,
        ``difference``, ``winner``, ``flip`` (``"pass→fail"``: ``a`` passes the task and
        ``b`` fails it; ``"fail→pass"`` the reverse; a run passes a task when its mean
        there is at least 0.5), ``influence`` (how much the overall difference moves when
        the task is left out: overall minus leave-one-out), and ``trials_a``/``trials_b``
        (the trial folders, when the table has ``trial_dir``).
    only_a, only_b
        Tasks that only one side ran (not in the comparison; ``b``'s under its own labels).
    notes
        Everything left out or not computed, and why.
    """

    a: Any
    b: Any
    value: str
    difference: Interval
    pvalue: float
    n_tasks: int
    min_detectable: float
    underpowered: bool
    mcnemar: tuple[float, float] | None
    wins: int
    losses: int
    ties: int
    tasks: Any = field(repr=False)
    only_a: list[Any] = field(default_factory=list)
    only_b: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def flips(self) -> Any:
        """The tasks one run passes and the other fails, with their trial folders."""
        return self.tasks[self.tasks["flip"] != ""].reset_index(drop=True)

    def __str__(self) -> str:
        d = self.difference
        lines = [
            f"{self.a} vs {self.b} on {self.n_tasks} paired task(s), value {self.value!r}",
            f"  difference (a - b): {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}] "
            f"({d.confidence * 100:g}% paired t over tasks), p = {self.pvalue:.4g}",
            f"  tasks won / lost / tied by {self.a}: {self.wins} / {self.losses} / {self.ties}",
        ]
        flips = self.flips
        if len(flips):
            counts = flips["flip"].value_counts()
            lines.append(
                "  flips: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                + " (see .flips for the tasks and trial folders)"
            )
        if self.mcnemar is not None:
            lines.append(
                f"  McNemar exact: statistic {self.mcnemar[0]:g}, p = {self.mcnemar[1]:.4g}"
            )
        if self.only_a:
            lines.append(f"  only in {self.a}: {self.only_a}")
        if self.only_b:
            lines.append(f"  only in {self.b}: {self.only_b}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


def paired_t(d: Any, *, confidence: float = 0.95) -> tuple[Interval, float]:
    """Paired t interval and two-sided p-value of the mean of per-task differences ``d``.

    When every difference is the same (no spread), the t statistic is undefined: the
    interval is the point, and the p-value is the exact sign-flip one (``2 / 2**T``, or 1
    when all differences are 0), which is what a permutation test over tasks gives.
    """
    x = _as_values(d, "differences")
    t_count = x.size
    iv = mean_ci(x, method="analytic", confidence=confidence)
    if t_count < 2:
        return replace(iv, method="paired-t", note="one task: no interval"), math.nan
    if not iv.se > 0:
        p = 1.0 if x[0] == 0 else min(1.0, 2.0 / 2.0**t_count)
        return replace(iv, low=iv.estimate, high=iv.estimate, method="paired-t"), p
    t_stat = iv.estimate / iv.se
    p = float(2 * _sps.t.sf(abs(t_stat), t_count - 1))
    note = f"few tasks ({t_count})" if t_count < FEW else ""
    return replace(iv, method="paired-t", note=note), p


def _detectable(sd: float, n_tasks: int, alpha: float, power: float) -> float:
    if n_tasks < 2:
        return math.inf
    df = n_tasks - 1
    crit = float(_sps.t.ppf(1 - alpha / 2, df)) + float(_sps.t.ppf(power, df))
    return crit * sd / math.sqrt(n_tasks)


def _difference_sd(attempts: int, base_rate: float, task_spread: float) -> float:
    if attempts < 1:
        raise StatsError(f"attempts={attempts!r}; expected at least 1")
    if not 0 < base_rate < 1:
        raise StatsError(f"base_rate={base_rate!r}; expected a rate strictly between 0 and 1")
    within = base_rate * (1 - base_rate) - task_spread**2
    if not task_spread >= 0 or within <= 0:
        raise StatsError(
            f"task_spread={task_spread!r}; expected 0 <= task_spread < "
            f"sqrt(base_rate * (1 - base_rate)) = {math.sqrt(base_rate * (1 - base_rate)):.3f}"
        )
    return math.sqrt(2 * within / attempts)


def min_detectable_difference(
    n_tasks: int,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest difference in pass rate that :func:`compare_runs` detects with ``power``.

    The design: two runs on the same ``n_tasks`` tasks, ``attempts`` 0/1 attempts per task
    each, compared by the paired t test over tasks at level ``alpha``. Task pass rates
    vary around ``base_rate`` with standard deviation ``task_spread`` (0: every task is
    equally hard; harder and easier tasks make attempts more alike within a task, which
    shrinks the noise of a per-task mean). The per-task difference then has standard
    deviation ``sqrt(2 (p(1-p) - spread**2) / attempts)``, and the answer is
    ``(t_{1-alpha/2} + t_{power}) * sd / sqrt(n_tasks)`` with ``n_tasks - 1`` degrees of
    freedom. It assumes a run's improvement is the same on every task; checked by
    simulation in the tests.

    Examples
    --------
    >>> from metrickit.compute.stats import min_detectable_difference
    >>> round(min_detectable_difference(100, attempts=3, base_rate=0.5), 3)
    0.116
    """
    sd = _difference_sd(attempts, base_rate, task_spread)
    return _detectable(sd, n_tasks, alpha, power)


def tasks_needed(
    difference: float,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """How many tasks :func:`compare_runs` needs to detect ``difference`` with ``power``.

    The inverse of :func:`min_detectable_difference` (same design and assumptions).

    Examples
    --------
    >>> from metrickit.compute.stats import tasks_needed
    >>> tasks_needed(0.1, attempts=3, base_rate=0.5)
    133
    """
    if not difference > 0:
        raise StatsError(f"difference={difference!r}; expected a positive difference in rate")
    sd = _difference_sd(attempts, base_rate, task_spread)
    low, high = 2, 4
    while _detectable(sd, high, alpha, power) > difference:
        low, high = high, high * 2
        if high > 10**9:
            raise StatsError(f"difference={difference!r} needs more than 10**9 tasks")
    while low < high:
        mid = (low + high) // 2
        if _detectable(sd, mid, alpha, power) <= difference:
            high = mid
        else:
            low = mid + 1
    return low


def compare_runs(
    trials: Any,
    a: Any,
    b: Any,
    *,
    by: str = "candidate",
    task: str = "task_name",
    value: str | None = None,
    policy: Policy = "0.25",
    task_map: Mapping[Any, Any] | Callable[[Any], Any] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> RunComparison:
    """Compare two candidates (or runs, agents, models, ...) of a trial table, task by task.

    Each side's attempts of a task are averaged; the headline is the mean of the per-task
    differences over the tasks **both** sides ran, with a paired t interval and test over
    tasks (its false-positive rate stays at or below 5.6 % with 5-30 tasks in the coverage
    benchmark). McNemar's test is added only when each paired task has one 0/1 trial per
    side. Tasks only one side ran are left out and listed (``only_a``, ``only_b``).

    Parameters
    ----------
    trials
        A trial table from any metrickit reader (pandas or polars), or any frame with the
        ``by``, ``task`` and value columns.
    a, b
        The two values of ``by`` to compare.
    by
        Column that tells the sides apart: ``"candidate"`` (default: one recorded
        configuration, what every reader fills), or ``"eval"``, ``"run"``, ``"agent"``,
        ``"model"``, ... A table without the column is refused with a message naming
        ``by=`` and the columns there are.
    task
        Column that pairs them. A task is ``(source, task_name)``: when the two sides' rows
        hold several sources the label is ``source/task_name`` (a task without a source is
        its own namespace, labelled by its name alone), so tasks of different sources never
        pair by accident.
    value
        Reward column; default the only reward key the two sides have.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0 (Harbor 0.25), ``"0.26"``
        it is left out. Running trials never count; ``notes`` says how many were left out.
        Trials whose evaluation has no ``value`` key (NA) are left out too, with a note.
    task_map
        Pairs tasks whose labels differ between the sides (a Terminal-Bench 1 run and a
        Harbor run of the same tasks): renames ``b``'s task labels onto ``a``'s, as a
        mapping (labels it lacks stay as they are) or a callable ``label -> label``. The
        labels are those ``only_a``/``only_b`` show (``source/task_name`` when the sides
        hold several sources). ``tasks["task_b"]`` keeps ``b``'s own label.
    confidence
        Confidence level of ``difference``.
    seed
        Unused (the comparison is exact); kept so calls that pass it keep working.

    Returns
    -------
    RunComparison
        The difference's interval stays within the range a difference of the values can
        take (``[-1, 1]`` for 0/1 rewards).

    Raises
    ------
    StatsError
        ``by`` or ``task`` not a column, ``a`` or ``b`` absent (or equal), no task in common,
        no value column, a ``task_map`` that gives no label.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2", "q3"] * 2, "model": ["m1"] * 3 + ["m2"] * 3,
    ...                    "ok": [1, 1, 0, 0, 1, 0]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    >>> result = mk.compare_runs(t, "m1", "m2")
    >>> result.n_tasks, result.wins, result.losses, result.ties
    (3, 1, 0, 2)
    >>> -1 <= result.difference.low and result.difference.high <= 1
    True
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials

    del seed
    df = _pandas(trials)
    require_by(list(df.columns), by, "compare_runs")
    if task not in df.columns:
        raise StatsError(f"compare_runs: task={task!r} is not a column; columns are "
                         f"{list(df.columns)}")
    labels = df[by]
    present = list(dict.fromkeys(labels.dropna().tolist()))
    sides = {}
    for name, label in (("a", a), ("b", b)):
        mask = _equals(labels, label)
        if not mask.any():
            raise StatsError(f"{name}={label!r} is not a value of {by!r}; values are {present}")
        sides[name] = mask
    if (sides["a"] & sides["b"]).any():
        raise StatsError(f"a and b are both {a!r}: compare two different values of {by!r}")
    df = df[sides["a"] | sides["b"]].assign(_side=np.where(sides["a"][sides["a"] | sides["b"]],
                                                           "a", "b"))
    counted = counted_trials(df.reset_index(drop=True), policy=policy)
    df = counted.frame
    notes: list[str] = counted.notes()
    column = _value_column(df, value)
    missing = pd.to_numeric(df[column]).isna().to_numpy()  # NA: absent from the evaluation
    for side, label in (("a", a), ("b", b)):
        rows = (df["_side"] == side).to_numpy()
        if not rows.any():
            raise StatsError(f"{label!r} has no trial that counts (policy {policy}: running "
                             "trials never count)")
        if missing[rows].all():
            raise StatsError(
                f"{column!r} is missing (NA) for every trial of {label!r}: no trial of its "
                "evaluation has that reward key, so there is nothing to compare; pick a "
                "key both runs have"
            )
    n_missing = int(missing.sum())
    if n_missing:
        df = df[~missing]
        notes.append(
            f"{n_missing} trial(s) left out: {column!r} is missing (NA) there, their "
            "evaluation has no such key"
        )
    df = df.assign(**{task: task_labels(df, task).to_numpy()})  # source/task when needed
    is_b = (df["_side"] == "b").to_numpy()
    df["_task_b"] = df[task]
    if task_map is not None:
        renamed = _map_tasks(df.loc[is_b, task], task_map)
        df.loc[is_b, task] = renamed.to_numpy()
        pairs = pd.DataFrame({"to": renamed.to_numpy(),
                              "own": df.loc[is_b, "_task_b"].to_numpy()}).drop_duplicates()
        merged = int((pairs["to"].value_counts() > 1).sum())
        if merged:
            notes.append(
                f"task_map sends several of {b!r}'s tasks onto {merged} label(s): their "
                "trials are averaged together there"
            )
    x = pd.to_numeric(df[column]).astype("float64")
    df = df.assign(**{column: x.to_numpy()})
    da = df[~is_b]
    db = df[is_b]
    mean_a = da.groupby(task, sort=False)[column].agg(["size", "mean"])
    mean_b = db.groupby(task, sort=False)[column].agg(["size", "mean"])
    common = [t for t in mean_a.index if t in mean_b.index]
    only_a = [t for t in mean_a.index if t not in mean_b.index]
    own_b = db.groupby(task, sort=False)["_task_b"].agg(lambda s: list(dict.fromkeys(s)))
    only_b = [o for t in mean_b.index if t not in mean_a.index for o in own_b[t]]
    if not common:
        hint = "" if task_map is not None else (
            "; pass task_map= when the two name their tasks differently (tasks of different "
            "sources never pair by themselves)"
        )
        raise StatsError(
            f"{a!r} and {b!r} have no {task!r} in common; nothing to pair ({a!r} tasks like "
            f"{only_a[:3]}, {b!r} tasks like {only_b[:3]}){hint}"
        )
    ma = mean_a.loc[common, "mean"].to_numpy(dtype=np.float64)
    mb = mean_b.loc[common, "mean"].to_numpy(dtype=np.float64)
    diff = ma - mb
    t_count = len(common)
    total = float(diff.sum())
    influence = (
        total / t_count - (total - diff) / (t_count - 1) if t_count > 1 else np.full(1, np.nan)
    )
    pass_a, pass_b = ma >= 0.5, mb >= 0.5
    flip = np.where(pass_a & ~pass_b, "pass→fail", np.where(~pass_a & pass_b, "fail→pass", ""))
    table = pd.DataFrame(
        {
            task: common,
            "n_a": mean_a.loc[common, "size"].to_numpy(),
            "n_b": mean_b.loc[common, "size"].to_numpy(),
            "mean_a": ma,
            "mean_b": mb,
            "difference": diff,
            "winner": np.where(diff > 0, str(a), np.where(diff < 0, str(b), "tie")),
            "flip": flip,
            "influence": influence,
        }
    )
    if task_map is not None:
        table["task_b"] = [", ".join(map(str, own_b[t])) for t in common]
    if "trial_dir" in df.columns:
        for suffix, part in (("a", da), ("b", db)):
            folders = part.groupby(task, sort=False)["trial_dir"].agg(list)
            table["trials_" + suffix] = [folders.get(t, []) for t in common]
    if only_a or only_b:
        shown = "; ".join(
            f"only {label!r} ran {len(tasks)}: {_few(tasks)}"
            for label, tasks in ((a, only_a), (b, only_b)) if tasks
        )
        notes.append(
            f"paired on the {t_count} task(s) both ran; {len(only_a) + len(only_b)} task(s) "
            f"ran in only one of the two runs and are left out ({shown}; see only_a, only_b)"
        )
    interval, pvalue = paired_t(diff, confidence=confidence)
    # A difference of two means of values in [lo, hi] lies within [-(hi - lo), hi - lo].
    span = float(x.max() - x.min()) if len(x) else math.nan
    if math.isfinite(span) and (interval.low < -span or interval.high > span):
        interval = replace(interval, low=max(interval.low, -span), high=min(interval.high, span))
        notes.append(f"the t interval is cut to the range a difference can take (±{span:g})")
    sd = float(diff.std(ddof=1)) if t_count > 1 else math.nan
    detectable = _detectable(sd, t_count, 1 - confidence, 0.8) if t_count > 1 else math.inf
    underpowered = bool(
        not pvalue < 1 - confidence and abs(interval.estimate) < detectable
    ) if t_count > 1 else True
    if t_count < 2:
        notes.append("one paired task only: no interval and no test")
    elif underpowered and math.isfinite(span) and detectable >= span > 0:
        notes.append(
            f"underpowered: with {t_count} tasks and this spread no difference within the "
            f"range a difference can take (±{span:g}) would be found 80 % of the time; not "
            "finding one says little"
        )
    elif underpowered:
        notes.append(
            f"underpowered: with {t_count} tasks and this spread a difference must be about "
            f"±{detectable:.3f} to be found 80 % of the time; not finding one says little"
        )
    if interval.note:
        notes.append(f"{interval.note}: the t interval's coverage can fall short")
    mcnemar = _mcnemar_single_attempt(da, db, column, task, common, notes)
    return RunComparison(
        a=a,
        b=b,
        value=column,
        difference=interval,
        pvalue=pvalue,
        n_tasks=t_count,
        min_detectable=detectable,
        underpowered=underpowered,
        mcnemar=mcnemar,
        wins=int(np.sum(diff > 0)),
        losses=int(np.sum(diff < 0)),
        ties=int(np.sum(diff == 0)),
        tasks=table,
        only_a=only_a,
        only_b=only_b,
        notes=notes,
    )


def _equals(labels: Any, label: Any) -> npt.NDArray[np.bool_]:
    """Rows whose label is ``label`` (a null label matches nothing; no NA ambiguity)."""
    values = labels.tolist()
    return np.fromiter((not _null(v) and bool(v == label) for v in values), dtype=bool,
                       count=len(values))


def _map_tasks(labels: Any, task_map: Mapping[Any, Any] | Callable[[Any], Any]) -> Any:
    """``labels`` (a pandas Series) renamed by ``task_map``; StatsError where it gives none."""
    if callable(task_map):
        mapper = task_map
    elif isinstance(task_map, Mapping):
        def mapper(label: Any) -> Any:
            return task_map.get(label, label)
    else:
        raise StatsError(
            f"task_map={task_map!r}; expected a mapping of task labels or a callable "
            "label -> label"
        )
    out = {}
    for label in dict.fromkeys(labels.tolist()):
        mapped = mapper(label)
        if _null(mapped):
            raise StatsError(
                f"task_map gave {mapped!r} for the task {label!r}; expected a task label (one "
                "of the other side's, or any other to leave the task unpaired)"
            )
        out[label] = mapped
    return labels.map(out)


def _few(items: Sequence[Any], n: int = 5) -> str:
    shown = ", ".join(map(str, items[:n]))
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def _mcnemar_single_attempt(
    da: Any, db: Any, column: str, task: str, common: list[Any], notes: list[str]
) -> tuple[float, float] | None:
    values = np.concatenate([da[column].to_numpy(float), db[column].to_numpy(float)])
    if not np.all((values == 0) | (values == 1)):
        notes.append("McNemar's test not computed: the values are not all 0/1")
        return None
    left = da[da[task].isin(common)].set_index(task)[column]
    right = db[db[task].isin(common)].set_index(task)[column]
    if not (left.index.is_unique and right.index.is_unique):
        notes.append(
            "McNemar's test not computed: a task has several attempts in a run, so trials "
            "cannot be paired one to one (the paired t test over tasks is the comparison)"
        )
        return None
    right = right.loc[left.index]
    return mcnemar_exact(left.to_numpy(), right.to_numpy())


def group_codes(labels: Any, by: str) -> tuple[np.ndarray, Any]:
    """Integer codes and sorted group names of a label column; a missing label is an error
    (a row would otherwise vanish from every mean and plot)."""
    import pandas as pd

    values = pd.Series(labels, dtype=object)
    if values.map(lambda v: isinstance(v, bool | np.bool_)).any():
        # True == 1 in Python, so a plain factorize would merge candidates True and 1.
        codes, keys = pd.factorize(
            values.map(lambda v: ("bool", bool(v)) if isinstance(v, bool | np.bool_) else v),
            sort=False,
        )
        order = np.argsort([str(k) for k in keys], kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first = [values.iloc[int(np.argmax(codes == i))] for i in range(len(keys))]
        codes = np.where(codes < 0, -1, rank[np.maximum(codes, 0)])
        groups = pd.Index([first[i] for i in order], dtype=object)
    else:
        codes, groups = pd.factorize(values, sort=True)
    if (codes < 0).any():
        row = int(np.argmax(codes < 0))
        raise MetrickitError(
            f"column {by!r} has no value at row {row} ({int((codes < 0).sum())} row(s) in all); "
            "every case needs a group label: fill or drop those rows explicitly"
        )
    return codes, groups


# Columns that name the task (the sampling unit) in the tables metrickit reads.
TASK_COLUMNS = ("task_name", "task", "case_id", "sample_id", "doc_id")


def task_codes(
    frame: Any, cluster: str | None = "auto"
) -> tuple[npt.NDArray[np.intp] | None, str | None]:
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
    labels = task_labels(nf.to_native(), cluster)
    codes = pd.factorize(labels, use_na_sentinel=False)[0]
    return codes.astype(np.intp), cluster


def task_labels(frame: Any, task: str) -> Any:
    """The task of each row as a pandas Series of labels.

    A task is ``(source, task_name)``: ``task_name`` ids are only unique within their
    ``source`` (sample ``0`` of two lm-eval tasks, a task id two Inspect tasks share). So
    when the rows hold several sources the label is ``source/task_name``; rows without a
    source are a namespace of their own, labelled by the task name alone (never
    ``nan/...``, and never merged with each other or with a task of a named source).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task_name": ["x", "x", "y"], "source": ["s", None, None]})
    >>> task_labels(df, "task_name").tolist()
    ['s/x', 'x', 'y']
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    labels = pd.Series(nf.get_column(task).to_list(), dtype=object)
    if task == "task_name" and "source" in nf.columns:
        sources = nf.get_column("source").to_list()
        null = [_null(s) for s in sources]
        named = {s for s, n in zip(sources, null, strict=True) if not n}
        if len(named) + any(null) > 1:
            labels = pd.Series(
                [str(t) if n else f"{s}/{t}"
                 for s, t, n in zip(sources, labels.tolist(), null, strict=True)],
                dtype=object,
            )
    return labels


def _null(value: Any) -> bool:
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def breakdown(
    trials: Any,
    by: str | Sequence[str] = "candidate",
    *,
    value: str | None = None,
    method: MeanMethod | str = "auto",
    confidence: float = 0.95,
    cluster: str | None = "auto",
    policy: Policy = "0.25",
    seed: int = 0,
) -> Any:
    """One row per group: n, tasks, mean ± CI, errors, mean cost and mean latency.

    Parameters
    ----------
    trials
        A trial table from any metrickit reader (or any frame with the ``by`` and value
        columns).
    by
        Column(s) to group by: ``"candidate"`` (default: one recorded configuration, what
        every reader fills), or e.g. ``"eval"`` (Harbor's evaluations), ``["agent",
        "model"]``, ``"task_name"``. A table without the column is refused with a message
        naming ``by=`` and the columns there are.
    value
        Reward column; default the table's only reward key.
    method
        Interval method of :func:`mean_ci`. ``"auto"`` (default): Wilson for 0/1 values,
        t cut to the value range otherwise, both clustered by task where a group has
        several attempts of a task.
    cluster
        The task column; ``"auto"`` takes ``task_name`` (or ``task``, ``case_id``, ...)
        when the frame has one. ``None`` treats every trial as independent (explicitly).
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0, ``"0.26"`` it is
        left out (the group's ``note`` says how many). Running trials never count.
    confidence, seed
        As in :func:`mean_ci`.

    Returns
    -------
    DataFrame (same backend as ``trials``)
        Columns ``*by, n, n_tasks, mean, se, ci_low, ci_high, method, note, n_errors,
        n_running, mean_cost_usd, mean_latency_ms``. Running trials are not in ``n`` or
        the mean; ``n_running`` counts them (a running trial whose configuration is not
        recorded yet belongs to no group). A trial whose evaluation has no ``value`` key
        (NA) is left out of ``n`` and the mean, and ``note`` says so. Errors are finished
        trials with an ``exception_type``; latency is ``total_ms`` (the whole trial).
        ``note`` also flags intervals whose coverage may fall short ("few tasks").

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2"] * 2, "model": ["m1", "m1", "m2", "m2"],
    ...                    "ok": [1, 0, 1, 1]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    >>> mk.breakdown(t)[["candidate", "n", "n_tasks", "mean"]]
      candidate  n  n_tasks  mean
    0        m1  2        2   0.5
    1        m2  2        2   1.0
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials, ungrouped_running

    if method not in MEAN_METHODS:
        raise StatsError(f"method={method!r}; expected one of {', '.join(map(repr, MEAN_METHODS))}")
    original = trials
    df_all = _pandas(trials)
    by_cols = require_by(list(df_all.columns), by, "breakdown")
    # A running trial whose group is not known yet (Harbor writes config.json after the
    # folder) forms no group of its own: it never counts, and it is not a candidate.
    unknown = ungrouped_running(df_all, by_cols)
    if unknown.any():
        df_all = df_all[~unknown].reset_index(drop=True)
    counted = counted_trials(df_all, policy=policy)
    df = counted.frame
    every = np.ones(len(df_all), dtype=bool)
    done = every if counted.keep is None else np.asarray(counted.keep, dtype=bool)
    running_mask = ~every if counted.running is None else np.asarray(counted.running, dtype=bool)
    left_out_mask = ~done & ~running_mask  # policy 0.26: no valid reward
    column = _value_column(df, value)
    keys_all = pd.Series(
        list(zip(*(df_all[c].tolist() for c in by_cols), strict=True)), dtype=object
    )
    codes, uniques = pd.factorize(keys_all, use_na_sentinel=False)
    x = pd.to_numeric(df_all[column]).to_numpy(dtype=np.float64, na_value=np.nan)
    na = done & np.isnan(x)  # the key is absent from the trial's whole evaluation
    x = np.where(done, x, np.nan)
    measured = done & ~na
    units, _ = task_codes(df_all, cluster)
    n_groups = len(uniques)
    if method == "auto":
        gi = grouped_intervals(codes, n_groups, x, clusters=units, confidence=confidence)
        stats_cols: dict[str, Any] = {
            "mean": gi.mean, "se": gi.se, "ci_low": gi.low, "ci_high": gi.high,
            "method": gi.method, "note": gi.note,
        }
    else:
        cis = []
        for i in range(n_groups):
            rows = (codes == i) & measured
            if not rows.any():
                cis.append(Interval(math.nan, math.nan, math.nan, math.nan, 0, "none", confidence))
                continue
            clusters = units[rows] if units is not None else None
            cis.append(mean_ci(x[rows], method=method, confidence=confidence,
                               clusters=clusters, seed=seed))
        stats_cols = {
            "mean": [c.estimate for c in cis], "se": [c.se for c in cis],
            "ci_low": [c.low for c in cis], "ci_high": [c.high for c in cis],
            "method": [c.method for c in cis], "note": [c.note for c in cis],
        }
    n_measured = np.bincount(codes, weights=measured, minlength=n_groups).astype(int)
    # NA: the key is absent from a trial's whole evaluation; such trials carry no value
    n_na = np.bincount(codes, weights=na, minlength=n_groups).astype(int)
    n_left = np.bincount(codes, weights=left_out_mask, minlength=n_groups).astype(int)
    group_notes = list(stats_cols["note"])

    def add(i: int, text: str) -> None:
        group_notes[i] = f"{group_notes[i]}; {text}" if group_notes[i] else text

    for i in np.flatnonzero(n_na).tolist():
        if not n_measured[i]:
            group_notes[i] = f"{column!r} is missing (NA): no trial here has that reward key"
        else:
            add(i, f"{n_na[i]} trial(s) without {column!r} (missing, NA) left out")
    for i in np.flatnonzero(n_left).tolist():
        add(i, f"{n_left[i]} trial(s) without a valid reward left out (policy {policy})")
    stats_cols["note"] = group_notes
    if units is not None:
        pairs = pd.DataFrame({"g": codes[measured], "t": units[measured]}).drop_duplicates()
        n_tasks = np.bincount(pairs["g"].to_numpy(), minlength=n_groups)
    else:
        n_tasks = n_measured
    out = pd.DataFrame({c: [label[i] for label in uniques] for i, c in enumerate(by_cols)})
    out["n"] = n_measured
    out["n_tasks"] = n_tasks
    for stat_name, stat_values in stats_cols.items():
        out[stat_name] = stat_values
    finished_mask = ~running_mask
    finished = df_all[finished_mask]
    fin_codes = codes[finished_mask]

    def group_mean(col: str) -> Any:
        if col not in df_all.columns:
            return np.full(n_groups, np.nan)
        values = pd.to_numeric(finished[col]).astype("float64")
        return values.groupby(fin_codes).mean().reindex(range(n_groups)).to_numpy()

    out["n_errors"] = (
        np.bincount(fin_codes, weights=finished["exception_type"].notna().to_numpy(),
                    minlength=n_groups).astype(int)
        if "exception_type" in df_all.columns else 0
    )
    out["n_running"] = np.bincount(codes, weights=running_mask, minlength=n_groups).astype(int)
    out["mean_cost_usd"] = group_mean("cost_usd")
    out["mean_latency_ms"] = group_mean("total_ms")
    return _like(original, out)


def _like(original: Any, out: Any) -> Any:
    """``out`` (pandas) in the backend of ``original``."""
    module = type(original).__module__
    if module.startswith("polars"):
        import polars as pl

        return pl.DataFrame({c: out[c].tolist() for c in out.columns})
    return out
