"""How sure are we, part 2: power, quantiles, sums, rare events and pass@k against known truth.

Seeded simulations in the style of ``benchmarks/coverage.py`` (same verdicts: a 95 %
interval is honest when it covers >= 93 % of the time or its note says it may not; a
power claim when the power achieved is within ±0.05 of it).

    python benchmarks/coverage_power.py             # the full table (a few minutes, 2 cores)
    python benchmarks/coverage_power.py --reps 300  # quicker, noisier

The tests run reduced versions (tests/compute/test_power_planning.py,
tests/compute/test_interval_notes.py, tests/compute/test_passk.py).

Scenarios (generators not used in coverage.py):
* ``power``: two candidates on shared tasks whose gain differs by task (task × candidate
  interaction, sd 0.15 on the rate scale, task rates Beta with sd 0.15): ``tasks_needed``
  for a 0.10 gain, given the interaction, then the paired t test on that many fresh tasks;
  the old plan (interaction ignored) beside it.
* ``pilot``: the same, planned from a 30-task × 3 pilot of both candidates (``pilot=``).
* ``own-mdd``: ``compare_runs``' ``min_detectable`` from one data set, and the power of a
  fresh comparison of the same design at that difference (single 0/1 attempts: the exact
  power at the alternative's spread, 10 and 30 tasks).
* ``no-spread``: both runs identical on every task: share of comparisons that claim no
  power (``min_detectable`` NaN, a note).
* ``quantile``: the 0.9 quantile of lognormal latencies (σ = 1) over 5-50 tasks, and the
  median of task means over 5 and 20 tasks × 3 attempts (order-statistic interval).
* ``sum``: the sum of 0/1 rewards over 5-30 tasks × 3 attempts with task rates Beta(0.6,
  0.6), and of lognormal costs (interval over task sums).
* ``wilson``: single 0/1 attempts, rare events: the smallest exact coverage over rates in
  (0, 0.2] (n = 20, 50, 200), metrickit's default and plain Wilson.
* ``pass@k``: 10 tasks × 10 attempts and 30 × 5, task rates Beta(0.6, 0.6) and Beta(1.5,
  0.5): coverage of ``ci_low``/``ci_high`` for the true pass@k; five identical candidates
  on 10 tasks × 10: the share of data sets where two differ by more than 0.05, and the
  share where all five are in ``best_group``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from metrickit.compute.intervals import grouped_intervals, quantile_ci, sum_ci
from metrickit.compute.power import (
    observed_detectable_difference,
    single_attempt_detectable_difference,
    tasks_needed,
)
from metrickit.compute.stats import paired_t


@dataclass(frozen=True)
class Row:
    scenario: str
    setting: str
    method: str
    nominal: float
    observed: float
    reps: int
    flagged: float  # share of data sets whose output carried a note

    @property
    def verdict(self) -> str:
        """``yes`` (within bounds), ``flagged`` (short, and the output says so), or ``NO``."""
        if self.method == "(old)":
            return "(old)"
        if self.scenario in ("power", "pilot", "own-mdd"):
            if abs(self.observed - self.nominal) <= 0.05:
                return "yes"
            return "flagged" if self.flagged >= 0.5 else "NO"
        if self.scenario == "no-spread" or self.nominal == 0.0:
            return "yes" if self.observed >= 0.99 else "NO"
        if self.observed >= 0.93:
            return "yes"
        return "flagged" if self.flagged >= 0.5 else "NO"


# --- power ---------------------------------------------------------------------------

SPREAD, OMEGA, BASE = 0.15, 0.15, 0.5


def _differences(rng: np.random.Generator, n_tasks: int, attempts: int, delta: float
                 ) -> np.ndarray:
    """Per-task differences of two candidates whose true gain on a task is ``delta`` plus
    an interaction of sd ``OMEGA``; common task rates Beta with mean 0.5 and sd 0.15."""
    conc = BASE * (1 - BASE) / SPREAD**2 - 1
    p = rng.beta(BASE * conc, (1 - BASE) * conc, n_tasks)
    gain = delta + rng.normal(0, OMEGA, n_tasks)
    pa, pb = np.clip(p + gain / 2, 0, 1), np.clip(p - gain / 2, 0, 1)
    a = (rng.random((n_tasks, attempts)) < pa[:, None]).mean(axis=1)
    b = (rng.random((n_tasks, attempts)) < pb[:, None]).mean(axis=1)
    return a - b


def _rejects(rng: np.random.Generator, n_tasks: int, attempts: int, delta: float) -> bool:
    return bool(paired_t(_differences(rng, n_tasks, attempts, delta))[1] < 0.05)


def power(reps: int, seed: int = 21) -> Iterator[Row]:
    # a candidate's task rates: common spread plus half the interaction
    spread = math.sqrt(SPREAD**2 + OMEGA**2 / 4)
    for attempts in (1, 3, 10):
        rng = np.random.default_rng([seed, attempts])
        planned = tasks_needed(0.1, attempts, BASE, task_spread=spread, interaction=OMEGA)
        old = tasks_needed(0.1, attempts, BASE, task_spread=spread)
        for n_tasks, label in ((planned, "interaction="), (old, "(old)")):
            achieved = np.mean([_rejects(rng, n_tasks, attempts, 0.1) for _ in range(reps)])
            yield Row("power", f"gain 0.10, att={attempts}: {n_tasks} tasks",
                      label if label == "(old)" else "noncentral t", 0.80, float(achieved),
                      reps, 0.0)


def _pilot_table(rng: np.random.Generator, n_tasks: int, attempts: int) -> object:
    import pandas as pd

    from metrickit.io.tidy import trials_from_frame

    conc = BASE * (1 - BASE) / SPREAD**2 - 1
    p = rng.beta(BASE * conc, (1 - BASE) * conc, n_tasks)
    gain = 0.1 + rng.normal(0, OMEGA, n_tasks)
    rates = np.stack([np.clip(p + gain / 2, 0, 1), np.clip(p - gain / 2, 0, 1)])
    x = (rng.random((2, n_tasks, attempts)) < rates[..., None]).astype(int)
    frame = pd.DataFrame({
        "model": np.repeat(["a", "b"], n_tasks * attempts),
        "task": np.tile(np.repeat([f"t{i}" for i in range(n_tasks)], attempts), 2),
        "ok": x.ravel(),
    })
    return trials_from_frame(frame, task="task", reward="ok", model="model")


def pilot(reps: int, seed: int = 22) -> Iterator[Row]:
    """Plans from a pilot: each rep draws a pilot, plans, and runs one fresh comparison of
    the planned size; the share that detects the gain is the power achieved."""
    from metrickit.compute.power import pilot_variance

    for attempts in (3, 10):
        rng = np.random.default_rng([seed, attempts])
        hits = []
        sizes = []
        for _ in range(reps):
            estimate = pilot_variance(_pilot_table(rng, 30, 3))
            n_tasks = tasks_needed(0.1, attempts, pilot=estimate)
            sizes.append(n_tasks)
            hits.append(_rejects(rng, n_tasks, attempts, 0.1))
        yield Row("pilot", f"30x3 pilot, att={attempts}: ~{int(np.median(sizes))} tasks",
                  "pilot=", 0.80, float(np.mean(hits)), reps, 0.0)


def own_mdd(
    reps: int, seed: int = 23,
    designs: tuple[tuple[int, int], ...] = ((10, 5), (30, 3), (10, 1), (30, 1), (5, 3)),
) -> Iterator[Row]:
    """``compare_runs``' ``min_detectable`` from one null data set (what compare_runs
    computes: exact for single 0/1 attempts, :func:`single_attempt_detectable_difference`),
    then one fresh comparison of the same design at that difference; the share that
    rejects is the power achieved."""
    for n_tasks, attempts in designs:
        rng = np.random.default_rng([seed, n_tasks, attempts])
        hits = []
        for _ in range(reps):
            d = _differences(rng, n_tasks, attempts, 0.0)
            mdd = (single_attempt_detectable_difference(d) if attempts == 1 else
                   observed_detectable_difference(float(d.std(ddof=1)), n_tasks))
            if math.isfinite(mdd):
                hits.append(_rejects(rng, n_tasks, attempts, mdd))
        yield Row("own-mdd", f"compare_runs, {n_tasks} tasks x {attempts}",
                  "exact 0/1" if attempts == 1 else "noncentral t", 0.80,
                  float(np.mean(hits)), reps, 1.0 if n_tasks < 10 else 0.0)


def no_spread(reps: int, seed: int = 24) -> Iterator[Row]:
    """Both runs identical on every task (saturated 0/1 or the same outputs)."""
    import pandas as pd

    from metrickit.compute.paired import compare_runs

    del seed
    rows = []
    for n_tasks, value in ((10, 1.0), (10, 0.0), (30, 0.5)):
        frame = pd.DataFrame({
            "candidate": np.repeat(["a", "b"], n_tasks),
            "task_name": np.tile([f"t{i}" for i in range(n_tasks)], 2),
            "reward": np.full(2 * n_tasks, value),
        })
        result = compare_runs(frame, "a", "b")
        honest = (math.isnan(result.min_detectable) and result.underpowered
                  and any("no spread" in n for n in result.notes)
                  and bool(result.difference.note))
        rows.append(honest)
    yield Row("no-spread", "identical runs, 10/30 tasks", "note", 1.0, float(np.mean(rows)),
              max(1, reps // reps), 1.0)


# --- quantiles and sums --------------------------------------------------------------


def quantiles(reps: int, seed: int = 25) -> Iterator[Row]:
    from scipy import stats as sps

    sigma = 1.0
    truth = float(np.exp(sigma * sps.norm.ppf(0.9)))
    for n_tasks in (5, 10, 20, 30, 50):
        rng = np.random.default_rng([seed, n_tasks])
        covered = flagged = 0
        for _ in range(reps):
            ci = quantile_ci(rng.lognormal(0, sigma, n_tasks), 0.9)
            covered += ci.low <= truth <= ci.high
            flagged += bool(ci.note)
        yield Row("quantile", f"q=0.9, lognormal, {n_tasks} tasks", "order-statistic", 0.95,
                  covered / reps, reps, flagged / reps)
    # median of task means, 3 continuous attempts a task
    big = np.random.default_rng(99)
    level = big.beta(2, 2, 400_000)
    means = np.clip(level[:, None] + big.normal(0, 0.15, (400_000, 3)), 0, 1).mean(axis=1)
    truth = float(np.median(means))
    for n_tasks in (5, 20):
        rng = np.random.default_rng([seed, n_tasks, 3])
        covered = flagged = 0
        for _ in range(reps):
            level = rng.beta(2, 2, n_tasks)
            x = np.clip(level[:, None] + rng.normal(0, 0.15, (n_tasks, 3)), 0, 1)
            ci = quantile_ci(x.ravel(), 0.5, clusters=np.repeat(np.arange(n_tasks), 3))
            covered += ci.low <= truth <= ci.high
            flagged += bool(ci.note)
        yield Row("quantile", f"median, {n_tasks} tasks x 3", "order-statistic", 0.95,
                  covered / reps, reps, flagged / reps)


def sums(reps: int, seed: int = 26) -> Iterator[Row]:
    for n_tasks in (5, 10, 30):
        rng = np.random.default_rng([seed, n_tasks])
        covered = flagged = 0
        truth = n_tasks * 3 * 0.5
        clusters = np.repeat(np.arange(n_tasks), 3)
        for _ in range(reps):
            rates = rng.beta(0.6, 0.6, n_tasks)
            x = (rng.random((n_tasks, 3)) < rates[:, None]).astype(float)
            ci = sum_ci(x.ravel(), clusters=clusters)
            covered += ci.low <= truth <= ci.high
            flagged += bool(ci.note)
        yield Row("sum", f"0/1, {n_tasks} tasks x 3", "t over task sums", 0.95,
                  covered / reps, reps, flagged / reps)
    for n_tasks in (5, 20):
        rng = np.random.default_rng([seed, n_tasks, 1])
        covered = flagged = 0
        truth = n_tasks * 3 * float(np.exp(1.0 / 2 + 0.3**2 / 2))
        clusters = np.repeat(np.arange(n_tasks), 3)
        for _ in range(reps):
            level = rng.normal(0, 1.0, (n_tasks, 1))
            x = np.exp(level + rng.normal(0, 0.3, (n_tasks, 3)))
            ci = sum_ci(x.ravel(), clusters=clusters)
            covered += ci.low <= truth <= ci.high
            flagged += bool(ci.note)
        yield Row("sum", f"lognormal cost, {n_tasks} tasks x 3", "over task sums", 0.95,
                  covered / reps, reps, flagged / reps)


def wilson(reps: int, seed: int = 0) -> Iterator[Row]:
    """Exact: every count k of n single attempts, weighted by its binomial probability,
    at 400 rates in (0, 0.2]; the smallest coverage over the rates."""
    from scipy import stats as sps

    del reps, seed
    rates = np.linspace(0.0005, 0.2, 400)
    for n in (20, 50, 200):
        k = np.arange(n + 1)
        groups = np.repeat(k, n)
        x = (np.tile(np.arange(n), n + 1) < np.repeat(k, n)).astype(float)
        gi = grouped_intervals(groups, n + 1, x)
        z = float(sps.norm.ppf(0.975))
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        flagged = np.array([bool(note) for note in gi.note])
        for label, low, high in (("default", gi.low, gi.high),
                                 ("(old)", centre - half, centre + half)):
            pmf = sps.binom.pmf(k[None, :], n, rates[:, None])
            inside = (low[None, :] <= rates[:, None]) & (rates[:, None] <= high[None, :])
            cov = (pmf * inside).sum(axis=1)
            worst = int(np.argmin(cov))
            noted = float((pmf[worst] * flagged).sum())
            yield Row("wilson", f"single attempts n={n}, min over p<=0.2",
                      "wilson+exact" if label == "default" else label, 0.95,
                      float(cov.min()), 400, noted)


# --- pass@k --------------------------------------------------------------------------


def _passk_frame(x: np.ndarray) -> object:
    """A trial table of 0/1 outcomes ``x[candidate, task, attempt]``."""
    import pandas as pd

    from metrickit.io.tidy import trials_from_frame

    k, n_tasks, attempts = x.shape
    frame = pd.DataFrame({
        "model": np.repeat([f"c{i}" for i in range(k)], n_tasks * attempts),
        "task": np.tile(np.repeat([f"t{j}" for j in range(n_tasks)], attempts), k),
        "ok": x.ravel().astype(int),
    })
    return trials_from_frame(frame, task="task", reward="ok", model="model")


def passk(reps: int, seed: int = 27) -> Iterator[Row]:
    import warnings

    from metrickit.compute.passk import pass_at_k
    from metrickit.errors import PassAtKSkipped

    big = np.random.default_rng(98)
    for a, b in ((0.6, 0.6), (1.5, 0.5)):
        population = big.beta(a, b, 1_000_000)
        for n_tasks, attempts in ((10, 10), (30, 5)):
            rng = np.random.default_rng([seed, int(a * 10), n_tasks])
            ks = (1, 2, 5)
            truth = {k: float(np.mean(1 - (1 - population) ** k)) for k in ks}
            covered = dict.fromkeys(ks, 0)
            flagged = dict.fromkeys(ks, 0)
            for _ in range(reps):
                rates = rng.beta(a, b, n_tasks)
                x = rng.random((1, n_tasks, attempts)) < rates[None, :, None]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PassAtKSkipped)
                    table = pass_at_k(_passk_frame(x), k=list(ks)).table.set_index("k")
                for k in ks:
                    row = table.loc[k]
                    covered[k] += row["ci_low"] <= truth[k] <= row["ci_high"]
                    flagged[k] += bool(row["note"])
            for k in ks:
                yield Row("pass@k", f"Beta({a},{b}) {n_tasks}x{attempts} k={k}",
                          "wilson over tasks", 0.95, covered[k] / reps, reps, flagged[k] / reps)
    rng = np.random.default_rng([seed, 5])
    apart = together = 0
    for _ in range(reps):
        rates = rng.beta(0.6, 0.6, 10)
        x = rng.random((5, 10, 10)) < rates[None, :, None]
        table = pass_at_k(_passk_frame(x), k=[2]).table
        two = table[table["k"] == 2]
        apart += float(np.ptp(two["pass_at_k"].to_numpy())) > 0.05
        together += bool(two["best_group"].all())
    yield Row("pass@k", "5 identical, 10x10, k=2: differ by > 0.05", "(old)", 0.0,
              apart / reps, reps, 0.0)
    yield Row("pass@k", "  ... all five in best_group", "best set", 0.95, together / reps,
              reps, 0.0)


SCENARIOS = (power, pilot, own_mdd, no_spread, quantiles, sums, wilson, passk)
SLOW = {"pilot": 4, "passk": 5}  # reps divided by this


def run(reps: int) -> list[Row]:
    rows: list[Row] = []
    for scenario in SCENARIOS:
        rows.extend(scenario(max(50, reps // SLOW.get(scenario.__name__, 1))))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per cell")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.reps)
    print(f"{'scenario':<10} {'setting':<44} {'method':<18} {'nominal':>7} {'observed':>8} "
          f"{'flagged':>7}  verdict")
    for r in rows:
        print(f"{r.scenario:<10} {r.setting:<44} {r.method:<18} {r.nominal:>7.2f} "
              f"{r.observed:>8.3f} {r.flagged:>7.2f}  {r.verdict}")
    verdicts = [r.verdict for r in rows]
    print(f"\n{len(rows)} cells: {verdicts.count('yes')} within bounds, "
          f"{verdicts.count('flagged')} short and flagged, {verdicts.count('NO')} short "
          f"unflagged, {verdicts.count('(old)')} old behaviour for comparison; "
          f"{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
