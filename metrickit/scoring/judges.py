"""How far to trust a model as judge: repeat variance and agreement between raters.

* :func:`judge_repeatability` runs an ``llm()``-based scorer several times on every case and
  reports how much its score moves per case, how often its verdict flips, and an interval on
  the mean score that includes the judge's own noise.
* :func:`agreement` compares raters (judges, humans) on the same cases: Cohen's kappa for
  two, Krippendorff's alpha for any number, a confusion table, and intervals by resampling
  cases (leave-one-case-out jackknife by default, a seeded bootstrap on request).

The judge a scorer reaches with ``from skynet import llm`` is set with
:func:`metrickit.set_judge`; docs/feedback.md shows how to plug an OpenAI-compatible client.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit.compute.stats import Interval, mean_ci
from metrickit.errors import JudgeNotConfiguredError, ScorerError, StatsError
from metrickit.scoring.contract import DEFAULT_TIMEOUT, PathLike, Scorer, load_scorer
from metrickit.scoring.scorers import KEY_COLUMNS, read_cases, score_cases

__all__ = [
    "Agreement",
    "JudgeRepeatability",
    "agreement",
    "alpha_resampled",
    "judge_repeatability",
]

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
#: Ratings with more distinct values than this are not categorical: no kappa, no confusion.
MAX_CATEGORIES = 20
FloatArray = npt.NDArray[np.float64]
_CELLS = 4_000_000
_MAX_UNIT_VALUES = 50_000_000  # cases x distinct values for the non-interval levels


# ---------------------------------------------------------------------------
# Repeatability
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeRepeatability:
    """What :func:`judge_repeatability` found.

    Attributes
    ----------
    cases
        One row per case (pandas): ``case`` (row number in the case table), the case's key
        columns, ``calls``, ``failed`` (calls that raised, timed out or broke the contract),
        ``mean``, ``sd`` (over the case's valid calls, ddof 1), ``min``, ``max``,
        ``pass_share`` (share of valid calls with score >= threshold) and ``flips`` (the
        verdict differed between calls; NA with fewer than two valid calls).
    calls
        One row per call: ``case``, ``repeat``, ``score`` (NaN for a failed call),
        ``verdict``, ``feedback``, ``error``.
    mean
        The mean score over valid calls with its interval, clustered by case (cases are the
        sampling unit, repeats are nested in them; see :func:`metrickit.stats.mean_ci`).
    flip_rate
        Share of cases (with at least two valid calls) whose verdict flips.
    flip_interval
        Wilson interval of ``flip_rate`` over those cases.
    noise_share
        Share of the score variance that is the judge's own noise: the mean within-case
        variance over the variance of all valid scores (0: the judge repeats itself
        exactly; near 1: the score says more about the call than the case).
    """

    cases: Any
    calls: Any
    mean: Interval | None
    flip_rate: float
    flip_interval: Interval | None
    noise_share: float
    threshold: float
    repeats: int
    failed_calls: int
    notes: tuple[str, ...] = ()

    @property
    def n_cases(self) -> int:
        return len(self.cases)

    def __str__(self) -> str:
        lines = [f"Judge repeatability: {self.n_cases} cases x {self.repeats} repeats"
                 + (f", {self.failed_calls} failed calls" if self.failed_calls else "")]
        lines.append(f"  mean score: {self.mean}" if self.mean is not None
                     else "  mean score: none (no call succeeded)")
        counted = int(self.cases["flips"].notna().sum())
        if counted:
            lines.append(f"  verdict (score >= {self.threshold:g}) flips on "
                         f"{self.flip_rate:.1%} of {counted} cases"
                         + (f" [{self.flip_interval.low:.1%}, {self.flip_interval.high:.1%}]"
                            if self.flip_interval is not None else ""))
        sd = self.cases["sd"].dropna()
        if len(sd):
            lines.append(f"  per-case spread: median sd {float(sd.median()):.3g}, max sd "
                         f"{float(sd.max()):.3g}; judge noise is {self.noise_share:.0%} of the "
                         "score variance")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        text = "<br>".join(html.escape(line) for line in str(self).splitlines())
        worst = self.cases.sort_values("sd", ascending=False).head(10)
        return f"<div><p>{text}</p>{worst.to_html(index=False)}</div>"


def _check_repeats(repeats: Any) -> int:
    if isinstance(repeats, bool) or not isinstance(repeats, int | np.integer) or repeats < 2:
        raise ScorerError(f"repeats is {repeats!r}; expected a whole number >= 2 (one call per "
                          "case says nothing about the judge's repeat variance)")
    return int(repeats)


def judge_repeatability(
    score: Scorer | PathLike,
    cases: Any,
    repeats: int = 5,
    *,
    threshold: float = 0.5,
    confidence: float = 0.95,
    timeout: float | None = DEFAULT_TIMEOUT,
    workers: int | None = None,
    keys: Sequence[str] | None = None,
    progress: bool = False,
) -> JudgeRepeatability:
    """Run a judge-based scorer ``repeats`` times per case and measure its own noise.

    Each repeat is one :func:`metrickit.score_cases` pass over all cases, so a call that
    raises, hangs past ``timeout`` or returns something that breaks the contract is
    recorded for its case and repeat (``calls.error``) and the rest go on.

    Parameters
    ----------
    score
        A scorer function or a scorer file path; it typically calls ``skynet.llm`` (the
        judge set with :func:`metrickit.set_judge`). A judge that caches its answers or runs
        at temperature 0 may repeat itself exactly: the spread is then 0 by construction.
    cases
        A DataFrame, JSONL path or list of dicts, as for :func:`metrickit.score_cases`.
    repeats
        Calls per case (at least 2).
    threshold
        The *verdict* of a call is pass when its score is >= ``threshold`` (default 0.5),
        fail otherwise; a case *flips* when its valid calls have both verdicts.
    confidence
        Confidence level of the intervals.
    timeout, workers, keys, progress
        As for :func:`metrickit.score_cases` (``progress`` is off by default).

    Returns
    -------
    JudgeRepeatability
        The per-case table (``.cases``), every call (``.calls``) and the summary fields.
        The interval on the mean treats the case as the sampling unit with the repeats
        nested in it (cluster-robust; Wilson with the clustered effective size for 0/1
        scores): it is wider than one that counts every call as independent, and is the
        honest one (docs/contracts.md, section 4; ``benchmarks/coverage_judges.py`` checks
        its coverage). Failed calls are left out of every statistic and counted.

    Raises
    ------
    ScorerError
        ``repeats`` below 2, an unusable scorer signature, an unreadable case table, or
        every call failed (the message quotes the most common error).
    JudgeNotConfiguredError
        Every call failed because no judge is set (:func:`metrickit.set_judge`).
    StatsError
        ``threshold`` or ``confidence`` is not a usable number.

    Examples
    --------
    >>> import random
    >>> import metrickit as mk
    >>> from metrickit.scoring.judges import judge_repeatability
    >>> rng = random.Random(0)
    >>> def score(input, output, expected=None):
    ...     p = 0.9 if output == expected else 0.2    # a noisy judge
    ...     ok = rng.random() < p
    ...     return float(ok), {"feedback": f"Expected {expected!r}, got {output!r}."}
    >>> cases = [{"q": i, "output": "a", "expected": "a" if i % 2 else "b"} for i in range(20)]
    >>> result = judge_repeatability(score, cases, repeats=4, workers=1)
    >>> result.mean.method, result.mean.n_clusters, 0 <= result.flip_rate <= 1
    ('cluster-wilson', 20, True)
    """
    import pandas as pd

    repeats = _check_repeats(repeats)
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) \
            or not math.isfinite(threshold):
        raise StatsError(f"threshold is {threshold!r}; expected a finite number (a call's "
                         "verdict is pass when its score is >= threshold)")
    if not 0 < confidence < 1:
        raise StatsError(f"confidence is {confidence!r}; expected a number between 0 and 1")
    if isinstance(score, str | os.PathLike):
        score, _ = load_scorer(score)
    rows, _ = read_cases(cases)
    if not rows:
        raise ScorerError("the case table has no cases; judge_repeatability needs cases")
    present = set().union(*(r.keys() for r in rows))
    key_columns = list(keys) if keys is not None else [k for k in KEY_COLUMNS if k in present]

    frames = []
    for r in range(repeats):
        scored = score_cases(score, rows, timeout=timeout, workers=workers, keys=key_columns,
                             backend="pandas", progress=progress)
        frames.append(pd.DataFrame({
            "case": np.arange(len(rows)), "repeat": r,
            "score": scored["score"].to_numpy(dtype=float),
            "feedback": scored["feedback"], "error": scored["error"],
        }))
    calls = pd.concat(frames, ignore_index=True)
    failed = calls["error"].notna().to_numpy()
    common, times = ("", 0)
    if failed.any():
        common, times = Counter(calls.loc[failed, "error"]).most_common(1)[0]
    if failed.all():
        not_configured = common.startswith("raised JudgeNotConfiguredError")
        raise (JudgeNotConfiguredError if not_configured else ScorerError)(
            f"all {len(calls)} calls failed, so there is nothing to measure; the most common "
            f"error ({times} of {len(calls)}): {common}"
            + ("" if not_configured else
               " (mk.check_scorer(score, cases) shows one call in detail)"))
    calls.loc[failed, "score"] = np.nan
    calls["verdict"] = (calls["score"] >= threshold).astype("boolean").mask(failed)

    valid = calls[~failed]
    grouped = valid.groupby("case")["score"]
    table = pd.DataFrame({"case": np.arange(len(rows))})
    for k in key_columns:
        table[k] = [row.get(k) for row in rows]
    table["calls"] = repeats
    table["failed"] = calls.groupby("case")["error"].count().reindex(table["case"]).to_numpy()
    for name, series in (("mean", grouped.mean()), ("sd", grouped.std(ddof=1)),
                         ("min", grouped.min()), ("max", grouped.max())):
        table[name] = series.reindex(table["case"]).to_numpy(dtype=float)
    passes = valid.groupby("case")["verdict"].mean()
    table["pass_share"] = passes.reindex(table["case"]).to_numpy(dtype=float)
    n_valid = repeats - table["failed"]
    share = table["pass_share"]
    table["flips"] = ((share > 0) & (share < 1)).astype("boolean").mask(n_valid < 2)

    notes: list[str] = []
    scores = valid["score"].to_numpy(dtype=float)
    mean = mean_ci(scores, clusters=valid["case"].to_numpy(), confidence=confidence)
    # the clusters are cases: mean_ci's "few tasks" note says "few cases" here
    mean = replace(mean, cluster_unit="cases", note=mean.note.replace("few tasks", "few cases"))
    if mean.n_clusters is None:
        notes.append("every case has one valid call: the interval cannot separate judge "
                     "noise from case spread")
    if failed.any():
        bad_cases = int((table["failed"] > 0).sum())
        shown = common if len(common) <= 200 else common[:197] + "..."
        notes.append(f"{int(failed.sum())} of {len(calls)} calls failed ({bad_cases} cases); "
                     "they are left out, so those cases weigh less in the mean; most common "
                     f"error ({times} calls): {shown}")
    flipped = table["flips"].dropna().to_numpy(dtype=float)
    flip_rate = float(flipped.mean()) if flipped.size else math.nan
    flip_interval = mean_ci(flipped, confidence=confidence) if flipped.size else None
    noise_share = math.nan
    if scores.size > 1:
        total = float(np.var(scores, ddof=1))
        within = table["sd"].dropna().to_numpy(dtype=float) ** 2
        if total > 0 and within.size:
            noise_share = min(1.0, float(within.mean()) / total)
        elif total == 0:
            noise_share = 0.0
    return JudgeRepeatability(
        cases=table, calls=calls[["case", "repeat", "score", "verdict", "feedback", "error"]],
        mean=mean, flip_rate=flip_rate, flip_interval=flip_interval, noise_share=noise_share,
        threshold=float(threshold), repeats=repeats, failed_calls=int(failed.sum()),
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------
# Agreement
# ---------------------------------------------------------------------------


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
    rated: int,
) -> tuple[Interval, str]:
    """The interval of ``estimate`` from resampled values: leave-one-case-out values with a
    t interval (``"jackknife"``), or bootstrap values and their percentiles; bounds cut to
    [-1, 1] (never past the estimate). ``rated``: the cases with two ratings."""
    finite = draws[np.isfinite(draws)]
    note = ""
    if rated < 2:
        note = f"only {rated} case has two ratings: no interval"
    elif not math.isfinite(estimate):
        note = f"no {what}: the ratings take one value only"
    elif draws.size - finite.size:
        note = (f"{draws.size - finite.size} of {draws.size} resamples had no {what} "
                "(one value only) and were left out")
    if rated < 2 or not math.isfinite(estimate) or finite.size < 2:
        return Interval(estimate, math.nan, math.nan, math.nan, n, "none", confidence,
                        note=note), note
    if method == "jackknife":
        m = finite.size
        se = math.sqrt((m - 1) / m * float(np.sum((finite - finite.mean()) ** 2)))
        crit = float(_t_quantile(0.5 + confidence / 2, m - 1))
        low, high = estimate - crit * se, estimate + crit * se
    else:
        low, high = (float(q) for q in np.quantile(finite, [(1 - confidence) / 2,
                                                           (1 + confidence) / 2]))
        se = float(finite.std(ddof=1))
    low, high = max(low, min(-1.0, estimate)), min(high, max(1.0, estimate))
    if high - low <= 1e-12:
        width = (f"the interval has no width: every resample gives {what} {estimate:.3g}; "
                 "the ratings vary too little to measure its uncertainty")
        note = f"{note}; {width}" if note else width
    return Interval(estimate, low, high, se, n, method, confidence, note=note), note


def _t_quantile(q: float, df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(q, df))


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
        elif len(self.raters) > 2 and len(self.pairs):
            lines.append("  Cohen's kappa per pair:")
            for row in self.pairs.itertuples(index=False):
                lines.append(f"    {row.rater_a} vs {row.rater_b}: {row.kappa:.3f} "
                             f"[{row.low:.3f}, {row.high:.3f}] (n={row.n})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        text = "<br>".join(html.escape(line) for line in str(self).splitlines())
        table = self.confusion.to_html() if self.categories else ""
        return f"<div><p>{text}</p>{table}</div>"


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
    alpha, note = _interval(alpha_value, draws, n_cases, confidence, "alpha", method,
                            pairable)
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
        iv, note = _interval(estimate, draws, n_both, confidence, "kappa", method, n_both)
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
    dropped = int(pairs["dropped"].max()) if len(pairs) else 0
    if kappa is not None and dropped:
        notes.append(f"kappa: {dropped} of {n_cases} cases dropped (a rating missing)")
    return Agreement(
        raters=raters, level=level, alpha=alpha, kappa=kappa, pairs=pairs,
        categories=tuple(cats) if categorical else (), n_cases=n_cases,
        n_resamples=n_resamples, seed=seed, weights=weights, method=method,
        notes=tuple(notes),
        _codes=codes if categorical else None,
    )


def _unbool(value: Any) -> Any:
    """True and False as the ratings 1 and 0; any other value as it is."""
    return int(value) if isinstance(value, bool | np.bool_) else value


def _key(value: Any) -> Any:
    """A lookup key equal for 1, 1.0, np.int64(1) and True, distinct for '1'."""
    if isinstance(value, int | float | np.integer | np.floating | np.bool_):
        return ("number", float(value))
    return ("other", value)
