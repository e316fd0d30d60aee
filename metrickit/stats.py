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
* :func:`compare_runs`: two agents (or models, ...) of a trial table, task by task.
* :func:`breakdown`: n, mean ± CI, errors, cost and latency per group.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit.errors import MetrickitError


class _LazyScipyStats:
    """``scipy.stats`` imported on first use: it costs ~1.5 s, and ``import metrickit``
    should not pay that for users who never ask for an interval."""

    def __getattr__(self, name: str) -> Any:
        from scipy import stats

        return getattr(stats, name)


_sps = _LazyScipyStats()

__all__ = [
    "Interval",
    "RunComparison",
    "StatsError",
    "bootstrap_ci",
    "breakdown",
    "compare_runs",
    "mcnemar_exact",
    "mean_ci",
    "paired_difference",
]

MeanMethod = Literal["analytic", "cluster", "bootstrap", "bca", "wilson"]
BootMethod = Literal["percentile", "bca"]
FloatArray = npt.NDArray[np.float64]

# Cap on index-array cells generated at once (about 400 MB of int64).
_MAX_CELLS = 50_000_000


class StatsError(MetrickitError, ValueError):
    """Input a statistic cannot be computed from (empty, non-binary for Wilson, ...)."""


@dataclass(frozen=True)
class Interval:
    """An estimate with its uncertainty.

    Attributes
    ----------
    estimate
        The point estimate (for a mean: the sample mean).
    low, high
        The confidence interval's bounds.
    se
        Standard error of the estimate (for bootstrap methods: the standard deviation of
        the bootstrap distribution). NaN where undefined (a single value).
    n
        Number of observations used.
    method
        How the interval was computed (``"analytic"``, ``"cluster"``, ``"bootstrap"``,
        ``"bca"``, ``"wilson"``).
    confidence
        Confidence level, e.g. 0.95.
    """

    estimate: float
    low: float
    high: float
    se: float
    n: int
    method: str
    confidence: float

    def __str__(self) -> str:
        pct = f"{self.confidence * 100:g}%"
        return (
            f"{self.estimate:.4f} [{self.low:.4f}, {self.high:.4f}] "
            f"({pct} {self.method}, se {self.se:.4f}, n={self.n})"
        )

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


def mean_ci(
    values: Any,
    *,
    method: MeanMethod | str = "analytic",
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
        ``"analytic"``: sample standard error ``s / sqrt(n)`` and Student's t with n-1
        degrees of freedom (``scipy.stats.sem`` and ``scipy.stats.t``).
        ``"cluster"``: cluster-robust standard error with ``clusters`` as groups (use the
        task name when a task has several attempts: attempts of one task are not
        independent); ``sqrt(G/(G-1) * sum_g (sum_{i in g} (x_i - mean))**2) / n`` and t with
        G-1 degrees of freedom, as statsmodels' OLS ``cov_type="cluster"`` on an
        intercept-only model.
        ``"bootstrap"`` (percentile) and ``"bca"`` (bias-corrected and accelerated): see
        :func:`bootstrap_ci`.
        ``"wilson"``: Wilson score interval for 0/1 values (se is ``sqrt(p(1-p)/n)``).
    confidence
        Confidence level in (0, 1).
    clusters
        Cluster labels, one per value (only for ``method="cluster"``).
    n_resamples, seed
        For the bootstrap methods.

    Returns
    -------
    Interval

    Raises
    ------
    StatsError
        Empty or non-finite values, non-0/1 values for Wilson, missing or mismatched
        clusters, fewer than two clusters, an unknown method.

    Examples
    --------
    >>> from metrickit.stats import mean_ci
    >>> ci = mean_ci([1, 0, 1, 1], method="wilson")
    >>> round(ci.estimate, 2), round(ci.low, 3), round(ci.high, 3)
    (0.75, 0.301, 0.954)
    """
    _check_confidence(confidence)
    x = _as_values(values)
    n = x.size
    estimate = float(x.mean())
    if method == "analytic":
        se = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        return _t_interval(estimate, se, n - 1, n, confidence, "analytic")
    if method == "cluster":
        if clusters is None:
            raise StatsError("method='cluster' needs clusters= (one label per value, e.g. task)")
        labels = np.asarray(clusters, dtype=object)
        if labels.shape != (n,):
            raise StatsError(
                f"clusters has {labels.size} labels for {n} values; expected one label per value"
            )
        import pandas as pd

        codes, uniques = pd.factorize(pd.Series(labels), use_na_sentinel=False)
        g = len(uniques)
        if g < 2:
            raise StatsError(
                f"method='cluster' needs at least 2 clusters; got {g}. Use 'analytic' instead"
            )
        sums = np.bincount(codes, weights=x - estimate, minlength=g)
        se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n
        return _t_interval(estimate, se, g - 1, n, confidence, "cluster")
    if method in ("bootstrap", "bca"):
        return bootstrap_ci(
            x,
            np.mean,
            confidence=confidence,
            n_resamples=n_resamples,
            method="bca" if method == "bca" else "percentile",
            seed=seed,
        )
    if method == "wilson":
        if not np.all((x == 0) | (x == 1)):
            bad = int(np.argmax((x != 0) & (x != 1)))
            raise StatsError(
                f"method='wilson' needs 0/1 values; values[{bad}] is {float(x[bad])!r}. Use "
                "'analytic' or 'bootstrap' for non-binary rewards"
            )
        z = float(_sps.norm.ppf(0.5 + confidence / 2))
        p = estimate
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
        se = math.sqrt(p * (1 - p) / n)
        return Interval(estimate, centre - half, centre + half, se, n, "wilson", confidence)
    raise StatsError(
        f"method={method!r}; expected 'analytic', 'cluster', 'bootstrap', 'bca' or 'wilson'"
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
    >>> from metrickit.stats import bootstrap_ci
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
    method: Literal["bootstrap", "bca", "analytic"] | str = "bootstrap",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean of ``a - b`` over paired items, with a confidence interval.

    Parameters
    ----------
    a, b
        Values of the two runs, aligned: ``a[i]`` and ``b[i]`` belong to the same item.
    method
        ``"bootstrap"`` (percentile; items are resampled, pairs stay together), ``"bca"``,
        or ``"analytic"`` (paired t interval, as ``scipy.stats.ttest_rel``).

    Returns
    -------
    Interval
        The estimate is ``mean(a) - mean(b)``; positive means ``a`` is higher.

    Examples
    --------
    >>> from metrickit.stats import paired_difference
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
    >>> from metrickit.stats import mcnemar_exact
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


def _finished(df: Any) -> tuple[Any, int]:
    """Rows that are not still running, and how many were."""
    if "_status" not in df.columns:
        return df, 0
    running = (df["_status"].astype(str) == "running").to_numpy()
    if "_status" in df.columns and (df["_status"].astype(str) == "invalid").any():
        raise StatsError(
            "the table has invalid rows (from errors='report'); drop them explicitly "
            "(trials[trials['_status'] != 'invalid']) before computing statistics"
        )
    return df[~running], int(running.sum())


def _value_column(df: Any, value: str | None) -> str:
    from metrickit.rewards import reward_keys

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
    """Paired comparison of two runs over the tasks both ran.

    Attributes
    ----------
    a, b
        The two labels compared (values of the ``by`` column).
    value
        The reward column compared.
    bootstrap, analytic
        Mean over paired tasks of (mean of ``a`` on the task − mean of ``b``), with a
        paired bootstrap and a paired t interval. Positive: ``a`` scores higher.
    mcnemar
        ``(statistic, pvalue)`` of McNemar's exact test on trials paired by task and
        attempt, when every value is 0 or 1; else None (see ``notes``).
    wins, losses, ties
        Tasks where ``a``'s mean is higher, lower, equal.
    tasks
        pandas DataFrame, one row per paired task: ``n_a``, ``n_b``, ``mean_a``,
        ``mean_b``, ``difference``, ``winner``.
    only_a, only_b
        Tasks that only one run has (not in the comparison).
    notes
        Everything left out or not computed, and why.
    """

    a: Any
    b: Any
    value: str
    bootstrap: Interval
    analytic: Interval
    mcnemar: tuple[float, float] | None
    wins: int
    losses: int
    ties: int
    tasks: Any = field(repr=False)
    only_a: list[Any] = field(default_factory=list)
    only_b: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"{self.a} vs {self.b} on {len(self.tasks)} paired task(s), value {self.value!r}",
            f"  difference (a - b): {self.bootstrap}",
            f"  analytic:           {self.analytic}",
            f"  tasks won / lost / tied by {self.a}: {self.wins} / {self.losses} / {self.ties}",
        ]
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


def compare_runs(
    trials: Any,
    a: Any,
    b: Any,
    *,
    by: str = "agent",
    task: str = "task_name",
    value: str | None = None,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> RunComparison:
    """Compare two runs (agents, models, ...) of a trial table, paired by task.

    Parameters
    ----------
    trials
        A trial table from :func:`metrickit.read_harbor_job` (pandas or polars), or any
        frame with the ``by``, ``task`` and value columns.
    a, b
        The two values of ``by`` to compare.
    by
        Column that tells the runs apart (``"agent"``, ``"model"``, ``"eval"``, ``"job"``).
    task
        Column that pairs them.
    value
        Reward column; default the table's only reward key. Trials without a reward count
        as 0 (Harbor 0.25's rule); running trials are left out and counted in ``notes``.

    Returns
    -------
    RunComparison

    Raises
    ------
    StatsError
        ``a`` or ``b`` absent, no task in common, no value column.
    """
    df, n_running = _finished(_pandas(trials))
    for col in (by, task):
        if col not in df.columns:
            raise StatsError(f"{col!r} is not a column; columns are {list(df.columns)}")
    labels = df[by]
    present = list(dict.fromkeys(labels.tolist()))
    for name, label in (("a", a), ("b", b)):
        if label not in present:
            raise StatsError(f"{name}={label!r} is not a value of {by!r}; values are {present}")
    column = _value_column(df, value)
    da = df[labels == a]
    db = df[labels == b]
    mean_a = da.groupby(task, sort=False)[column].agg(["size", "mean"])
    mean_b = db.groupby(task, sort=False)[column].agg(["size", "mean"])
    common = [t for t in mean_a.index if t in mean_b.index]
    only_a = [t for t in mean_a.index if t not in mean_b.index]
    only_b = [t for t in mean_b.index if t not in mean_a.index]
    if not common:
        raise StatsError(f"{a!r} and {b!r} have no {task!r} in common; nothing to pair")
    import pandas as pd

    ma = mean_a.loc[common, "mean"].to_numpy(dtype=np.float64)
    mb = mean_b.loc[common, "mean"].to_numpy(dtype=np.float64)
    diff = ma - mb
    winner = np.where(diff > 0, str(a), np.where(diff < 0, str(b), "tie"))
    table = pd.DataFrame(
        {
            task: common,
            "n_a": mean_a.loc[common, "size"].to_numpy(),
            "n_b": mean_b.loc[common, "size"].to_numpy(),
            "mean_a": ma,
            "mean_b": mb,
            "difference": diff,
            "winner": winner,
        }
    )
    notes: list[str] = []
    if n_running:
        notes.append(f"{n_running} running trial(s) left out (no result yet)")
    if only_a or only_b:
        notes.append(
            f"{len(only_a) + len(only_b)} task(s) ran in only one of the two runs and are "
            "not compared (only_a, only_b)"
        )
    if len(common) < 2:
        notes.append("one paired task only: no interval")
    boot = paired_difference(
        ma, mb, confidence=confidence, method="bootstrap", n_resamples=n_resamples, seed=seed
    )
    analytic = paired_difference(ma, mb, confidence=confidence, method="analytic")
    mcnemar = _mcnemar_by_attempt(da, db, column, task, common, notes)
    return RunComparison(
        a=a,
        b=b,
        value=column,
        bootstrap=boot,
        analytic=analytic,
        mcnemar=mcnemar,
        wins=int(np.sum(diff > 0)),
        losses=int(np.sum(diff < 0)),
        ties=int(np.sum(diff == 0)),
        tasks=table,
        only_a=only_a,
        only_b=only_b,
        notes=notes,
    )


def _mcnemar_by_attempt(
    da: Any, db: Any, column: str, task: str, common: list[Any], notes: list[str]
) -> tuple[float, float] | None:
    values = np.concatenate([da[column].to_numpy(float), db[column].to_numpy(float)])
    if not np.all((values == 0) | (values == 1)):
        notes.append("McNemar's test not computed: the values are not all 0/1")
        return None
    key = "attempt" if "attempt" in da.columns else None
    if key is None:
        da = da.assign(attempt=da.groupby(task, sort=False).cumcount() + 1)
        db = db.assign(attempt=db.groupby(task, sort=False).cumcount() + 1)
    left = da[da[task].isin(common)][[task, "attempt", column]]
    right = db[db[task].isin(common)][[task, "attempt", column]]
    merged = left.merge(right, on=[task, "attempt"], suffixes=("_a", "_b"))
    unmatched = len(left) + len(right) - 2 * len(merged)
    if unmatched:
        notes.append(
            f"McNemar pairs trials by task and attempt; {unmatched} trial(s) of the paired "
            "tasks have no counterpart attempt and are not in the test"
        )
    return mcnemar_exact(merged[column + "_a"].to_numpy(), merged[column + "_b"].to_numpy())


def breakdown(
    trials: Any,
    by: str | Sequence[str] = ("eval",),
    *,
    value: str | None = None,
    method: MeanMethod | str = "analytic",
    confidence: float = 0.95,
    cluster: str | None = "task_name",
    seed: int = 0,
) -> Any:
    """One row per group: n, mean ± CI, errors, mean cost and mean latency.

    Parameters
    ----------
    trials
        A trial table from :func:`metrickit.read_harbor_job` (or any frame with the
        ``by`` and value columns).
    by
        Column(s) to group by, e.g. ``["agent", "model"]`` or ``"task_name"``.
    value
        Reward column; default the table's only reward key.
    method
        Interval method of :func:`mean_ci`. With ``"cluster"`` the ``cluster`` column
        (default ``task_name``) gives the clusters; a group with fewer than 2 clusters
        falls back to ``"analytic"`` (the ``method`` column says which was used).
    confidence, seed
        As in :func:`mean_ci`.

    Returns
    -------
    DataFrame (same backend as ``trials``)
        Columns ``*by, n, mean, se, ci_low, ci_high, method, n_errors, n_running,
        mean_cost_usd, mean_latency_ms``. Running trials are not in ``n`` or the mean;
        ``n_running`` counts them. Errors are trials with an ``exception_type``; latency
        is ``total_ms`` (the whole trial).
    """
    import pandas as pd

    original = trials
    df_all = _pandas(trials)
    by_cols = [by] if isinstance(by, str) else list(by)
    for col in by_cols:
        if col not in df_all.columns:
            raise StatsError(f"by={col!r} is not a column; columns are {list(df_all.columns)}")
    running_mask = (
        (df_all["_status"].astype(str) == "running").to_numpy()
        if "_status" in df_all.columns
        else np.zeros(len(df_all), dtype=bool)
    )
    df, _ = _finished(df_all)
    column = _value_column(df, value)
    rows: list[dict[str, Any]] = []
    keys_all = pd.Series(
        list(zip(*(df_all[c].tolist() for c in by_cols), strict=True)), dtype=object
    )
    codes, uniques = pd.factorize(keys_all, use_na_sentinel=False)
    for i, label in enumerate(uniques):
        in_group = codes == i
        done = in_group & ~running_mask
        sub = df_all[done]
        row: dict[str, Any] = dict(zip(by_cols, label, strict=True))
        row["n"] = int(done.sum())
        used = method
        if row["n"]:
            vals = sub[column].to_numpy(dtype=np.float64)
            clusters = None
            if method == "cluster":
                clusters = sub[cluster].to_numpy() if cluster in sub.columns else None
                if clusters is None or len(set(clusters.tolist())) < 2:
                    used = "analytic"
            ci = mean_ci(vals, method=used, confidence=confidence, clusters=clusters, seed=seed)
            row.update(mean=ci.estimate, se=ci.se, ci_low=ci.low, ci_high=ci.high)
        else:
            row.update(mean=math.nan, se=math.nan, ci_low=math.nan, ci_high=math.nan)
        row["method"] = used
        row["n_errors"] = (
            int(sub["exception_type"].notna().sum()) if "exception_type" in sub.columns else 0
        )
        row["n_running"] = int((in_group & running_mask).sum())
        row["mean_cost_usd"] = (
            float(pd.to_numeric(sub["cost_usd"]).mean()) if "cost_usd" in sub.columns else math.nan
        )
        row["mean_latency_ms"] = (
            float(pd.to_numeric(sub["total_ms"]).mean()) if "total_ms" in sub.columns else math.nan
        )
        rows.append(row)
    columns = [
        *by_cols,
        "n",
        "mean",
        "se",
        "ci_low",
        "ci_high",
        "method",
        "n_errors",
        "n_running",
        "mean_cost_usd",
        "mean_latency_ms",
    ]
    out = pd.DataFrame(rows, columns=columns)
    return _like(original, out)


def _like(original: Any, out: Any) -> Any:
    """``out`` (pandas) in the backend of ``original``."""
    module = type(original).__module__
    if module.startswith("polars"):
        import polars as pl

        return pl.DataFrame({c: out[c].tolist() for c in out.columns})
    return out
