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

Each agreement cell is run with :func:`agreement`'s default interval (``jackknife``: each
case left out once, t with n - 1 degrees of freedom) and with ``method="bootstrap"``
(percentile, 1000 seeded resamples), which falls short with few cases.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from metrickit.compute.stats import grouped_intervals
from metrickit.scoring.judges import agreement


@dataclass(frozen=True)
class Row:
    cell: str
    setting: str
    method: str
    observed: float
    reps: int
    nominal: float = 0.95

    @property
    def verdict(self) -> str:
        if self.cell == "judge-naive":
            return "contrast"
        if self.method.startswith("bootstrap"):
            return "option" if self.observed >= 0.93 else "option, short"
        return "yes" if self.observed >= 0.93 else "NO"


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


def agreement_coverage(
    which: str, n: int, reps: int, *, method: str = "jackknife", n_resamples: int = 1000,
    seed: int = 21,
) -> float:
    """Share of ``reps`` seeded data sets whose agreement interval covers the truth."""
    rng = np.random.default_rng([seed, n, len(which)])
    covered = 0
    for rep in range(reps):
        options = {"method": method, "n_resamples": n_resamples, "seed": rep}
        if which == "kappa":
            frame, truth = kappa_data(rng, n), kappa_truth(0.6, 0.85, 0.75)
            iv = agreement(frame, ["a", "b"], **options).kappa
        elif which == "alpha-nominal":
            frame, truth = alpha_nominal_data(rng, n), alpha_nominal_truth()
            iv = agreement(frame, list(frame.columns), **options).alpha
        else:
            frame, truth = alpha_interval_data(rng, n), alpha_interval_truth()
            iv = agreement(frame, list(frame.columns), level="interval", **options).alpha
        assert iv is not None
        covered += bool(iv.low <= truth <= iv.high)
    return covered / reps


def agreements(reps: int, methods: tuple[str, ...] = ("jackknife", "bootstrap")) -> Iterator[Row]:
    for which, sizes in (("kappa", (20, 30, 100, 300)), ("alpha-nominal", (20, 30, 100)),
                         ("alpha-interval", (20, 30, 100))):
        for n in sizes:
            for method in methods:
                label = ("jackknife t (default)" if method == "jackknife"
                         else "bootstrap percentile, 1000")
                yield Row(which, f"cases={n}", label,
                          agreement_coverage(which, n, reps, method=method), reps)


def run(reps: int, agreement_reps: int) -> list[Row]:
    rows = [*judge_mean(reps), *judge_graded(reps), *judge_crashes(reps)]
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
    print(f"{'cell':<15} {'setting':<36} {'method':<38} {'nominal':>7} {'observed':>8}  verdict")
    for r in rows:
        print(f"{r.cell:<15} {r.setting:<36} {r.method:<38} {r.nominal:>7.2f} "
              f"{r.observed:>8.3f}  {r.verdict}")
    verdicts = [r.verdict for r in rows if r.verdict in ("yes", "NO")]
    print(f"\n{len(verdicts)} cells of the defaults: {verdicts.count('yes')} within bounds, "
          f"{verdicts.count('NO')} short; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
