"""Agreement between raters (judges, humans) on the same cases, with intervals over cases.

* :func:`agreement`: Cohen's kappa for two raters (and for every pair of more), Fleiss'
  kappa when every case has the same number of ratings, Krippendorff's alpha for any
  number of raters with missing ratings, and a confusion table.
* :func:`fleiss_kappa`: Fleiss' kappa alone (equal to
  ``statsmodels.stats.inter_rater.fleiss_kappa``).
* :func:`alpha_resampled`: alpha for many resamples of cases at once.

Cases are the sampling unit: every interval resamples cases (rows), keeping a case's ratings
together. The default interval is the leave-one-case-out jackknife on the Fisher-z
(``atanh``) scale; where the coverage benchmark (``benchmarks/coverage_judges.py``) shows
that no interval holds its level (a rare category, skewed ratings, few cases), the interval
carries a note saying so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit._core.display import result_html, result_repr
from metrickit.compute.intervals import FEW, SKEWED, Interval, mean_ci
from metrickit.errors import StatsError

__all__ = [
    "Agreement",
    "agreement",
    "alpha_resampled",
    "fleiss_kappa",
    "verdict_flips",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
#: Ratings with more distinct values than this are not categorical: no kappa, no confusion.
MAX_CATEGORIES = 20
FloatArray = npt.NDArray[np.float64]
_CELLS = 4_000_000
_MAX_UNIT_VALUES = 50_000_000  # cases x distinct values for the non-interval levels

def _ordinal_distances(counts: FloatArray) -> FloatArray:
    """Ordinal squared distances, one ``(V, V)`` matrix per row of pooled value ``counts``:
    the counts from one value to the other, less half of the two ends, squared."""
    v = counts.shape[1]
    cum = np.cumsum(counts, axis=1)
    before = cum - counts
    lo = np.minimum(np.arange(v)[:, None], np.arange(v)[None, :])
    hi = np.maximum(np.arange(v)[:, None], np.arange(v)[None, :])
    between = cum[:, hi] - before[:, lo]
    return (between - (counts[:, :, None] + counts[:, None, :]) / 2) ** 2


def _ratio_distance(x: FloatArray, y: FloatArray) -> FloatArray:
    total = x + y
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total != 0, (x - y) / np.where(total != 0, total, 1.0), 0.0) ** 2


def _pair_sums(ratings: FloatArray, level: str) -> FloatArray:
    """Per unit, the sum of squared distances over ordered pairs of its ratings."""
    out = np.zeros(ratings.shape[0])
    for i, j in combinations(range(ratings.shape[1]), 2):
        x, y = ratings[:, i], ratings[:, j]
        both = np.isfinite(x) & np.isfinite(y)
        d = (x != y) if level == "nominal" else _ratio_distance(x, y)
        out += 2 * np.where(both, d, 0.0)
    return out


def _pairable(x: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The ratings of units with two or more (others NaN: they form no pair), each unit's
    pair weight ``1 / (m - 1)`` (0 if unpairable) and its count of pairable ratings."""
    present = np.isfinite(x)
    m = present.sum(axis=1).astype(np.float64)
    pairable = m >= 2
    x = np.where(pairable[:, None] & present, x, np.nan)
    scale = np.where(pairable, 1.0 / np.maximum(m - 1, 1), 0.0)
    return x, scale, np.where(pairable, m, 0.0)


def _value_counts(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The distinct rated values and, per unit, how often each occurs ``(units, V)``."""
    values, codes = np.unique(x[np.isfinite(x)], return_inverse=True)
    counts = np.zeros((x.shape[0], max(values.size, 1)))
    np.add.at(counts, (np.nonzero(np.isfinite(x))[0], codes), 1.0)
    return values, counts


def _alpha(observed: FloatArray, expected: FloatArray, n: FloatArray) -> FloatArray:
    """``1 - (n - 1) observed / expected``; NaN where there is no disagreement to expect."""
    expected = expected / np.maximum(n - 1, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = 1.0 - observed / expected
    return np.where((expected > 1e-12 * np.maximum(n, 1) ** 2) & (n >= 2), out, np.nan)


def alpha_resampled(ratings: Any, level: str = "nominal", weights: Any = None) -> FloatArray:
    """Krippendorff's alpha of a units x raters matrix, for many resamples of units at once.

    Parameters
    ----------
    ratings
        One row per unit (case), one column per rater, NaN for a missing rating. For
        ``"nominal"`` and ``"ordinal"`` the numbers are category codes (their order
        matters for ordinal only).
    level
        ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.
    weights
        Shape ``(B, units)``: how often each unit occurs in each of ``B`` resamples; None
        means the data once.

    Returns
    -------
    ndarray
        One alpha per resample; NaN where a resample has no disagreement to expect (one
        value only). Equals ``krippendorff.alpha(reliability_data=ratings.T,
        level_of_measurement=level)`` on each resample.

    Notes
    -----
    A unit with ``m >= 2`` ratings adds each ordered pair of its ratings with weight
    ``1 / (m - 1)``; alpha is ``1 - (n - 1) sum_units(pairs d) / sum(n_c n_k d)`` over the
    ``n`` pairable ratings, ``d`` the squared distance. The interval level needs only each
    unit's count, sum and sum of squares (no values x values matrix), so continuous ratings
    of many cases stay cheap; nominal, ordinal and ratio use the distinct values.
    """
    x = np.asarray(ratings, dtype=np.float64)
    w = np.ones((1, x.shape[0])) if weights is None else np.asarray(weights, dtype=np.float64)
    x, scale, mp = _pairable(x)
    n = w @ mp
    if level == "interval":
        s1 = np.nansum(x, axis=1)
        s2 = np.nansum(x * x, axis=1)
        observed = w @ (2 * (mp * s2 - s1 * s1) * scale)
        big_s1, big_s2 = w @ s1, w @ s2
        expected = 2 * (n * big_s2 - big_s1 * big_s1)
    else:
        values, counts = _value_counts(x)
        v = values.size
        n_v = w @ counts  # (B, V)
        if level == "nominal":
            observed = w @ ((mp * mp - np.sum(counts * counts, axis=1)) * scale)
            expected = n * n - np.sum(n_v * n_v, axis=1)
        elif level == "ratio":
            observed = w @ (_pair_sums(x, level) * scale)
            expected = np.zeros(w.shape[0])
            step = max(1, _CELLS // max(v, 1))
            for start in range(0, v, step):
                block = _ratio_distance(values[start:start + step, None], values[None, :])
                expected += np.einsum("bc,bc->b", n_v[:, start:start + step], n_v @ block.T)
        else:
            observed = np.empty(w.shape[0])
            expected = np.empty(w.shape[0])
            step = max(1, _CELLS // max(v * v, 1))
            for start in range(0, w.shape[0], step):
                part = slice(start, start + step)
                d = _ordinal_distances(n_v[part])
                cross = np.einsum("bu,uc,uk->bck", w[part] * scale[None, :], counts, counts)
                observed[part] = np.einsum("bck,bck->b", cross, d)
                expected[part] = np.einsum("bc,bk,bck->b", n_v[part], n_v[part], d)
    return _alpha(observed, expected, n)


def _kappa_from_codes(
    a: npt.NDArray[np.intp], b: npt.NDArray[np.intp], k: int, weights: str | None,
    index: npt.NDArray[np.intp] | None = None,
) -> FloatArray:
    """Cohen's kappa of code pairs, once or for every row of ``index`` (resampled pairs)."""
    idx = np.arange(a.size)[None, :] if index is None else index
    cells = (a[idx] * k + b[idx]).astype(np.int64)
    rows = cells.shape[0]
    offset = (np.arange(rows, dtype=np.int64) * k * k)[:, None]
    counts = np.bincount((cells + offset).ravel(), minlength=rows * k * k).reshape(rows, k, k)
    return _kappa_of_counts(counts.astype(np.float64), weights)


def _kappa_of_counts(counts: FloatArray, weights: str | None) -> FloatArray:
    """Cohen's kappa of ``(rows, K, K)`` confusion counts, one per row."""
    k = counts.shape[1]
    total = counts.sum(axis=(1, 2))
    with np.errstate(invalid="ignore", divide="ignore"):  # no pairs left: NaN
        expected = (counts.sum(axis=2)[:, :, None] * counts.sum(axis=1)[:, None, :]
                    / total[:, None, None])
    pos = np.arange(k)
    if weights is None:
        wm = 1.0 - np.eye(k)
    elif weights == "linear":
        wm = np.abs(pos[:, None] - pos[None, :]).astype(float)
    else:
        wm = ((pos[:, None] - pos[None, :]) ** 2).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (counts * wm).sum(axis=(1, 2)) / (expected * wm).sum(axis=(1, 2))


def _resamples(
    rng: np.random.Generator, n: int, n_resamples: int
) -> list[npt.NDArray[np.int64]]:
    """Resampled row indices, ``(rows, n)`` blocks totalling ``n_resamples`` rows, in
    blocks of at most about 4 million cells."""
    rows = max(1, _CELLS // max(n, 1))
    return [rng.integers(0, n, (min(rows, n_resamples - start), n))
            for start in range(0, n_resamples, rows)]


def _multiplicity(index: npt.NDArray[np.int64], n: int) -> FloatArray:
    """How often each of ``n`` units occurs in each resample (row of ``index``)."""
    rows = index.shape[0]
    flat = (index + (np.arange(rows, dtype=np.int64) * n)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)


def _kappa_jackknife(
    a: npt.NDArray[np.intp], b: npt.NDArray[np.intp], k: int, weights: str | None
) -> FloatArray:
    """Kappa without each pair in turn: one value per cell of the confusion table, looked
    up for every pair (a pair's leave-one-out kappa depends only on its cell)."""
    cells = a * k + b
    counts = np.bincount(cells, minlength=k * k).astype(np.float64)
    less = np.broadcast_to(counts, (k * k, k * k)) - np.eye(k * k)
    by_cell = _kappa_of_counts(less.reshape(k * k, k, k), weights)
    return by_cell[cells]


def _ordinal_jackknife(x: FloatArray) -> FloatArray:
    """Ordinal alpha without each case in turn, in time linear in the cases.

    Leaving case ``i`` out takes its own coincidences ``scale_i * c_i c_i^T`` from the
    pooled coincidence matrix and its value counts ``c_i`` from the pooled counts; the
    ordinal distances depend on those counts, so they are recomputed per case, which costs
    one values x values matrix per case (not one pass over all cases per case). Equal to
    :func:`alpha_resampled` with the case weighted 0 (tests/scoring/test_judges.py).
    """
    n_cases = x.shape[0]
    x, scale, mp = _pairable(x)
    _, counts = _value_counts(x)
    v = counts.shape[1]
    total = counts.sum(axis=0)
    pooled = np.einsum("u,uc,uk->ck", scale, counts, counts)
    n = mp.sum() - mp
    observed = np.empty(n_cases)
    expected = np.empty(n_cases)
    step = max(1, _CELLS // (v * v))
    for start in range(0, n_cases, step):
        part = slice(start, start + step)
        own = counts[part]
        rest = total[None, :] - own
        d = _ordinal_distances(rest)
        observed[part] = (np.einsum("ck,bck->b", pooled, d)
                          - scale[part] * np.einsum("bc,bck,bk->b", own, d, own))
        expected[part] = np.einsum("bc,bk,bck->b", rest, rest, d)
    return _alpha(observed, expected, n)


def _alpha_jackknife(ratings: FloatArray, level: str) -> FloatArray:
    """Alpha without each case in turn. Interval, nominal and ratio alpha are sums over
    cases, so each case's own terms are subtracted from the totals; ordinal distances
    depend on the pooled counts (:func:`_ordinal_jackknife`)."""
    if level == "ordinal":
        return _ordinal_jackknife(np.asarray(ratings, dtype=np.float64))
    x = np.asarray(ratings, dtype=np.float64)
    x, scale, mp = _pairable(x)
    n = mp.sum() - mp
    if level == "interval":
        s1, s2 = np.nansum(x, axis=1), np.nansum(x * x, axis=1)
        per_case = 2 * (mp * s2 - s1 * s1) * scale
        rest_s1, rest_s2 = s1.sum() - s1, s2.sum() - s2
        expected = 2 * (n * rest_s2 - rest_s1 * rest_s1)
    else:
        values, counts = _value_counts(x)
        n_v = counts.sum(axis=0)
        if level == "nominal":
            per_case = (mp * mp - np.sum(counts * counts, axis=1)) * scale
            squares = n_v @ n_v - 2 * counts @ n_v + np.sum(counts * counts, axis=1)
            expected = n * n - squares
        else:
            own = _pair_sums(x, level)
            per_case = own * scale
            dn = np.zeros(values.size)
            step = max(1, _CELLS // max(values.size, 1))
            for start in range(0, values.size, step):
                block = _ratio_distance(values[start:start + step, None], values[None, :])
                dn[start:start + step] = block @ n_v
            expected = n_v @ dn - 2 * counts @ dn + own
    observed = per_case.sum() - per_case
    return _alpha(observed, expected, n)


def _interval(
    estimate: float, draws: FloatArray, n: int, confidence: float, what: str, method: str,
    rated: int, cautions: Sequence[str] = (),
) -> tuple[Interval, str]:
    """The interval of ``estimate`` from resampled values, and its note.

    ``"jackknife"``: the leave-one-case-out standard error ``se``, carried to the Fisher-z
    scale (``atanh``, where an agreement statistic's sampling distribution is near
    symmetric; on the raw scale the t interval runs past 1 near perfect agreement and
    undercovers) by the delta method, ``se / (1 - estimate**2)``, a t interval with
    ``m - 1`` degrees of freedom there, mapped back with ``tanh``. ``"bootstrap"``: the
    percentiles of the bootstrap values. Bounds stay in [-1, 1] (never past the
    estimate). ``rated``: the cases with two ratings; ``cautions``: why the interval may
    fall short (few cases, a rare category, skewed ratings), added to the note."""
    finite = draws[np.isfinite(draws)]
    notes: list[str] = []
    if rated < 2:
        notes.append(f"only {rated} case has two ratings: no interval")
    elif not math.isfinite(estimate):
        notes.append(f"no {what}: the ratings take one value only")
    elif draws.size - finite.size:
        notes.append(f"{draws.size - finite.size} of {draws.size} resamples had no {what} "
                     "(one value only) and were left out")
    if rated < 2 or not math.isfinite(estimate) or finite.size < 2:
        note = "; ".join(notes)
        return Interval(estimate, math.nan, math.nan, math.nan, n, "none", confidence,
                        note=note), note
    if method == "jackknife":
        m = finite.size
        se = math.sqrt((m - 1) / m * float(np.sum((finite - finite.mean()) ** 2)))
        # the delta method carries se to the z scale; the atanh of each left-out value
        # would not do: one of them is often exactly 1 (the only disagreement left out)
        e = min(max(estimate, -1 + 1e-12), 1 - 1e-12)
        se_z = se / (1 - e * e)
        crit = float(_t_quantile(0.5 + confidence / 2, m - 1))
        centre = math.atanh(e)
        low, high = math.tanh(centre - crit * se_z), math.tanh(centre + crit * se_z)
        label = "jackknife-z"
    else:
        low, high = (float(q) for q in np.quantile(finite, [(1 - confidence) / 2,
                                                           (1 + confidence) / 2]))
        se = float(finite.std(ddof=1))
        label = method
    low, high = max(min(low, estimate), min(-1.0, estimate)), min(max(high, estimate),
                                                                  max(1.0, estimate))
    if high - low <= 1e-12:
        notes.append(f"the interval has no width: every resample gives {what} "
                     f"{estimate:.3g}; the ratings vary too little to measure its uncertainty")
    elif cautions:
        notes.append("; ".join(cautions) + ": the interval may be too narrow")
    note = "; ".join(notes)
    return Interval(estimate, low, high, se, n, label, confidence, note=note), note


#: A category given fewer times than this (by one rater, for kappa; by all raters together
#: over two, for alpha and Fleiss' kappa) is rare: the interval undercovers there (Cohen's
#: kappa of a 10 % category: 0.56 at 10 cases, 0.81 at 20 in benchmarks/coverage_judges.py).
RARE = 5


def _few_cases(rated: int) -> list[str]:
    return [f"few cases ({rated})"] if rated < FEW else []


def _rare_pooled(codes: npt.NDArray[np.intp], cats: Sequence[Any]) -> list[str]:
    """The rare-category caution of alpha and Fleiss' kappa: the pooled ratings of the
    cases rated twice give some category fewer than ``2 * RARE`` times."""
    pairable = (codes >= 0).sum(axis=1) >= 2
    used = codes[pairable]
    counts = np.bincount(used[used >= 0], minlength=len(cats))
    present = np.nonzero(counts)[0]
    if present.size < 2:
        return []
    rare = present[np.argmin(counts[present])]
    if counts[rare] >= 2 * RARE:
        return []
    return [f"rare category ({cats[rare]!r}: {counts[rare]} of {int(counts.sum())} ratings)"]


def _rare_marginal(a: npt.NDArray[np.intp], b: npt.NDArray[np.intp], names: tuple[str, str],
                   labels: Sequence[Any]) -> list[str]:
    """The rare-category caution of Cohen's kappa: one rater gives a category the pair uses
    fewer than ``RARE`` times."""
    k = len(labels)
    worst: tuple[int, str, Any] | None = None
    for codes, name in zip((a, b), names, strict=True):
        counts = np.bincount(codes, minlength=k)
        c = int(np.argmin(counts))
        if counts[c] < RARE and (worst is None or counts[c] < worst[0]):
            worst = (int(counts[c]), name, labels[c])
    if worst is None:
        return []
    return [f"rare category ({worst[2]!r}: {worst[0]} of {a.size} ratings from {worst[1]})"]


def _skewed(ratings: FloatArray, level: str) -> list[str]:
    """The skew caution of interval alpha: its distances are squares, so a long tail of
    ratings makes a few cases carry it (lognormal ratings: 0.86-0.91 coverage for every
    interval tried, jackknife, percentile and BCa bootstrap, at 20-100 cases)."""
    if level != "interval":
        return []
    x = ratings[np.isfinite(ratings) & (np.isfinite(ratings).sum(axis=1) >= 2)[:, None]]
    if x.size < 3 or np.ptp(x) == 0:
        return []
    d = x - x.mean()
    skew = float(np.mean(d**3) / np.mean(d**2) ** 1.5)
    if abs(skew) <= SKEWED:
        return []
    return [f"skewed ratings (skewness {skew:.1f}; ratings on a log scale, or "
            "level='ordinal', avoid it)"]


def _t_quantile(q: float, df: int) -> float:
    from metrickit._core.dist import t_ppf

    return float(t_ppf(q, df))


@dataclass(frozen=True)
class Agreement:
    """What :func:`agreement` found.

    Attributes
    ----------
    raters
        The rater columns compared.
    level
        Krippendorff's level of measurement used for alpha.
    alpha
        Krippendorff's alpha (from the ``krippendorff`` package) with its interval over
        cases (``method`` says which: ``"jackknife"`` or ``"bootstrap"``; ``n`` is the
        number of cases).
    kappa
        Cohen's kappa of the two raters with its interval (``n`` is the number of
        cases both rated); None for more than two raters (see ``pairs``) or ratings that
        are not categorical.
    pairs
        One row per pair of raters (pandas): ``rater_a``, ``rater_b``, ``n`` (cases both
        rated), ``dropped`` (cases where one or both ratings are missing), ``agreement``
        (share of identical ratings), ``kappa``, ``low``, ``high``.
    categories
        The rating values, in the order the confusion tables use.
    method
        How the intervals resample cases: ``"jackknife"`` or ``"bootstrap"``.
    n_resamples, seed
        Of the bootstrap (unused by the jackknife, which leaves out each case once).
    fleiss
        Fleiss' kappa with its interval (``n``: cases), when the ratings are categorical
        and every case has the same number of ratings (any raters; see
        :func:`fleiss_kappa`); else None, and for more than two raters a note says why.
    """

    raters: tuple[str, ...]
    level: str
    alpha: Interval
    kappa: Interval | None
    pairs: Any
    categories: tuple[Any, ...]
    n_cases: int
    n_resamples: int
    seed: int
    weights: str | None
    method: str = "jackknife"
    notes: tuple[str, ...] = ()
    _codes: Any = field(default=None, repr=False, compare=False)
    fleiss: Interval | None = None
    _fleiss_reason: str = field(default="", repr=False, compare=False)

    @property
    def confusion(self) -> Any:
        """The confusion table of the first two raters (see :meth:`confusion_table`)."""
        return self.confusion_table(self.raters[0], self.raters[1])

    def confusion_table(self, a: str, b: str) -> Any:
        """Counts of (rating of ``a``, rating of ``b``) over the cases both rated (pandas;
        rows are ``a``'s ratings, columns ``b``'s, every category shown)."""
        import pandas as pd

        if not self.categories or self._codes is None:
            raise StatsError("the ratings are not categorical (more than "
                             f"{MAX_CATEGORIES} distinct values): no confusion table")
        for name in (a, b):
            if name not in self.raters:
                raise StatsError(f"rater {name!r} is not one of {list(self.raters)}")
        codes = self._codes
        ca, cb = codes[:, self.raters.index(a)], codes[:, self.raters.index(b)]
        both = (ca >= 0) & (cb >= 0)
        k = len(self.categories)
        counts = np.bincount(ca[both] * k + cb[both], minlength=k * k).reshape(k, k)
        labels = list(self.categories)
        return pd.DataFrame(counts, index=pd.Index(labels, name=a),
                            columns=pd.Index(labels, name=b))

    def __str__(self) -> str:
        lines = [f"Agreement of {', '.join(self.raters)} on {self.n_cases} cases "
                 + (f"({self.n_resamples} bootstrap resamples over cases, seed {self.seed})"
                    if self.method == "bootstrap"
                    else f"(jackknife: {self.n_cases} leave-one-case-out resamples)"),
                 f"  Krippendorff's alpha ({self.level}): {self.alpha}"]
        if self.kappa is not None:
            kind = f"{self.weights}-weighted " if self.weights else ""
            lines.append(f"  Cohen's {kind}kappa: {self.kappa}")
        if self.fleiss is not None and len(self.raters) > 2:
            lines.append(f"  Fleiss' kappa: {self.fleiss}")
        if self.kappa is None and len(self.raters) > 2 and len(self.pairs):
            lines.append("  Cohen's kappa per pair:")
            for row in self.pairs.itertuples(index=False):
                lines.append(f"    {row.rater_a} vs {row.rater_b}: {row.kappa:.3f} "
                             f"[{row.low:.3f}, {row.high:.3f}] (n={row.n})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _display(self) -> tuple[str, Any, list[str]]:
        headline = [line for line in str(self).splitlines() if not line.startswith(
            ("  note:", "  Cohen's kappa per pair:", "    "))]
        return "\n".join(headline), self.pairs, list(self.notes)

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="Agreement")

    def __repr__(self) -> str:
        return result_repr("Agreement", *self._display())


def _numeric(values: list[Any], column: str, need: str, instead: str) -> FloatArray:
    """``values`` as floats (NaN for missing); a non-number is an error saying that ``need``
    (e.g. "level='ordinal'") needs numbers and what to do ``instead``."""
    out = np.empty(len(values), dtype=np.float64)
    for row, value in enumerate(values):
        if _is_missing(value):
            out[row] = np.nan
        elif isinstance(value, bool | np.bool_) or not isinstance(
                value, int | float | np.integer | np.floating):
            raise StatsError(
                f"column {column!r}, row {row}: {value!r} is not a number; {need} needs "
                f"numeric ratings (None/NaN for missing); {instead}")
        elif not math.isfinite(float(value)):
            raise StatsError(f"column {column!r}, row {row}: {value!r}; expected a finite "
                             "number or None/NaN for missing")
        else:
            out[row] = float(value)
    return out


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, pd.NA raise or compare unequal
    except TypeError:
        return True


def agreement(
    frame: Any,
    raters: Sequence[str],
    *,
    level: Level | str = "nominal",
    categories: Sequence[Any] | None = None,
    weights: str | None = None,
    confidence: float = 0.95,
    method: str = "jackknife",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Agreement:
    """How well raters (judges, humans) agree on the same cases.

    Parameters
    ----------
    frame
        A pandas or polars DataFrame with one row per case and one column per rater.
        Missing ratings are None or NaN. True and False are the ratings 1 and 0 (so a
        True/False rater and a 1/0 rater agree).
    raters
        Two or more column names.
    level
        Krippendorff's level of measurement for alpha: ``"nominal"`` (categorical
        verdicts, the default), ``"ordinal"`` (ordered categories: numbers, or labels
        ordered by ``categories``), ``"interval"`` or ``"ratio"`` (numbers).
    categories
        The possible ratings, in order: required for ``"ordinal"`` or ``weights`` with
        labels (text has no order metrickit could trust: alphabetical "high" < "low" <
        "mid" is wrong); otherwise it fixes the order of the confusion table (a rating
        outside it is an error).
    weights
        Cohen's kappa weights: None (unweighted), ``"linear"`` or ``"quadratic"``, as
        ``sklearn.metrics.cohen_kappa_score`` defines them (the distance of two ratings is
        the distance of their positions among the sorted ratings the pair gave, or among
        ``categories``).
    confidence
        Confidence level of the intervals.
    method
        How the intervals resample cases (rows; cases are the sampling unit, so a resample
        keeps a case's ratings together). ``"jackknife"`` (default): each case left out
        once, the standard error of those values and a t interval with n - 1 degrees of
        freedom (bounds cut to [-1, 1]); 0.932 to 0.955 coverage of a 95 % interval from
        20 cases on in ``benchmarks/coverage_judges.py``. ``"bootstrap"``: ``n_resamples``
        resamples with replacement from ``numpy.random.default_rng(seed)`` and their
        percentiles; it falls short of 0.93 for interval alpha (0.901 at 20 cases, 0.915
        at 30, 0.927 at 100 in that benchmark).
    n_resamples, seed
        Of the bootstrap.

    Returns
    -------
    Agreement
        ``alpha`` (any number of raters; missing ratings allowed), ``kappa`` (two raters,
        over the cases both rated; ``pairs`` says how many were dropped), ``pairs`` (kappa
        of every pair), ``confusion`` (categorical ratings).

    Raises
    ------
    StatsError
        A rater column is missing, fewer than two raters, an unknown level or weights, a
        non-numeric rating where numbers are needed (``"interval"``, ``"ratio"``, and
        ``"ordinal"`` or ``weights`` without ``categories``), a rating outside
        ``categories``, no case with two ratings.

    Notes
    -----
    ``notes`` (and each interval's ``note``) say when a number means less than it seems:
    every rating the same (alpha and kappa undefined), two raters with no rating value in
    common (``"Pass"`` vs ``"pass"``, ``1`` vs ``"1"``), only one case rated twice (no
    interval), an interval with no width (every resample gives the same value).

    Examples
    --------
    >>> import pandas as pd
    >>> from metrickit.scoring.judges import agreement
    >>> frame = pd.DataFrame({"judge": ["pass", "pass", "fail", "pass", "fail", "fail"],
    ...                       "human": ["pass", "fail", "fail", "pass", "fail", None]})
    >>> result = agreement(frame, ["judge", "human"])
    >>> round(result.kappa.estimate, 3), int(result.pairs["dropped"][0])
    (0.615, 1)
    >>> result.confusion.loc["pass", "fail"]
    np.int64(1)
    """
    import krippendorff
    import narwhals as nw
    import pandas as pd

    if level not in LEVELS:
        raise StatsError(f"level is {level!r}; expected one of {', '.join(map(repr, LEVELS))}")
    if weights not in (None, "linear", "quadratic"):
        raise StatsError(f"weights is {weights!r}; expected None, 'linear' or 'quadratic'")
    if not 0 < confidence < 1:
        raise StatsError(f"confidence is {confidence!r}; expected a number between 0 and 1")
    if method not in ("jackknife", "bootstrap"):
        raise StatsError(f"method is {method!r}; expected 'jackknife' or 'bootstrap'")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 2:
        raise StatsError(f"n_resamples is {n_resamples!r}; expected a whole number >= 2")
    if isinstance(raters, str):
        raise StatsError(f"raters is the string {raters!r}; expected a list of column names")
    raters = tuple(raters)
    if len(raters) < 2 or len(set(raters)) != len(raters):
        raise StatsError(f"raters is {list(raters)}; expected two or more different columns")
    try:
        nf = nw.from_native(frame, eager_only=True)
    except TypeError:
        raise StatsError(f"frame is {type(frame).__name__}; expected a pandas or polars "
                         "DataFrame with one column per rater") from None
    absent = [r for r in raters if r not in nf.columns]
    if absent:
        raise StatsError(f"no rater column(s) {absent} in the frame (columns: {nf.columns})")
    # True/False are the ratings 1/0 (True == 1 in Python): a 0/1 rater and a bool one agree
    columns = {r: [_unbool(v) for v in nf.get_column(r).to_list()] for r in raters}
    n_cases = len(nf)

    # Codes per rating (-1: missing) and the domain value of each code.
    notes: list[str] = []
    numeric = level in ("interval", "ratio") or (level == "ordinal" and categories is None)
    need, instead = f"level={level!r}", ("give categories= in order for ordinal labels, or use "
                                        "level='nominal'")
    if weights is not None and categories is None and not numeric:
        # weights measure distances between ratings: labels need an order
        numeric = True
        need, instead = f"weights={weights!r}", (
            "give categories= in order for labels (e.g. categories=['low', 'mid', 'high']), "
            "or use weights=None")
    if numeric:
        for r in raters:
            _numeric(columns[r], r, need, instead)
    cats: list[Any]
    if categories is not None:
        cats = list(categories)
        if len({_key(c) for c in cats}) != len(cats):
            raise StatsError(f"categories {cats} has repeated values")
        if level in ("interval", "ratio"):
            _numeric([_unbool(c) for c in cats], "categories", need, instead)
    else:
        seen = pd.unique(pd.Series([v for r in raters for v in columns[r]
                                    if not _is_missing(v)], dtype=object))
        try:
            cats = sorted(seen)
        except TypeError:
            cats = list(seen)
    if level == "ratio":
        # a ratio scale has a true zero: the distance ((x - y) / (x + y))**2 of values of
        # opposite sign is no distance at all (raters who disagree in sign gave alpha 1)
        for r in raters:
            for row, value in enumerate(columns[r]):
                if not _is_missing(value) and float(_unbool(value)) < 0:
                    raise StatsError(
                        f"column {r!r}, row {row}: rating {value!r} is negative; "
                        "level='ratio' needs ratings >= 0 (a scale with a true zero); use "
                        "level='interval' for ratings that can be negative"
                    )
    lookup = {_key(c): i for i, c in enumerate(cats)}
    codes = np.full((n_cases, len(raters)), -1, dtype=np.intp)
    for j, r in enumerate(raters):
        for row, value in enumerate(columns[r]):
            if _is_missing(value):
                continue
            code = lookup.get(_key(value))
            if code is None:
                raise StatsError(f"column {r!r}, row {row}: rating {value!r} is not one of the "
                                 f"categories {cats}")
            codes[row, j] = code
    # Interval and ratio distances use the values; nominal and ordinal only their order.
    domain = (np.array([float(c) for c in cats]) if level in ("interval", "ratio")
              else np.arange(len(cats), dtype=np.float64))
    k = len(cats)
    if not ((codes >= 0).sum(axis=1) >= 2).any():
        raise StatsError("no case has ratings from two raters; agreement needs cases rated "
                         "at least twice")
    if level != "interval" and n_cases * k > _MAX_UNIT_VALUES:
        raise StatsError(
            f"the ratings take {k} distinct values over {n_cases} cases: too many for "
            f"level={level!r} (it compares every value with every other); use "
            "level='interval' for continuous scores, or round them into categories")
    ratings = np.where(codes >= 0, domain[np.maximum(codes, 0)], np.nan)
    pairable = int(((codes >= 0).sum(axis=1) >= 2).sum())
    if k == 1:  # the reason first, not one note per statistic
        notes.append(f"every rating is {cats[0]!r}: alpha and kappa are undefined (no "
                     "variation); raw agreement is 100 %")

    rng = np.random.default_rng(seed)
    if k >= 2:
        if n_cases * k * k <= _CELLS * 5:
            alpha_value = float(krippendorff.alpha(
                reliability_data=ratings.T, value_domain=domain,
                level_of_measurement=level))  # type: ignore[arg-type]
        else:  # krippendorff builds a cases x values x values array: too large here
            alpha_value = float(alpha_resampled(ratings, level)[0])
        if method == "jackknife":
            draws = _alpha_jackknife(ratings, level)
        else:
            draws = np.concatenate([
                alpha_resampled(ratings, level, _multiplicity(index, n_cases))
                for index in _resamples(rng, n_cases, n_resamples)])
    else:
        alpha_value, draws = math.nan, np.full(n_cases, np.nan)
    cautions = _few_cases(pairable)
    alpha_cautions = cautions + (
        _skewed(ratings, level) if level in ("interval", "ratio")
        else _rare_pooled(codes, cats) if level == "nominal" and k <= MAX_CATEGORIES
        else [])
    alpha, note = _interval(alpha_value, draws, n_cases, confidence, "alpha", method,
                            pairable, alpha_cautions)
    if note and k > 1:
        notes.append(f"alpha: {note}")

    categorical = k <= MAX_CATEGORIES
    pair_rows = []
    kappa = None
    for (ia, a), (ib, b) in combinations(enumerate(raters), 2):
        both = (codes[:, ia] >= 0) & (codes[:, ib] >= 0)
        n_both = int(both.sum())
        pair: dict[str, Any] = {"rater_a": a, "rater_b": b, "n": n_both,
                               "dropped": n_cases - n_both}
        if not categorical or n_both == 0:
            pair.update(agreement=math.nan, kappa=math.nan, low=math.nan, high=math.nan)
            pair_rows.append(pair)
            continue
        ca, cb = codes[both, ia], codes[both, ib]
        if not np.intersect1d(ca, cb).size:
            shown = [[cats[c] for c in np.unique(x)[:5]] for x in (ca, cb)]
            notes.append(f"raters {a} and {b} have no rating value in common: {a} gives "
                         f"{shown[0]}, {b} gives {shown[1]} (on the cases both rated); check "
                         "spelling, case and type ('Pass' vs 'pass', 1 vs '1')")
        # sklearn's labels: the sorted ratings this pair gave
        used = np.unique(np.concatenate([ca, cb]))
        remap = np.full(k, -1, dtype=np.intp)
        remap[used] = np.arange(used.size)
        ca, cb = remap[ca], remap[cb]
        estimate = float(_kappa_from_codes(ca, cb, used.size, weights)[0])
        if method == "jackknife":
            draws = _kappa_jackknife(ca, cb, used.size, weights)
        else:
            draws = np.concatenate([_kappa_from_codes(ca, cb, used.size, weights, index)
                                    for index in _resamples(rng, n_both, n_resamples)])
        pair_cautions = _few_cases(n_both) + (
            _rare_marginal(ca, cb, (a, b), [cats[u] for u in used]) if weights is None
            else [])
        iv, note = _interval(estimate, draws, n_both, confidence, "kappa", method, n_both,
                             pair_cautions)
        if note and k > 1:
            notes.append(f"kappa {a} vs {b}: {note}")
        pair.update(agreement=float(np.mean(ca == cb)), kappa=estimate, low=iv.low,
                    high=iv.high)
        pair_rows.append(pair)
        if len(raters) == 2:
            kappa = iv
    pairs = pd.DataFrame(pair_rows, columns=["rater_a", "rater_b", "n", "dropped",
                                             "agreement", "kappa", "low", "high"])
    if not categorical:
        notes.append(f"the ratings take {k} distinct values (over {MAX_CATEGORIES}): not "
                     "categorical, so no kappa and no confusion table; alpha uses level="
                     f"{level!r}")
    fleiss, fleiss_reason = None, "the ratings are not categorical"
    if categorical and k >= 2:
        fleiss, fleiss_reason = _fleiss_interval(codes, cats, confidence, method, rng,
                                                 n_resamples)
        if fleiss is not None and fleiss.note and len(raters) > 2:
            notes.append(f"Fleiss' kappa: {fleiss.note}")
        elif fleiss is None and len(raters) > 2:
            notes.append(f"no Fleiss' kappa: {fleiss_reason}")
    dropped = int(pairs["dropped"].max()) if len(pairs) else 0
    if kappa is not None and dropped:
        notes.append(f"kappa: {dropped} of {n_cases} cases dropped (a rating missing)")
    return Agreement(
        raters=raters, level=level, alpha=alpha, kappa=kappa, pairs=pairs,
        categories=tuple(cats) if categorical else (), n_cases=n_cases,
        n_resamples=n_resamples, seed=seed, weights=weights, method=method,
        notes=tuple(notes),
        _codes=codes if categorical else None,
        fleiss=fleiss, _fleiss_reason=fleiss_reason,
    )


def _unbool(value: Any) -> Any:
    """True and False as the ratings 1 and 0; any other value as it is."""
    return int(value) if isinstance(value, bool | np.bool_) else value


def _key(value: Any) -> Any:
    """A lookup key equal for 1, 1.0, np.int64(1) and True, distinct for '1'."""
    if isinstance(value, int | float | np.integer | np.floating | np.bool_):
        return ("number", float(value))
    return ("other", value)


# ---------------------------------------------------------------------------
# Fleiss' kappa
# ---------------------------------------------------------------------------


def _fleiss_parts(counts: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """Per case its share of agreeing pairs ``P_i`` and its category counts, and the number
    of ratings per case ``m`` (the same on every case)."""
    m = float(counts[0].sum())
    agree = (np.sum(counts * counts, axis=1) - m) / (m * (m - 1))
    return agree, counts, m


def _fleiss_of(agree_sum: FloatArray, cases: FloatArray, category_sums: FloatArray,
               m: float) -> FloatArray:
    """Fleiss' kappa from the sums over cases (one per row): ``(P - P_e) / (1 - P_e)``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = agree_sum / cases
        shares = category_sums / (cases * m)[:, None]
        chance = np.sum(shares * shares, axis=1)
        out = (observed - chance) / (1 - chance)
    return np.where(chance < 1 - 1e-12, out, np.nan)


def _fleiss_interval(
    codes: npt.NDArray[np.intp], cats: Sequence[Any], confidence: float, method: str,
    rng: np.random.Generator, n_resamples: int,
) -> tuple[Interval | None, str]:
    """Fleiss' kappa of category ``codes`` (cases x raters, -1 missing) with its interval,
    or None and the reason (cases with different numbers of ratings)."""
    rated = (codes >= 0).sum(axis=1)
    if rated.size == 0 or rated.min() != rated.max() or rated[0] < 2:
        if rated.size and rated.max() < 2:
            return None, "no case has two ratings"
        row = int(np.argmax(rated != rated.max())) if rated.min() != rated.max() else 0
        return None, (f"it needs the same number of ratings on every case, and row {row} "
                      f"has {int(rated[row])} where others have {int(rated.max())}; "
                      "Krippendorff's alpha allows missing ratings")
    n, k = codes.shape[0], len(cats)
    flat = codes + (np.arange(n) * k)[:, None]
    counts = np.bincount(flat.ravel(), minlength=n * k).reshape(n, k).astype(np.float64)
    agree, counts, m = _fleiss_parts(counts)
    total_agree, total_counts = agree.sum(), counts.sum(axis=0)
    estimate = float(_fleiss_of(np.array([total_agree]), np.array([float(n)]),
                                total_counts[None, :], m)[0])
    if method == "jackknife":  # each case's own terms taken from the sums: linear in cases
        draws = _fleiss_of(total_agree - agree, np.full(n, n - 1.0),
                           total_counts[None, :] - counts, m)
    else:
        blocks = []
        for index in _resamples(rng, n, n_resamples):
            w = _multiplicity(index, n)
            blocks.append(_fleiss_of(w @ agree, w.sum(axis=1), w @ counts, m))
        draws = np.concatenate(blocks)
    cautions = _few_cases(n) + _rare_pooled(codes, cats)
    iv, _ = _interval(estimate, draws, n, confidence, "Fleiss' kappa", method, n, cautions)
    return iv, ""


def fleiss_kappa(
    frame: Any,
    raters: Sequence[str],
    *,
    categories: Sequence[Any] | None = None,
    confidence: float = 0.95,
    method: str = "jackknife",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Fleiss' kappa: agreement of many raters, each case rated the same number of times.

    The raters of a case need not be the same people from case to case (columns can be
    "first rating", "second rating", ...); what Fleiss' kappa needs is the same number of
    ratings on every case. It is the share of agreeing pairs of ratings within a case,
    corrected for the agreement expected from the pooled category shares; for two raters
    it is Scott's pi.

    Parameters
    ----------
    frame, raters, categories
        As for :func:`agreement`: one row per case, one column per rating (nominal
        categories; None/NaN missing, which Fleiss' kappa does not allow).
    confidence, method, n_resamples, seed
        As for :func:`agreement`: intervals over cases, the jackknife on the Fisher-z scale
        by default, ``"bootstrap"`` percentiles on request.

    Returns
    -------
    Interval
        ``estimate`` equals ``statsmodels.stats.inter_rater.fleiss_kappa`` on the counts
        table; ``note`` says when the interval may be too narrow (few cases, a rare
        category).

    Raises
    ------
    StatsError
        What :func:`agreement` refuses, a case with a different number of ratings than the
        others (the message names the row; Krippendorff's alpha allows missing ratings),
        or ratings that are not categorical.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> frame = pd.DataFrame({"r1": ["a", "a", "b", "b", "a", "c"],
    ...                       "r2": ["a", "b", "b", "b", "a", "c"],
    ...                       "r3": ["a", "a", "b", "c", "a", "c"]})
    >>> kappa = mk.fleiss_kappa(frame, ["r1", "r2", "r3"])
    >>> round(kappa.estimate, 3), kappa.method, kappa.n
    (0.654, 'jackknife-z', 6)
    """
    result = agreement(frame, raters, level="nominal", categories=categories,
                       confidence=confidence, method=method, n_resamples=n_resamples,
                       seed=seed)
    if result.fleiss is None:
        if len(result.categories) == 1:
            return Interval(math.nan, math.nan, math.nan, math.nan, result.n_cases, "none",
                            confidence, note=result.notes[0])
        raise StatsError(f"no Fleiss' kappa: {result._fleiss_reason}")
    return result.fleiss


# ---------------------------------------------------------------------------
# Repeated verdicts of one judge
# ---------------------------------------------------------------------------


def verdict_flips(
    verdicts: Any, *, confidence: float = 0.95
) -> tuple[float, Interval | None, FloatArray, int]:
    """How often two calls of one judge on the same case disagree on the verdict.

    Parameters
    ----------
    verdicts
        Cases x repeats: 1 (pass), 0 (fail) or NaN (a failed call: missing, not a verdict).

    Returns
    -------
    tuple
        The flip rate (the mean over cases with two or more verdicts of the share of their
        pairs of verdicts that differ), its interval over cases (:func:`mean_ci`), each
        case's share (NaN with fewer than two verdicts) and the number of pairs counted.
        With ``s`` passes among ``m`` verdicts, ``s (m - s)`` of the ``m (m - 1) / 2``
        pairs differ: an unbiased estimate of ``2 p (1 - p)`` for every ``m >= 2``, so a
        case that lost calls still counts at its own rate (the share of cases that flip
        at least once falls with every lost call).
    """
    x = np.asarray(verdicts, dtype=np.float64)
    m = np.isfinite(x).sum(axis=1).astype(np.float64)
    passes = np.nansum(x, axis=1)
    pairs = m * (m - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(m >= 2, passes * (m - passes) / pairs, np.nan)
    counted = share[np.isfinite(share)]
    if not counted.size:
        return math.nan, None, share, 0
    interval = mean_ci(counted, confidence=confidence)
    return float(counted.mean()), interval, share, int(pairs[m >= 2].sum())
