"""How sure are we? Seeded simulations with known truth for every default interval and test.

For each scenario we draw many data sets whose true value we know, compute metrickit's
default interval (or test) on each, and count how often it covers the truth (or rejects a
true null). A 95 % interval is honest here when it covers at least 93 % of the time; a 5 %
test when it rejects at most 6 %.

    python benchmarks/coverage.py            # the full table (~1-2 minutes on 2 cores)
    python benchmarks/coverage.py --reps 400 # quicker, noisier

The tests run a reduced version of the same functions (tests/test_coverage.py).

Scenarios:
* ``bernoulli``: n independent 0/1 rewards with rate p (mean_ci's default: Wilson);
  exact coverage, summed over every possible count.
* ``tasks``: T tasks × A attempts; each task's rate drawn from a Beta with mean p and
  concentration 2 (strongly task-dependent: intraclass correlation 1/3); the default
  interval clusters by task (cluster-Wilson). This is ``breakdown``'s and
  ``compare_metrics``' interval on a trial table.
* ``tasks-cont``: the same design with continuous rewards in [0, 1] (cluster t).
* ``lognormal``: n skewed positive values (costs, latencies; sigma 1): the t interval used
  by the trade-off whiskers and the tuner. Known to fall short at small n.
* ``compare_runs``: two runs with the same task rates (a true null), T tasks × A
  attempts; the paired t test over tasks must reject at most 6 % at alpha 0.05.
* ``ties``: ten identical candidates (p 0.5, 50 cases each, independent): the share of
  data sets in which compare_metrics' rule puts all ten in the best group.
* ``best``: five candidates with rates 0.70, 0.68, 0.65, 0.60, 0.50 (300 cases each,
  independent): the share of data sets whose best group (best or tied for best) holds the
  truly best one (at least 93 %), and the share that wrongly holds the 0.50 one.
* ``power``: min_detectable_difference's claim checked: at the difference it returns,
  the paired t test over tasks should reject about 80 % of the time.
* ``gate``: the regression gate's two errors at alpha 0.05: a regression called on equal
  candidates, and a pass called when the candidate is worse by exactly the margin.
* ``identical``/``close``: candidates on shared tasks (paired): identical ones all in the
  best set, the true ranks in their simultaneous rank sets, and P(best) of the leader
  against how often it is truly best; ``identical`` also on U-shaped task difficulty with
  difficulty-dependent attempts.
* ``many``: fourteen candidates spread like a real leaderboard on 24 tasks: the truly
  best in the best set, and the power to leave the clearly worse ones out.
* ``p_best_held_out``/``p_best_bound``: the leader's P(best) on designs it was not tuned
  on (one clearly best and four tied, ...), and the total variation distance between the
  identical and close designs' data: the most any rule's mean P(best) can differ by.
* ``front_scenarios``/``p_reliability``: P(front) (spike-and-slab posterior) on fixed
  candidates, and P(best)/P(front) against the truth over many data sets, binned.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from metrickit.compute.ranking import MeanDraws, best_group
from metrickit.compute.stats import grouped_intervals, min_detectable_difference, paired_t


@dataclass(frozen=True)
class Row:
    scenario: str
    setting: str
    method: str
    nominal: float
    observed: float
    reps: int
    flagged: float  # share of data sets whose interval carried a note ("few tasks", ...)

    @property
    def verdict(self) -> str:
        """``yes`` (within bounds), ``flagged`` (short, and the output says so), or ``NO``."""
        if self.nominal != self.nominal:  # NaN: a share shown for information (power)
            return "info"
        if self.scenario in ("compare_runs", "gate"):
            return "yes" if self.observed <= 0.06 else "NO"
        if self.nominal == 0.0:  # a share that should be rare
            return "yes" if self.observed <= 0.05 else "NO"
        if self.scenario in ("p_best", "reliability"):
            return "yes" if abs(self.observed - self.nominal) <= 0.05 else "NO"
        if self.scenario == "power":
            return "yes" if abs(self.observed - self.nominal) <= 0.08 else "NO"
        if self.observed >= 0.93:
            return "yes"
        return "flagged" if self.flagged >= 0.5 else "NO"


def _coverage(
    groups: np.ndarray, reps: int, x: np.ndarray, truth: np.ndarray, clusters: np.ndarray | None
) -> tuple[float, float, str]:
    """Coverage of the default interval over ``reps`` data sets in one vectorised call
    (each data set is a group of :func:`grouped_intervals`)."""
    gi = grouped_intervals(groups, reps, x, clusters=clusters)
    covered = (gi.low <= truth) & (truth <= gi.high)
    flagged = float(np.mean([bool(n) for n in gi.note]))
    methods = sorted(set(gi.method))
    return float(covered.mean()), flagged, "/".join(methods)


def bernoulli(reps: int, seed: int = 1) -> Iterator[Row]:
    """Exact coverage: the interval for every possible count k, weighted by its binomial
    probability (no simulation noise; ``reps`` and ``seed`` are unused)."""
    from scipy import stats as sps

    del reps, seed
    for p in (0.1, 0.5, 0.9):
        for n in (20, 50, 200):
            k = np.arange(n + 1)
            # Data set k: k ones and n - k zeros, each a group of grouped_intervals.
            groups = np.repeat(np.arange(n + 1), n)
            x = (np.tile(np.arange(n), n + 1) < np.repeat(k, n)).astype(float)
            gi = grouped_intervals(groups, n + 1, x)
            covered = (gi.low <= p) & (p <= gi.high)
            cov = float(np.sum(sps.binom.pmf(k, n, p) * covered))
            method = "/".join(sorted(set(gi.method)))
            yield Row("bernoulli", f"p={p} n={n} (exact)", method, 0.95, cov, n + 1, 0.0)


def _task_rates(rng: np.random.Generator, p: float, size: tuple[int, ...]) -> np.ndarray:
    conc = 2.0
    return rng.beta(p * conc, (1 - p) * conc, size)


def tasks(reps: int, seed: int = 2) -> Iterator[Row]:
    for p in (0.05, 0.1, 0.5, 0.9):
        for n_tasks in (10, 30, 100):
            for attempts in (3, 5):
                rng = np.random.default_rng([seed, int(p * 100), n_tasks, attempts])
                rates = _task_rates(rng, p, (reps, n_tasks))
                x = (rng.random((reps, n_tasks, attempts)) < rates[..., None]).astype(float)
                groups = np.repeat(np.arange(reps), n_tasks * attempts)
                clusters = np.repeat(np.arange(reps * n_tasks), attempts)
                cov, flagged, method = _coverage(
                    groups, reps, x.ravel(), np.full(reps, p), clusters
                )
                yield Row(
                    "tasks", f"p={p} tasks={n_tasks} attempts={attempts}", method, 0.95, cov,
                    reps, flagged,
                )


def tasks_continuous(reps: int, seed: int = 3) -> Iterator[Row]:
    for n_tasks in (10, 30, 100):
        rng = np.random.default_rng([seed, n_tasks])
        level = rng.beta(2, 2, (reps, n_tasks))  # task difficulty, mean 0.5
        x = np.clip(level[..., None] + rng.normal(0, 0.15, (reps, n_tasks, 4)), 0, 1)
        # True mean of clip(level + noise): estimate it once from a huge draw.
        ref = np.random.default_rng(99)
        big = np.clip(ref.beta(2, 2, 2_000_000) + ref.normal(0, 0.15, 2_000_000), 0, 1)
        truth = float(big.mean())
        groups = np.repeat(np.arange(reps), n_tasks * 4)
        clusters = np.repeat(np.arange(reps * n_tasks), 4)
        cov, flagged, method = _coverage(groups, reps, x.ravel(), np.full(reps, truth), clusters)
        yield Row("tasks-cont", f"tasks={n_tasks} attempts=4", method, 0.95, cov, reps, flagged)


def lognormal(reps: int, seed: int = 4) -> Iterator[Row]:
    for n in (20, 50, 200):
        rng = np.random.default_rng([seed, n])
        x = rng.lognormal(0.0, 1.0, reps * n)
        groups = np.repeat(np.arange(reps), n)
        truth = float(np.exp(0.5))
        cov, flagged, method = _coverage(groups, reps, x, np.full(reps, truth), None)
        yield Row("lognormal", f"sigma=1 n={n}", method, 0.95, cov, reps, flagged)


def compare_runs_null(reps: int, seed: int = 5) -> Iterator[Row]:
    for n_tasks in (5, 10, 30):
        for attempts in (1, 3, 5):
            rng = np.random.default_rng([seed, n_tasks, attempts])
            rejected = 0
            for _ in range(reps):
                rates = _task_rates(rng, 0.5, (n_tasks,))
                a = (rng.random((n_tasks, attempts)) < rates[:, None]).mean(axis=1)
                b = (rng.random((n_tasks, attempts)) < rates[:, None]).mean(axis=1)
                _, pvalue = paired_t(a - b)
                rejected += pvalue < 0.05
            yield Row(
                "compare_runs", f"null, tasks={n_tasks} attempts={attempts}", "paired-t",
                0.05, rejected / reps, reps, 0.0,
            )


def ties(reps: int, seed: int = 6) -> Iterator[Row]:
    n_groups, n = 10, 50
    groups = np.repeat(np.arange(n_groups), n)
    names = [f"c{i}" for i in range(n_groups)]
    all_tied = 0
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        x = (rng.random(n_groups * n) < 0.5).astype(float)
        draws = MeanDraws(groups, n_groups, None, n_draws=1000, seed=r)
        estimate = np.bincount(groups, weights=x) / n
        ri, _ = best_group(names, estimate, draws, x)
        all_tied += bool(ri.best_group.all())
    yield Row("ties", "10 identical, p=0.5 n=50", "rank 1 or Holm", 0.95, all_tied / reps,
              reps, 0.0)


def best(reps: int, seed: int = 8) -> Iterator[Row]:
    rates = np.array([0.70, 0.68, 0.65, 0.60, 0.50])
    n_groups, n = len(rates), 300
    groups = np.repeat(np.arange(n_groups), n)
    names = [f"c{i}" for i in range(n_groups)]
    holds_best = holds_worst = 0
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        x = (rng.random(n_groups * n) < rates[groups]).astype(float)
        draws = MeanDraws(groups, n_groups, None, n_draws=1000, seed=r)
        estimate = np.bincount(groups, weights=x) / n
        ri, _ = best_group(names, estimate, draws, x)
        holds_best += bool(ri.best_group[0])
        holds_worst += bool(ri.best_group[-1])
    yield Row("best", "5 rates 0.70..0.50, n=300", "rank 1 or Holm", 0.95, holds_best / reps,
              reps, 0.0)
    yield Row("best", "  ... and the 0.50 one tied (should be rare)", "rank 1 or Holm", 0.0,
              holds_worst / reps, reps, 0.0)


def power(reps: int, seed: int = 7) -> Iterator[Row]:
    for n_tasks, attempts in ((30, 3), (100, 1)):
        base, spread = 0.5, 0.15
        delta = min_detectable_difference(n_tasks, attempts, base, task_spread=spread)
        rng = np.random.default_rng([seed, n_tasks, attempts])
        # Task rates with mean 0.5 and sd 0.15: Beta with concentration p(1-p)/sd^2 - 1.
        conc = base * (1 - base) / spread**2 - 1
        rejected = 0
        for _ in range(reps):
            rates = rng.beta(base * conc, (1 - base) * conc, n_tasks)
            a = (rng.random((n_tasks, attempts)) < np.clip(rates + delta / 2, 0, 1)[:, None])
            b = (rng.random((n_tasks, attempts)) < np.clip(rates - delta / 2, 0, 1)[:, None])
            _, pvalue = paired_t(a.mean(axis=1) - b.mean(axis=1))
            rejected += pvalue < 0.05
        yield Row(
            "power", f"tasks={n_tasks} attempts={attempts} at MDD {delta:.3f}", "paired-t",
            0.80, rejected / reps, reps, 0.0,
        )


def gate(reps: int, seed: int = 9) -> Iterator[Row]:
    """The regression gate's two errors, each at most alpha (0.05): calling a regression
    when the candidate equals the baseline, and calling a pass when the candidate is
    worse by exactly the margin (the boundary of non-inferiority). Task rates are
    uniform (every difficulty equally likely); the candidate's rates are the baseline's
    minus the shift, with baseline rates drawn in [shift, 1] so no rate is clipped."""
    from metrickit.compute.gate import score_bounds

    alpha = 0.05
    for n_tasks in (10, 30, 100):
        for attempts in (1, 3):
            for margin in (0.02, 0.05):
                for case, shift in (("equal: regression", 0.0), ("at the margin: pass", margin)):
                    rng = np.random.default_rng([seed, n_tasks, attempts, int(margin * 100),
                                                 int(shift * 100)])
                    wrong = 0
                    for _ in range(reps):
                        base = rng.uniform(shift, 1, n_tasks)
                        cand = base - shift
                        a = (rng.random((n_tasks, attempts)) < base[:, None]).mean(axis=1)
                        b = (rng.random((n_tasks, attempts)) < cand[:, None]).mean(axis=1)
                        low, high = score_bounds(b - a, alpha)
                        if shift == 0.0:
                            wrong += high < -margin
                        else:
                            wrong += low > -margin
                    yield Row(
                        "gate", f"{case}, tasks={n_tasks} att={attempts} margin={margin}",
                        "score-t", alpha, wrong / reps, reps, 0.0,
                    )


def unequal_attempts(reps: int, seed: int = 11) -> Iterator[Row]:
    """Hard tasks lose attempts (timeouts left out, retries): task rates from a Beta(0.6,
    0.6) (heterogeneous difficulty), and a task keeps each of its 5 attempts with
    probability 0.2 + 0.8 * rate (difficulty-dependent attempts, at least one). The truth
    is the mean over tasks of the task rates; the default interval is over task means,
    and Harbor's trial mean is shown for comparison (its coverage of the same truth)."""
    for n_tasks in (10, 30, 100):
        rng = np.random.default_rng([seed, n_tasks])
        rates = rng.beta(0.6, 0.6, (reps, n_tasks))
        x = (rng.random((reps, n_tasks, 5)) < rates[..., None]).astype(float)
        keep = rng.random((reps, n_tasks, 5)) < (0.2 + 0.8 * rates[..., None])
        keep[..., 0] = True
        x = np.where(keep, x, np.nan)
        truth = rates.mean(axis=1)
        groups = np.repeat(np.arange(reps), n_tasks * 5)
        clusters = np.repeat(np.arange(reps * n_tasks), 5)
        gi = grouped_intervals(groups, reps, x.ravel(), clusters=clusters)
        covered = (gi.low <= truth) & (truth <= gi.high)
        flagged = float(np.mean([bool(n) for n in gi.note]))
        yield Row("unequal", f"tasks={n_tasks}, hard tasks keep fewer of 5", "over task means",
                  0.95, float(covered.mean()), reps, flagged)
        harbor_in = (gi.low <= gi.harbor_mean) & (gi.harbor_mean <= gi.high)
        old = (np.abs(gi.harbor_mean - truth) <= (gi.high - gi.low) / 2)
        yield Row("unequal", "  ... Harbor's trial mean within ±half-width of truth", "(old)",
                  0.95, float(old.mean()), reps, float(1 - harbor_in.mean()))


def skewed_costs(reps: int, seed: int = 12) -> Iterator[Row]:
    """Lognormal costs per task (sigma 1, 1.5, 2), 10 or 20 tasks, one value per task and
    20 tasks x 3 attempts: the default interval of a mean cost (tradeoff whiskers, the
    tuner, candidate_table)."""
    for sigma in (1.0, 1.5, 2.0):
        for n_tasks, attempts in ((10, 1), (20, 1), (20, 3)):
            rng = np.random.default_rng([seed, int(sigma * 10), n_tasks, attempts])
            level = rng.normal(0, sigma, (reps, n_tasks, 1))
            x = np.exp(level + rng.normal(0, 0.3, (reps, n_tasks, attempts)))
            truth = np.exp(sigma**2 / 2 + 0.3**2 / 2)
            groups = np.repeat(np.arange(reps), n_tasks * attempts)
            clusters = np.repeat(np.arange(reps * n_tasks), attempts)
            cov, flagged, method = _coverage(groups, reps, x.ravel(), np.full(reps, truth),
                                             clusters)
            yield Row("skewed", f"sigma={sigma} tasks={n_tasks} att={attempts}", method, 0.95,
                      cov, reps, flagged)


def _paired_table(
    rng: np.random.Generator, rates: np.ndarray, n_tasks: int, attempts: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidates with mean rates ``rates`` on shared tasks: task difficulty on the logit
    scale shifts every candidate alike (pairing), plus a task x candidate interaction."""
    from scipy.special import expit, logit

    k = rates.size
    task = rng.normal(0, 1.0, (n_tasks, 1))
    inter = rng.normal(0, 0.3, (n_tasks, k))
    p = expit(logit(rates)[None, :] + task + inter)
    x = (rng.random((n_tasks, k, attempts)) < p[..., None]).astype(float)
    groups = np.tile(np.repeat(np.arange(k), attempts), n_tasks)
    units = np.repeat(np.arange(n_tasks), k * attempts)
    return x.ravel(), groups, units


def identical(reps: int, seed: int = 13) -> Iterator[Row]:
    """k identical candidates on 30 shared tasks x 3 attempts: the share of data sets in
    which all k are in the best set, and the leader's mean p_best (truth 1/k)."""
    for k in (5, 10):
        names = [f"c{i}" for i in range(k)]
        all_in = 0
        leader_p = []
        for r in range(reps):
            rng = np.random.default_rng([seed, k, r])
            x, groups, units = _paired_table(rng, np.full(k, 0.5), 30, 3)
            draws = MeanDraws(groups, k, units, n_draws=1000, seed=r)
            est = grouped_intervals(groups, k, x, clusters=units).mean
            ri, _ = best_group(names, est, draws, x)
            all_in += bool(ri.best_group.all())
            leader_p.append(float(ri.p_best[ri.leader]))
        yield Row("identical", f"{k} identical, 30 tasks x 3: all in the best set",
                  "max-t / MCB", 0.95, all_in / reps, reps, 0.0)
        yield Row("p_best", f"  ... leader's p_best (truth {1 / k:.2f})", "empirical Bayes",
                  1 / k, float(np.mean(leader_p)), reps, 0.0)


def close(reps: int, seed: int = 14) -> Iterator[Row]:
    """Five candidates within 3 points (0.60 ... 0.57) on 100 shared tasks x 3: the truly
    best one in the best set; all five true ranks in their simultaneous rank sets at
    once; the leader's mean p_best against the share of data sets where it is truly
    best."""
    rates = np.array([0.60, 0.59, 0.585, 0.58, 0.57])
    k = rates.size
    names = [f"c{i}" for i in range(k)]
    holds = all_ranks = 0
    shown, truly = [], []
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        x, groups, units = _paired_table(rng, rates, 100, 3)
        draws = MeanDraws(groups, k, units, n_draws=1000, seed=r)
        est = grouped_intervals(groups, k, x, clusters=units).mean
        ri, _ = best_group(names, est, draws, x)
        holds += bool(ri.best_group[0])
        true_rank = np.arange(1, k + 1)
        all_ranks += bool(np.all((ri.rank_low <= true_rank) & (true_rank <= ri.rank_high)))
        shown.append(float(ri.p_best[ri.leader]))
        truly.append(ri.leader == 0)
    yield Row("close", "5 within 3 points, 100 tasks x 3: best in best set", "MCB", 0.95,
              holds / reps, reps, 0.0)
    yield Row("close", "  ... all five true ranks in their rank sets", "max-t step-down",
              0.95, all_ranks / reps, reps, 0.0)
    yield Row("p_best", f"  ... leader's p_best (truly best {np.mean(truly):.2f})",
              "empirical Bayes", float(np.mean(truly)), float(np.mean(shown)), reps, 0.0)


def _leader_p_best(rng: np.random.Generator, rates: np.ndarray, n_tasks: int, attempts: int,
                   seed: int) -> tuple[float, float]:
    """The leader's shown ``p_best`` on one :func:`_paired_table` data set, and its truth
    (its share of the truly best: ties split)."""
    from metrickit.compute.ranking import rank_intervals

    k = rates.size
    x, groups, units = _paired_table(rng, rates, n_tasks, attempts)
    draws = MeanDraws(groups, k, units, n_draws=1000, seed=seed)
    est = grouped_intervals(groups, k, x, clusters=units).mean
    ri = rank_intervals(est, draws.means(x), df=n_tasks - 1, seed=seed)
    return float(ri.p_best[ri.leader]), float(_true_best(rates)[ri.leader])


# Designs p_best was not tuned on: (name, rates, tasks, attempts).
P_BEST_HELD_OUT = (
    ("1 clearly best + 4 tied, 20 tasks x 2", np.array([0.75, 0.5, 0.5, 0.5, 0.5]), 20, 2),
    ("1 better by 0.1 + 4 tied, 40 tasks x 3", np.array([0.6, 0.5, 0.5, 0.5, 0.5]), 40, 3),
    ("4 apart (0.8 .. 0.5), 30 tasks x 3", np.array([0.8, 0.6, 0.55, 0.5]), 30, 3),
    ("5 identical at the close design, 100 x 3", np.full(5, 0.585), 100, 3),
)


def p_best_held_out(reps: int, seed: int = 19) -> Iterator[Row]:
    """The leader's mean ``p_best`` against its truth on designs it was not tuned on
    (:data:`P_BEST_HELD_OUT`): clearly better candidates must get near 1."""
    for i, (name, rates, n_tasks, attempts) in enumerate(P_BEST_HELD_OUT):
        pairs = [_leader_p_best(np.random.default_rng([seed, i, r]), rates, n_tasks, attempts,
                                r) for r in range(reps)]
        shown, truth = np.mean(pairs, axis=0)
        yield Row("p_best", f"{name}: leader (truth {truth:.2f})", "empirical Bayes",
                  float(truth), float(shown), reps, 0.0)


def p_best_bound(reps: int, seed: int = 20) -> Iterator[Row]:
    """How far apart any function of the data can keep its means on two designs (the total
    variation distance between their data): five identical candidates and the ``close``
    ones (:func:`close`), both on 100 tasks x 3, with the noise known (normal estimates,
    the contrasts' covariance averaged over ``reps`` data sets, exact likelihood ratio over
    the 120 orderings). The leader's truth differs by 0.355 - 0.20; a shown ``p_best`` in
    [0, 1] can differ by at most this distance, so both within 0.05 needs at least 0.055."""
    import itertools

    from scipy.special import expit, logit

    rates = np.array([0.60, 0.59, 0.585, 0.58, 0.57])
    k = rates.size
    rng = np.random.default_rng([seed])
    theta = expit(logit(rates)[None] + rng.normal(0, 1, (200_000, 1))
                  + rng.normal(0, 0.3, (200_000, k))).mean(axis=0)
    covs = []
    for r in range(reps):
        x, groups, units = _paired_table(np.random.default_rng([seed, r]), rates, 100, 3)
        covs.append(MeanDraws(groups, k, units).covariance(x)[1])
    h = np.linalg.qr(np.eye(k) - 1.0 / k)[0][:, : k - 1].T  # orthonormal contrasts
    s = h @ np.mean(covs, axis=0) @ h.T
    s_inv = np.linalg.inv(s)
    means = (h @ theta[np.array(list(itertools.permutations(range(k))))].T).T
    z = rng.standard_normal((200_000, k - 1)) @ np.linalg.cholesky(s).T  # identical
    quad = np.einsum("pi,ij,pj->p", means, s_inv, means)
    ratio = np.exp(z @ s_inv @ means.T - 0.5 * quad).mean(axis=1)
    yield Row("p_best", "  ... most any rule can separate them (TV)", "bound", float("nan"),
              float(0.5 * np.abs(1 - ratio).mean()), reps, 0.0)


def _uneven_table(
    rng: np.random.Generator, shift: np.ndarray, n_tasks: int, attempts: int = 5
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Candidates on shared tasks of very different difficulty (task rates from a
    Beta(0.6, 0.6), U-shaped: many tasks nearly always or never solved), each candidate's
    rate on a task shifted by ``shift`` on the logit scale; a trial is kept with
    probability 0.3 + 0.7 × its task's rate (hard tasks lose attempts: timeouts left out),
    at least one per task and candidate. Returns the rows and each candidate's true mean
    over tasks of its task rates."""
    from scipy.special import expit, logit

    k = shift.size
    base = np.clip(rng.beta(0.6, 0.6, (n_tasks, 1)), 0.02, 0.98)
    p = expit(logit(base) + shift[None, :])
    x = (rng.random((n_tasks, k, attempts)) < p[..., None]).astype(float)
    keep = rng.random((n_tasks, k, attempts)) < (0.3 + 0.7 * base[..., None])
    keep[..., 0] = True
    x = np.where(keep, x, np.nan)
    groups = np.broadcast_to(np.arange(k)[None, :, None], x.shape).ravel()
    units = np.broadcast_to(np.arange(n_tasks)[:, None, None], x.shape).ravel()
    kept = ~np.isnan(x.ravel())
    return x.ravel()[kept], groups[kept], units[kept], p.mean(axis=0)


def identical_uneven(reps: int, seed: int = 15) -> Iterator[Row]:
    """Ten identical candidates on 24 tasks of U-shaped difficulty with difficulty-dependent
    attempts (:func:`_uneven_table`): the share of data sets with all ten in the best set."""
    k = 10
    names = [f"c{i}" for i in range(k)]
    all_in = 0
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        x, groups, units, _ = _uneven_table(rng, np.zeros(k), 24)
        draws = MeanDraws(groups, k, units, n_draws=1000, seed=r)
        est = grouped_intervals(groups, k, x, clusters=units).mean
        ri, _ = best_group(names, est, draws, x)
        all_in += bool(ri.best_group.all())
    yield Row("identical", "10 identical, 24 U-shaped tasks, uneven attempts", "permutation",
              0.95, all_in / reps, reps, 0.0)


def many_models(reps: int, seed: int = 16) -> Iterator[Row]:
    """Fourteen candidates spread like a real leaderboard (otel-bench: means about 0.03 to
    0.28) on 24 tasks of U-shaped difficulty, uneven attempts (:func:`_uneven_table`): the
    truly best in the best set (at least 93 %), and the power to leave out the bottom
    three (their true means are less than half the best's; no nominal level: the share is
    printed, and should not be near 0)."""
    k = 14
    from metrickit.compute.ranking import rank_intervals

    shift = np.linspace(-0.8, -3.5, k)
    names = [f"c{i}" for i in range(k)]
    holds = out = out_normal = 0
    truth = None
    for r in range(reps):
        rng = np.random.default_rng([seed, r])
        x, groups, units, truth = _uneven_table(rng, shift, 24, attempts=3)
        draws = MeanDraws(groups, k, units, n_draws=1000, seed=r)
        est = grouped_intervals(groups, k, x, clusters=units).mean
        ri, _ = best_group(names, est, draws, x)
        holds += bool(ri.best_group[0])
        out += bool(not ri.best_group[-3:].any())
        normal = rank_intervals(est, draws.means(x), df=23, seed=r)  # draws' own set
        out_normal += bool(not normal.best_group[-3:].any())
    assert truth is not None
    yield Row("many", f"14 models ({truth[-1]:.2f}..{truth[0]:.2f}), 24 tasks: best in set",
              "permutation", 0.95, holds / reps, reps, 0.0)
    yield Row("many", "  ... power: the bottom three all out of the set", "permutation",
              float("nan"), out / reps, reps, 0.0)
    yield Row("many", "  ... the same from normal draws, t-widened", "max-t draws",
              float("nan"), out_normal / reps, reps, 0.0)


# --- P(front) and P(best): per-scenario numbers, and calibration over a spread of truths ---


def _front_table(
    rng: np.random.Generator, acc_shift: np.ndarray, cost_shift: np.ndarray, n_tasks: int,
    attempts: int, *, uneven: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two objectives on shared tasks: 0/1 accuracy (higher is better) and cost (lower is
    better). Accuracy: each task's difficulty shifts every candidate alike on the logit
    scale (normal, sd 1; with ``uneven`` the U-shaped Beta(0.6, 0.6) task rates of
    :func:`_uneven_table` and hard tasks losing attempts), plus a task x candidate
    interaction (sd 0.3), and candidate ``c``'s logit shifted by ``acc_shift[c]``. Cost:
    lognormal per task (the task's log level normal with sd 1, or 1.5 with ``uneven``,
    shared by every candidate; per trial noise sd 0.5), candidate ``c``'s log cost shifted
    by ``cost_shift[c]``. A candidate's true mean accuracy (cost) over tasks increases
    with its shift, so the shifts are the truth: equal shifts are exact twins."""
    from scipy.special import expit, logit

    k = acc_shift.size
    if uneven:
        base = logit(np.clip(rng.beta(0.6, 0.6, (n_tasks, 1)), 0.02, 0.98))
        sigma = 1.5
    else:
        base = 0.4 + rng.normal(0, 1.0, (n_tasks, 1))
        sigma = 1.0
    p = expit(base + acc_shift[None, :] + rng.normal(0, 0.3, (n_tasks, k)))
    acc = (rng.random((n_tasks, k, attempts)) < p[..., None]).astype(float)
    level = rng.normal(0, sigma, (n_tasks, 1, 1))
    cost = np.exp(level + cost_shift[None, :, None] + rng.normal(0, 0.5, acc.shape))
    if uneven:  # hard tasks lose attempts (timeouts left out), at least one kept
        keep = rng.random(acc.shape) < 0.3 + 0.7 * expit(base)[..., None]
        keep[..., 0] = True
        acc = np.where(keep, acc, np.nan)
        cost = np.where(keep, cost, np.nan)
    groups = np.broadcast_to(np.arange(k)[None, :, None], acc.shape).ravel()
    units = np.broadcast_to(np.arange(n_tasks)[:, None, None], acc.shape).ravel()
    kept = ~np.isnan(acc.ravel())
    return acc.ravel()[kept], cost.ravel()[kept], groups[kept], units[kept]


def _true_front(acc: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Truly on the front: no other candidate at least as accurate and at most as costly,
    and strictly better in one (twins with identical truth are both on it; a candidate
    worse by a hair in one objective and no better in the other is off)."""
    ge = (acc[:, None] >= acc[None, :]) & (cost[:, None] <= cost[None, :])
    gt = (acc[:, None] > acc[None, :]) | (cost[:, None] < cost[None, :])
    return ~np.any(ge & gt, axis=0)


def _true_best(acc: np.ndarray) -> np.ndarray:
    """Each candidate's share of being truly best: 1 / (number tied) for the tied best."""
    top = acc == acc.max()
    return top / top.sum()


def _shown(acc: np.ndarray, cost: np.ndarray, groups: np.ndarray, units: np.ndarray, k: int,
           seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``p_best`` (accuracy) and ``p_front`` (accuracy up, cost down) as metrickit's
    comparisons and ``candidate_table`` compute them."""
    from metrickit.compute.ranking import pareto_probability, rank_intervals

    md = MeanDraws(groups, k, units, n_draws=1000, seed=seed)
    sums, counts = md.unit_sums(acc)
    ran = counts > 0
    est_acc = (np.where(ran, sums, 0) / np.where(ran, counts, 1)).sum(0) / ran.sum(0)
    sums, counts = md.unit_sums(cost)
    est_cost = (np.where(ran, sums, 0) / np.where(ran, counts, 1)).sum(0) / ran.sum(0)
    draws = md.joint({"accuracy": acc, "cost_usd": cost})
    p_front = pareto_probability(draws, maximize=("accuracy",), minimize=("cost_usd",),
                                 estimate={"accuracy": est_acc, "cost_usd": est_cost},
                                 df=md.n_units - 1)
    ri = rank_intervals(est_acc, draws["accuracy"], df=md.n_units - 1, seed=seed)
    return ri.p_best, p_front


# Fixed candidates for the per-scenario P(front) cells: (accuracy shift, log-cost shift).
# twins: 0 and 1 identical; 2 worse than them by a hair in both (truly off the front);
# 3 and 4 cheaper and less accurate (on it); 5 clearly dominated.
FRONT_TWINS = (np.array([0.0, 0.0, -0.02, -0.3, -0.6, -1.0]),
               np.array([0.0, 0.0, 0.02, -0.3, -0.6, 0.5]))
# close: 0..3 a tight trade-off curve (on the front); 4 and 5 dominated by a little.
FRONT_CLOSE = (np.array([0.0, -0.05, -0.1, -0.15, -0.08, -0.12]),
               np.array([0.0, -0.05, -0.1, -0.15, 0.0, -0.04]))


def front_scenarios(reps: int, seed: int = 17) -> Iterator[Row]:
    """P(front) on fixed candidates (:data:`FRONT_TWINS`, :data:`FRONT_CLOSE`) on 30 tasks x
    3 and 15 tasks x 1: the twins' and the hair-dominated candidate's mean ``p_front``
    against their truth (1 and 0), the clearly dominated one's, and, pooled over both
    sets, the share of candidates shown ``p_front < 0.05`` that are truly on the front
    (at most 0.05). The twins and the hair-dominated candidate look alike in any data, so
    no rule gives them their truth; the calibration over a spread of truths
    (:func:`front_reliability`) is what ``p_front`` is made for."""
    low_total = low_on = 0
    for n_tasks, attempts in ((30, 3), (15, 1)):
        for name, (a, c) in (("twins", FRONT_TWINS), ("close", FRONT_CLOSE)):
            truth = _true_front(a, c)
            k = a.size
            shown = np.zeros((reps, k))
            for r in range(reps):
                rng = np.random.default_rng([seed, n_tasks, attempts, len(name), r])
                acc, cost, groups, units = _front_table(rng, a, c, n_tasks, attempts)
                shown[r] = _shown(acc, cost, groups, units, k, r)[1]
            low = shown < 0.05
            low_total += int(low.sum())
            low_on += int((low & truth).sum())
            setting = f"{name}, {n_tasks} tasks x {attempts}"
            if name == "twins":
                yield Row("p_front", f"{setting}: twins (truth 1)", "spike-and-slab", 1.0,
                          float(shown[:, :2].mean()), reps, 0.0)
                yield Row("p_front", "  ... dominated by a hair (truth 0)", "spike-and-slab",
                          0.0, float(shown[:, 2].mean()), reps, 0.0)
                yield Row("p_front", "  ... clearly dominated (truth 0)", "spike-and-slab",
                          0.0, float(shown[:, 5].mean()), reps, 0.0)
            else:
                yield Row("p_front", f"{setting}: on the front (truth 1)", "spike-and-slab",
                          1.0, float(shown[:, truth].mean()), reps, 0.0)
                yield Row("p_front", "  ... dominated by a little (truth 0)",
                          "spike-and-slab", 0.0, float(shown[:, ~truth].mean()), reps, 0.0)
    yield Row("p_front", f"shown < 0.05 but truly on the front ({low_total} shown)",
              "spike-and-slab", 0.0, low_on / max(low_total, 1), reps, 0.0)


@dataclass(frozen=True)
class Reliability:
    """Shown probabilities against the truth over many data sets, for :func:`bins`."""

    shown: np.ndarray  # every candidate of every data set
    truth: np.ndarray  # its truth: 0/1, or its share of a tie for best
    dataset: np.ndarray  # the data set it came from (for the bins' standard errors)


BIN_EDGES = np.array([0.0, 0.02, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.98, 1.0])


def bins(rel: Reliability, edges: np.ndarray = BIN_EDGES
         ) -> list[tuple[float, float, float, float, int]]:
    """Per bin of the shown probability (the last bin holds 1.0): ``(low, high, mean
    shown, share true, count)``."""
    where = np.clip(np.searchsorted(edges, rel.shown, side="right") - 1, 0, edges.size - 2)
    out = []
    for b in range(edges.size - 1):
        inside = where == b
        if inside.any():
            out.append((float(edges[b]), float(edges[b + 1]), float(rel.shown[inside].mean()),
                        float(rel.truth[inside].mean()), int(inside.sum())))
    return out


def _random_truth(rng: np.random.Generator, k: int, held_out: bool) -> np.ndarray:
    """One objective's candidate shifts. Tuning: spread ``tau ~ U(0, 1)`` on the link
    scale, normal shifts. Held out: with probability 0.25 all identical, else log-uniform
    ``tau`` in [0.03, 2] with the candidates falling in 1..k distinct configurations
    (reruns of one configuration are exact twins)."""
    if not held_out:
        return rng.uniform(0, 1.0) * rng.standard_normal(k)
    if rng.random() < 0.25:
        return np.zeros(k)
    tau = float(np.exp(rng.uniform(np.log(0.03), np.log(2.0))))
    configs = tau * rng.standard_normal(k)
    distinct = int(rng.integers(1, k + 1))
    return configs[rng.integers(0, distinct, k)] if distinct < k else configs


def reliability(reps: int, *, held_out: bool, seed: int = 18
                ) -> tuple[Reliability, Reliability]:
    """``p_best`` and ``p_front`` on ``reps`` data sets whose truth is drawn from a spread of
    configurations (identical through well separated, :func:`_random_truth`). Tuning
    design: 3-8 candidates, 10/20/40 tasks x 1/3, normal task difficulty. Held out (a
    generator the model was not tuned on): 2-10 candidates, 8/15/30/60 tasks x 1/2/5,
    U-shaped difficulty with hard tasks losing attempts, costs with log sd 1.5."""
    best: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    front: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for r in range(reps):
        rng = np.random.default_rng([seed, int(held_out), r])
        if held_out:
            k = int(rng.integers(2, 11))
            n_tasks = int(rng.choice([8, 15, 30, 60]))
            attempts = int(rng.choice([1, 2, 5]))
        else:
            k = int(rng.integers(3, 9))
            n_tasks = int(rng.choice([10, 20, 40]))
            attempts = int(rng.choice([1, 3]))
        a = _random_truth(rng, k, held_out)
        c = _random_truth(rng, k, held_out)
        acc, cost, groups, units = _front_table(rng, a, c, n_tasks, attempts, uneven=held_out)
        p_best, p_front = _shown(acc, cost, groups, units, k, r)
        ids = np.full(k, r)
        best.append((p_best, _true_best(a), ids))
        front.append((p_front, _true_front(a, c).astype(float), ids))

    def stack(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Reliability:
        return Reliability(*(np.concatenate([p[i] for p in parts]) for i in range(3)))

    return stack(best), stack(front)


def _reliability_rows(name: str, rel: Reliability, reps: int, setting: str) -> Iterator[Row]:
    for low, high, shown, true, n in bins(rel):
        if n >= 200:  # a well-filled bin: Monte-Carlo error about 0.03 or less
            method = "spike-and-slab" if name == "p_front" else "empirical Bayes"
            yield Row("reliability", f"{name} {setting} [{low:.2f}, {high:.2f}) n={n}",
                      method, shown, true, reps, 0.0)


def p_reliability(reps: int, seed: int = 18) -> Iterator[Row]:
    """Calibration as a forecaster means it (:func:`reliability`): in each well-filled bin
    of the shown ``p_best`` / ``p_front``, the share truly best (on the front) is within
    0.05 of the bin's mean shown probability; the tuning design and a held-out one."""
    for held_out in (False, True):
        setting = "held-out" if held_out else "tuning"
        best_rel, front_rel = reliability(reps, held_out=held_out, seed=seed)
        yield from _reliability_rows("p_best", best_rel, reps, setting)
        yield from _reliability_rows("p_front", front_rel, reps, setting)


SCENARIOS = (bernoulli, tasks, tasks_continuous, lognormal, compare_runs_null, ties, best,
             power, gate, unequal_attempts, skewed_costs, identical, close, identical_uneven,
             many_models, p_best_held_out, p_best_bound, front_scenarios, p_reliability)
SLOW = ("ties", "best", "identical", "close", "identical_uneven", "many_models",
        "p_best_held_out", "p_best_bound", "front_scenarios", "p_reliability")


def run(reps: int) -> list[Row]:
    rows: list[Row] = []
    for scenario in SCENARIOS:
        n = reps if scenario.__name__ not in SLOW else max(100, reps // 5)
        rows.extend(scenario(n))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per cell")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    rows = run(args.reps)
    print(f"{'scenario':<13} {'setting':<38} {'method':<22} {'nominal':>7} {'observed':>8} "
          f"{'flagged':>7}  verdict")
    for r in rows:
        print(f"{r.scenario:<13} {r.setting:<38} {r.method:<22} {r.nominal:>7.2f} "
              f"{r.observed:>8.3f} {r.flagged:>7.2f}  {r.verdict}")
    verdicts = [r.verdict for r in rows]
    print(f"\n{len(rows)} cells: {verdicts.count('yes')} within bounds, "
          f"{verdicts.count('flagged')} short and flagged, {verdicts.count('NO')} short "
          f"unflagged; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
