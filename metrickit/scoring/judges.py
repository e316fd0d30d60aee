"""How far to trust a model as judge: its repeat variance, and agreement between raters.

* :func:`judge_repeatability` runs an ``llm()``-based scorer several times on every case and
  reports how much its score moves per case, how often two of its calls disagree on the
  verdict, and an interval on the mean score that includes the judge's own noise. A failed
  call is missing, not a verdict.
* :func:`agreement` and :func:`fleiss_kappa` (from :mod:`metrickit.compute.agreement`, the
  statistics' home) compare raters (judges, humans) on the same cases.

The judge a scorer reaches with ``from skynet import llm`` is set with
:func:`metrickit.set_judge`; docs/feedback.md shows how to plug an OpenAI-compatible client.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from metrickit.compute.agreement import (
    Agreement,
    agreement,
    alpha_resampled,
    fleiss_kappa,
    verdict_flips,
)
from metrickit.compute.intervals import Interval, mean_ci
from metrickit.errors import JudgeNotConfiguredError, ScorerError, StatsError
from metrickit.scoring.contract import DEFAULT_TIMEOUT, PathLike, Scorer, load_scorer
from metrickit.scoring.scorers import KEY_COLUMNS, read_cases, score_cases

__all__ = [
    "Agreement",
    "JudgeRepeatability",
    "agreement",
    "alpha_resampled",
    "fleiss_kappa",
    "judge_repeatability",
]


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
        ``pass_share`` (share of valid calls with score >= threshold), ``flips`` (the
        verdict differed between its valid calls) and ``disagreement`` (share of the pairs
        of its valid calls whose verdicts differ); both NA with fewer than two valid calls.
    calls
        One row per call: ``case``, ``repeat``, ``score`` (NaN for a failed call),
        ``verdict``, ``feedback``, ``error``.
    mean
        The mean score over valid calls with its interval, clustered by case (cases are the
        sampling unit, repeats are nested in them; see :func:`metrickit.stats.mean_ci`).
    flip_rate
        How often two calls on the same case disagree on the verdict: the mean over cases
        (with at least two valid calls) of each case's ``disagreement``. It estimates the
        mean over cases of ``2 p (1 - p)`` (``p``: the case's pass probability) without bias
        for any number of valid calls per case, so failed calls, which are missing and
        form no pair, do not pull it down (the share of cases that flip at least once
        would fall with every lost call).
    flip_interval
        Its interval over cases (:func:`metrickit.stats.mean_ci` of the per-case
        disagreements; cases are the sampling unit).
    failed_calls
        Calls that raised, timed out or broke the contract; ``flip_pairs`` the pairs of
        valid calls the flip rate counts.
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
    flip_pairs: int = 0

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
            flipped = int(self.cases["flips"].sum())
            iv = self.flip_interval
            lines.append(f"  verdict (score >= {self.threshold:g}): two calls on a case "
                         f"disagree {self.flip_rate:.1%} of the time"
                         + (f" [{iv.low:.1%}, {iv.high:.1%}]" if iv is not None else "")
                         + f" ({self.flip_pairs} pairs of valid calls on {counted} cases); "
                         f"{flipped} of {counted} cases flip at least once"
                         + (f"; {iv.note}" if iv is not None and iv.note else ""))
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
        fail otherwise; a case *flips* when its valid calls have both verdicts, and the
        flip rate is how often two valid calls on a case disagree.
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
        its coverage). Failed calls are missing, not verdicts: they are left out of every
        statistic (a pair with a failed call is no pair) and counted (``failed_calls``,
        ``cases.failed``, a note with the most common error).

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
    >>> result.flip_pairs    # 20 cases x C(4, 2) pairs of calls
    120
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
    n_valid = (repeats - table["failed"]).to_numpy(dtype=float)
    share = table["pass_share"]
    table["flips"] = ((share > 0) & (share < 1)).astype("boolean").mask(n_valid < 2)
    verdicts = calls["verdict"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    flip_rate, flip_interval, disagreement, flip_pairs = verdict_flips(
        verdicts.reshape(repeats, len(rows)).T, confidence=confidence)
    table["disagreement"] = disagreement

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
                     "they are missing, not verdicts, and left out of every statistic; most common "
                     f"error ({times} calls): {shown}")
    if flip_interval is not None:
        flip_interval = replace(flip_interval,
                                note=flip_interval.note.replace("task", "case"))
    counted = int(np.isfinite(disagreement).sum())
    if failed.any() and counted < len(rows):
        lost = len(rows) - counted
        notes.append(f"{lost} case{'s have' if lost != 1 else ' has'} fewer than two valid "
                     "calls: no pair of verdicts, so the flip rate leaves "
                     f"{'them' if lost != 1 else 'it'} out")
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
        notes=tuple(notes), flip_pairs=flip_pairs,
    )
