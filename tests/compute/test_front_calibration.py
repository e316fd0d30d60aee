"""P(front) and P(best) from a hierarchical model that integrates over the between-candidate
spread (issue 24, item 2): reduced, seeded versions of benchmarks/coverage.py's
``front_scenarios`` and ``p_reliability``; the full ones are in the benchmark."""

from __future__ import annotations

import numpy as np
from benchmark_modules import benchmark

from metrickit.compute.ranking import pareto_probability, shrunk_draws

coverage = benchmark("coverage")


def _draws(mean: np.ndarray, se: np.ndarray, n: int = 2000, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(mean, se, (n, mean.size))


def test_close_accuracy_does_not_hand_the_front_to_the_cheapest():
    # accuracies within noise, costs clearly apart (the cheaper, the less accurate): each
    # may be on the front. A point estimate of the spread truncated at 0 tied the
    # accuracies exactly, so the cheapest dominated the others in every draw (0, 0, 1).
    acc = np.array([0.50, 0.49, 0.48])
    cost = np.array([1.0, 0.9, 0.8])
    draws = {"accuracy": _draws(acc, np.full(3, 0.05)),
             "cost_usd": _draws(cost, np.full(3, 0.01), seed=1)}
    p = pareto_probability(draws, maximize=("accuracy",), minimize=("cost_usd",),
                           estimate={"accuracy": acc, "cost_usd": cost})
    assert (p > 0.2).all(), p
    assert p[2] > 0.9  # the cheapest is dominated only if it is also less accurate


def test_clearly_dominated_candidate_is_off_the_front():
    acc = np.array([0.8, 0.5, 0.3])
    cost = np.array([1.0, 0.5, 2.0])  # 2 is worse than 0 on both, by many standard errors
    draws = {"accuracy": _draws(acc, np.full(3, 0.02)),
             "cost_usd": _draws(cost, np.full(3, 0.02), seed=1)}
    p = pareto_probability(draws, maximize=("accuracy",), minimize=("cost_usd",),
                           estimate={"accuracy": acc, "cost_usd": cost})
    assert p[0] > 0.99 and p[1] > 0.99 and p[2] < 0.01


def test_shrunk_draws_integrate_over_the_spread():
    # three estimates whose spread is about their noise: a plug-in spread truncated at 0
    # gave every draw the same value for all three; integrating over tau keeps them apart
    est = np.array([0.50, 0.47, 0.53])
    post = shrunk_draws(est, np.eye(3) * 0.03**2, n_draws=2000, tau="integrated")
    differ = np.abs(post[:, 0] - post[:, 1]) > 1e-9
    assert differ.mean() > 0.9
    leader = (post.argmax(axis=1) == 2).mean()
    assert 1 / 3 < leader < 0.8  # shrunk toward 1/3, not plug-in
    assert np.isnan(shrunk_draws(np.array([0.5, np.nan, 0.4]), np.eye(3) * 1e-3,
                                 tau="integrated")[:, 1]).all()


def test_shown_below_five_percent_is_rarely_truly_on_the_front():
    # the tuning design of the benchmark's reliability study, reduced: 250 data sets
    _, front = coverage.reliability(250, held_out=False, seed=18)
    low = front.shown < 0.05
    assert low.sum() >= 100
    assert front.truth[low].mean() <= 0.10  # a point estimate of tau: about 0.15
    high = front.shown > 0.5
    assert abs(front.truth[high].mean() - front.shown[high].mean()) <= 0.10


def test_true_front_is_defined_at_ties():
    acc = np.array([0.0, 0.0, -0.01, -0.5])
    cost = np.array([0.0, 0.0, 0.01, -0.5])
    # twins are both on the front, a candidate worse by a hair is off, a trade-off is on
    assert list(coverage._true_front(acc, cost)) == [True, True, False, True]
    assert list(coverage._true_best(np.array([1.0, 1.0, 0.0]))) == [0.5, 0.5, 0.0]
