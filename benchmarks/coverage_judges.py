"""Do the judge tools' intervals hold their level? Seeded simulations with known truth.

The rule is the project's (docs/contracts.md, section 4): a 95 % interval is honest when it
covers the truth in at least 93 % of simulated data sets.

    python benchmarks/coverage_judges.py             # every cell (about 5 minutes on 2 cores)
    python benchmarks/coverage_judges.py --reps 300  # quicker, noisier

Cells:

* ``judge-mean``: the interval on the mean score of :func:`judge_repeatability` (the call
  it makes: ``mean_ci(scores, clusters=case)``, here vectorised over data sets with
  ``grouped_intervals``). C cases, each with its own pass probability drawn from a Beta of
  mean p and concentration 2 (cases differ a lot, and the judge is noisy on most of them);
  R calls per case, each a Bernoulli draw. The truth is p, the mean over cases and judge
  noise.
* ``judge-graded``: the same with graded scores: a case's level ``mu ~ Beta(2.4, 1.6)``
  (mean 0.6) and each call ``Beta(10 mu, 10 (1 - mu))``.
* ``judge-crashes``: ``judge-mean`` with 10 % of the calls failing at random (left out).
* ``judge-naive``: for contrast, the interval that counts every call as independent (no
  clustering by case); it is not what metrickit reports, and it undercovers.
* ``kappa``: :func:`agreement` on two raters of a binary truth (rate 0.6) who report it
  correctly with probability 0.85 and 0.75; the truth is the population kappa of that
  joint distribution.
* ``alpha-nominal``: three raters, three categories (truth 0.5/0.3/0.2; raters correct with
  probability 0.9/0.8/0.7, otherwise another category at random), 20 % of ratings missing
  at random; the truth is the population alpha ``1 - mean pair disagreement /
  (1 - sum of squared pooled shares)``.
* ``alpha-interval``: three raters ``truth + N(0, s_j)`` with ``s = 0.5, 0.7, 1.0`` and a
  standard normal truth, 10 % missing; population alpha ``1 - mean(s^2) / (1 + mean(s^2))``.

* ``judge-flips``: the flip rate of :func:`judge_repeatability` (``verdict_flips``, the
  function it calls) with 0 / 10 / 25 % of calls failing at random: case pass probabilities
  ``Beta(1.4, 0.6)``, 5 calls per case; the truth is the mean over cases of ``2 p (1 - p)``
  (two calls disagree). ``bias`` is the mean estimate less the truth.
* ``kappa-rare``: ``kappa`` with a 10 % category (raters correct with probability 0.9 and
  0.8).
* ``fleiss``: :func:`fleiss_kappa` on ``alpha-nominal``'s three raters with no missing
  ratings (its population value is that alpha's).
* ``alpha-lognormal``: interval alpha of three raters ``exp(sigma z + s_j e_j)`` with
  ``s = 0.3, 0.5, 0.7``, 10 % missing; the truth from the lognormal moments.

Each agreement cell is run with :func:`agreement`'s default interval (``jackknife``: each
case left out once, its standard error carried to the Fisher-z scale, t with n - 1 degrees
of freedom there) and, for the first three, with ``method="bootstrap"`` (percentile, 1000
seeded resamples), which falls short with few cases. ``noted`` is the share of intervals
that carry a note (few cases, a rare category, skewed ratings, or no interval at all) and
``unnoted`` the coverage of the others: a cell short of 0.93 passes as ``noted`` when the
intervals without a note hold 0.93, so every interval that may fall short says so.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from metrickit.compute.agreement import agreement, fleiss_kappa, verdict_flips
from metrickit.compute.stats import grouped_intervals


@dataclass(frozen=True)
class Row:
    cell: str
    setting: str
    method: str
    observed: float
    reps: int
    nominal: float = 0.95
    noted: float = math.nan     # share of intervals with a note (may be too narrow, none)
    unnoted: float = math.nan   # coverage of the intervals without a note
    bias: float = math.nan

    @property
    def verdict(self) -> str:
        if self.cell == "judge-naive":
            return "contrast"
        if self.method.startswith("bootstrap"):
            return "option" if self.observed >= 0.93 else "option, short"
        if self.observed >= 0.93:
            return "yes"
        # short, but every interval that falls short says so
        if math.isnan(self.noted) or self.unnoted < 0.93:
            return "NO"
        return "noted"


def _judge_cell(
    cell: str, setting: str, x: np.ndarray, truth: float, *, clustered: bool = True
) -> Row:
    """Coverage over data sets ``x`` of shape (reps, cases, repeats); NaN is a failed call."""
    reps, cases, repeats = x.shape
    groups = np.repeat(np.arange(reps), cases * repeats)
    clusters = np.repeat(np.arange(reps * cases), repeats) if clustered else None
    gi = grouped_intervals(groups, reps, x.ravel(), clusters=clusters)
    covered = (gi.low <= truth) & (truth <= gi.high)
    return Row(cell, setting, "/".join(sorted(set(gi.method))), float(covered.mean()), reps)


def judge_mean(reps: int, seed: int = 11) -> Iterator[Row]:
    for p in (0.7, 0.9):
        for cases in (20, 50, 200):
            for repeats in (3, 5):
                rng = np.random.default_rng([seed, int(p * 100), cases, repeats])
                rate = rng.beta(2 * p, 2 * (1 - p), (reps, cases, 1))
                x = (rng.random((reps, cases, repeats)) < rate).astype(float)
                yield _judge_cell("judge-mean", f"p={p} cases={cases} repeats={repeats}", x, p)
    rng = np.random.default_rng([seed, 1])
    rate = rng.beta(1.4, 0.6, (reps, 50, 1))
    x = (rng.random((reps, 50, 5)) < rate).astype(float)
    yield _judge_cell("judge-naive", "p=0.7 cases=50 repeats=5", x, 0.7, clustered=False)


def judge_graded(reps: int, seed: int = 12) -> Iterator[Row]:
    for cases in (20, 50, 200):
        rng = np.random.default_rng([seed, cases])
        mu = rng.beta(2.4, 1.6, (reps, cases, 1))
        x = rng.beta(10 * mu, 10 * (1 - mu), (reps, cases, 5))
        yield _judge_cell("judge-graded", f"mean=0.6 cases={cases} repeats=5", x, 0.6)


def judge_crashes(reps: int, seed: int = 13) -> Iterator[Row]:
    for cases in (20, 50):
        rng = np.random.default_rng([seed, cases])
        rate = rng.beta(1.4, 0.6, (reps, cases, 1))
        x = (rng.random((reps, cases, 5)) < rate).astype(float)
        x[rng.random(x.shape) < 0.1] = np.nan
        yield _judge_cell("judge-crashes", f"p=0.7 cases={cases} repeats=5, 10% fail", x, 0.7)


# ---------------------------------------------------------------------------
# Agreement
# ---------------------------------------------------------------------------


def kappa_truth(rate: float, q_a: float, q_b: float) -> float:
    """Population Cohen's kappa of two raters who report a 0/1 truth correctly w.p. q."""
    joint = np.zeros((2, 2))
    for z, pz in ((1, rate), (0, 1 - rate)):
        pa = np.array([1 - q_a, q_a]) if z == 1 else np.array([q_a, 1 - q_a])
        pb = np.array([1 - q_b, q_b]) if z == 1 else np.array([q_b, 1 - q_b])
        joint += pz * np.outer(pa, pb)
    po = float(np.trace(joint))
    pe = float(joint.sum(axis=1) @ joint.sum(axis=0))
    return (po - pe) / (1 - pe)


def kappa_data(rng: np.random.Generator, n: int, rate: float = 0.6,
               q: tuple[float, float] = (0.85, 0.75)) -> pd.DataFrame:
    z = rng.random(n) < rate
    a = np.where(rng.random(n) < q[0], z, ~z)
    b = np.where(rng.random(n) < q[1], z, ~z)
    return pd.DataFrame({"a": np.where(a, "pass", "fail"), "b": np.where(b, "pass", "fail")})


NOMINAL_SHARES = np.array([0.5, 0.3, 0.2])
NOMINAL_Q = (0.9, 0.8, 0.7)


def alpha_nominal_truth(shares: np.ndarray = NOMINAL_SHARES,
                        q: tuple[float, ...] = NOMINAL_Q) -> float:
    k = shares.size
    # P(rating c | truth z) per rater
    conditional = [np.where(np.eye(k, dtype=bool), qj, (1 - qj) / (k - 1)) for qj in q]
    marginal = [shares @ c for c in conditional]
    pooled = np.mean(marginal, axis=0)
    disagree = [1 - float(np.sum(shares[:, None] * ci * cj))
                for ci, cj in combinations(conditional, 2)]
    return 1 - float(np.mean(disagree)) / (1 - float(pooled @ pooled))


def alpha_nominal_data(rng: np.random.Generator, n: int, missing: float = 0.2) -> pd.DataFrame:
    k = NOMINAL_SHARES.size
    z = rng.choice(k, size=n, p=NOMINAL_SHARES)
    out = {}
    for j, qj in enumerate(NOMINAL_Q):
        other = (z + rng.integers(1, k, n)) % k
        rating = np.where(rng.random(n) < qj, z, other).astype(float)
        rating[rng.random(n) < missing] = np.nan
        out[f"r{j}"] = rating
    return pd.DataFrame(out)


INTERVAL_SD = (0.5, 0.7, 1.0)


def alpha_interval_truth(sd: tuple[float, ...] = INTERVAL_SD) -> float:
    noise = float(np.mean(np.square(sd)))
    return 1 - noise / (1 + noise)


def alpha_interval_data(rng: np.random.Generator, n: int, missing: float = 0.1) -> pd.DataFrame:
    truth = rng.normal(0, 1, n)
    out = {}
    for j, s in enumerate(INTERVAL_SD):
        rating = truth + rng.normal(0, s, n)
        rating[rng.random(n) < missing] = np.nan
        out[f"r{j}"] = rating
    return pd.DataFrame(out)


LOGNORMAL_SD = (0.3, 0.5, 0.7)


def alpha_lognormal_truth(sigma: float, sd: tuple[float, ...] = LOGNORMAL_SD) -> float:
    """Population interval alpha of ratings ``exp(sigma z + s_j e_j)`` (z, e standard
    normal): 1 - mean squared difference of two raters on one case over that of two
    ratings of different cases, from the lognormal moments."""
    s = np.asarray(sd)
    k = s.size
    mean = np.exp(sigma**2 / 2 + s**2 / 2)
    square = np.exp(2 * sigma**2 + 2 * s**2)
    within = [square[j] + square[h] - 2 * np.exp(2 * sigma**2 + (s[j] ** 2 + s[h] ** 2) / 2)
              for j in range(k) for h in range(k) if j != h]
    between = [square[j] + square[h] - 2 * mean[j] * mean[h] for j in range(k) for h in range(k)]
    return 1 - float(np.mean(within)) / float(np.mean(between))


def alpha_lognormal_data(rng: np.random.Generator, n: int, sigma: float,
                         missing: float = 0.1) -> pd.DataFrame:
    z = rng.normal(size=n)
    out = {}
    for j, s in enumerate(LOGNORMAL_SD):
        rating = np.exp(sigma * z + s * rng.normal(size=n))
        rating[rng.random(n) < missing] = np.nan
        out[f"r{j}"] = rating
    return pd.DataFrame(out)


def agreement_cell(
    which: str, n: int, reps: int, *, method: str = "jackknife", n_resamples: int = 1000,
    seed: int = 21, rate: float = 0.6, sigma: float = 1.0,
) -> tuple[float, float, float]:
    """Coverage of the truth over ``reps`` seeded data sets, the share of intervals with a
    note (including no interval at all: a rare category can leave one rating value) and
    the coverage of those without one."""
    rng = np.random.default_rng([seed, n, len(which), int(rate * 100), int(sigma * 10)])
    covered = noted = covered_unnoted = 0
    for rep in range(reps):
        options = {"method": method, "n_resamples": n_resamples, "seed": rep}
        if which == "kappa":
            q = (0.85, 0.75) if rate >= 0.5 else (0.9, 0.8)
            frame, truth = kappa_data(rng, n, rate, q), kappa_truth(rate, *q)
            iv = agreement(frame, ["a", "b"], **options).kappa
        elif which == "alpha-nominal":
            frame, truth = alpha_nominal_data(rng, n), alpha_nominal_truth()
            iv = agreement(frame, list(frame.columns), **options).alpha
        elif which == "fleiss":
            frame, truth = alpha_nominal_data(rng, n, missing=0.0), alpha_nominal_truth()
            iv = fleiss_kappa(frame, list(frame.columns), **options)
        elif which == "alpha-lognormal":
            frame, truth = alpha_lognormal_data(rng, n, sigma), alpha_lognormal_truth(sigma)
            iv = agreement(frame, list(frame.columns), level="interval", **options).alpha
        else:
            frame, truth = alpha_interval_data(rng, n), alpha_interval_truth()
            iv = agreement(frame, list(frame.columns), level="interval", **options).alpha
        hit = iv is not None and bool(iv.low <= truth <= iv.high)
        flagged = iv is None or bool(iv.note) or iv.method == "none"
        covered += hit
        noted += flagged
        covered_unnoted += hit and not flagged
    unnoted = covered_unnoted / (reps - noted) if reps > noted else math.nan
    return covered / reps, noted / reps, unnoted


def agreement_coverage(
    which: str, n: int, reps: int, *, method: str = "jackknife", n_resamples: int = 1000,
    seed: int = 21,
) -> float:
    """Share of ``reps`` seeded data sets whose agreement interval covers the truth."""
    return agreement_cell(which, n, reps, method=method, n_resamples=n_resamples,
                          seed=seed)[0]


def agreements(reps: int, methods: tuple[str, ...] = ("jackknife", "bootstrap")) -> Iterator[Row]:
    for which, sizes in (("kappa", (20, 30, 100, 300)), ("alpha-nominal", (10, 20, 30, 100)),
                         ("alpha-interval", (10, 20, 30, 100))):
        for n in sizes:
            for method in methods:
                label = ("jackknife-z (default)" if method == "jackknife"
                         else "bootstrap percentile, 1000")
                yield Row(which, f"cases={n}", label,
                          *_cell(which, n, reps, method=method))
    default = "jackknife-z (default)"
    for n in (10, 20, 40, 100):
        yield Row("kappa-rare", f"rate=0.1 cases={n}", default,
                  *_cell("kappa", n, reps, rate=0.1))
    for n in (10, 20, 50):
        yield Row("fleiss", f"3 raters cases={n}", default, *_cell("fleiss", n, reps))
    for sigma in (0.5, 1.0):
        for n in (20, 40, 100):
            yield Row("alpha-lognormal", f"sigma={sigma} cases={n}", default,
                      *_cell("alpha-lognormal", n, reps, sigma=sigma))


def _cell(which: str, n: int, reps: int, **options: Any) -> tuple[float, int, float, float, float]:
    observed, noted, unnoted = agreement_cell(which, n, reps, **options)
    return observed, reps, 0.95, noted, unnoted


def flip_rates(reps: int, seed: int = 31) -> Iterator[Row]:
    """``judge_repeatability``'s flip rate (:func:`verdict_flips`, the function it calls)
    with failed calls: case pass probabilities ``Beta(1.4, 0.6)``, 5 calls per case, each
    failing at random with the given share; the truth is the mean over cases of
    ``2 p (1 - p)``, ``2 (E p - E p^2)`` of the Beta."""
    a, b = 1.4, 0.6
    truth = 2 * (a / (a + b) - a * (a + 1) / ((a + b) * (a + b + 1)))
    for fail in (0.0, 0.1, 0.25):
        for cases in (10, 20, 50):
            rng = np.random.default_rng([seed, cases, int(fail * 100)])
            covered, estimates = 0, []
            for _ in range(reps):
                p = rng.beta(a, b, (cases, 1))
                x = (rng.random((cases, 5)) < p).astype(float)
                x[rng.random(x.shape) < fail] = np.nan
                rate, iv, _, _ = verdict_flips(x)
                if iv is not None:
                    covered += bool(iv.low <= truth <= iv.high)
                    estimates.append(rate)
            yield Row("judge-flips", f"cases={cases} repeats=5, {fail:.0%} fail",
                      "mean_ci over cases", covered / reps, reps,
                      bias=float(np.mean(estimates)) - truth)


def run(reps: int, agreement_reps: int) -> list[Row]:
    rows = [*judge_mean(reps), *judge_graded(reps), *judge_crashes(reps),
            *flip_rates(min(reps, 1000))]
    rows += list(agreements(agreement_reps))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per judge cell")
    parser.add_argument("--agreement-reps", type=int, default=1000,
                        help="data sets per agreement cell (each runs a bootstrap)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.reps, args.agreement_reps)
    print(f"{'cell':<15} {'setting':<32} {'method':<27} {'nominal':>7} {'observed':>8} "
          f"{'noted':>6} {'unnoted':>8} {'bias':>7}  verdict")
    for r in rows:
        extra = (f"{r.noted:>6.3f} {r.unnoted:>8.3f}" if not math.isnan(r.noted)
                 else f"{'':>6} {'':>8}")
        bias = f"{r.bias:>+7.3f}" if not math.isnan(r.bias) else f"{'':>7}"
        print(f"{r.cell:<15} {r.setting:<32} {r.method:<27} {r.nominal:>7.2f} "
              f"{r.observed:>8.3f} {extra} {bias}  {r.verdict}")
    verdicts = [r.verdict for r in rows if r.verdict in ("yes", "noted", "NO")]
    print(f"\n{len(verdicts)} cells of the defaults: {verdicts.count('yes')} within bounds, "
          f"{verdicts.count('noted')} short with every short interval noted, "
          f"{verdicts.count('NO')} short; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
