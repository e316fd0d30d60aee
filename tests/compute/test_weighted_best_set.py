"""The best set of a weighted sum of parts from per-part sums (the tuner's weight sliders)
is the permutation best set of the summed table, whatever the weights and their order."""

from __future__ import annotations

import numpy as np
import pytest

from metrickit.compute.ranking import (
    MeanDraws,
    WeightedBestSet,
    best_group,
    permutation_best_set,
    weighted_best_set,
)
from metrickit.compute.stats import grouped_intervals


def _tables(seed: int, complete: bool) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    tasks, groups = int(rng.integers(4, 40)), int(rng.integers(2, 8))
    skill = rng.uniform(0.3, 0.8, groups)
    parts = [
        (rng.random((tasks, groups)) < skill).astype(float),  # 0/1 accuracy: many ties
        rng.random((tasks, groups)),
        rng.lognormal(0.0, 1.0, (tasks, groups)) / 10,
    ]
    ran = np.ones((tasks, groups), bool) if complete else rng.random((tasks, groups)) < 0.8
    return [np.where(ran, p, 0.0) for p in parts], ran


@pytest.mark.parametrize("complete", [True, False], ids=["complete", "some-not-run"])
def test_any_weights_give_the_set_of_the_summed_table(complete):
    differ = []
    for seed in range(60):
        parts, ran = _tables(seed, complete)
        weighted = WeightedBestSet(parts, ran, n_permutations=300, seed=seed)
        rng = np.random.default_rng(1000 + seed)
        # the same weights again, after others, give the same set (the kept sums and the
        # generator's state are those of their own member sets)
        weights = [rng.dirichlet(np.ones(3)) for _ in range(3)]
        for w in [*weights, weights[0], [1.0, 0.0, 0.0]]:
            summed = sum(wi * p for wi, p in zip(w, parts, strict=True))
            direct = permutation_best_set(summed, ran, n_permutations=300, seed=seed)
            if not np.array_equal(weighted(list(w)), direct):
                differ.append((seed, list(np.round(w, 3))))
    assert not differ, differ


def test_one_part_is_the_permutation_set():
    rng = np.random.default_rng(3)
    cell = rng.normal(np.array([0.0, 0.1, 1.0]), 0.5, (30, 3))  # the third is best
    ran = rng.random((30, 3)) < 0.9
    for seed in range(5):
        one = WeightedBestSet([cell], ran, n_permutations=200, seed=seed)([1.0])
        np.testing.assert_array_equal(
            one, permutation_best_set(cell, ran, n_permutations=200, seed=seed))
        assert one.tolist() == [False, False, True]


def test_best_group_given_the_weighted_set_equals_its_own():
    rng = np.random.default_rng(7)
    tasks, groups, attempts = 30, 5, 2
    codes = np.tile(np.repeat(np.arange(groups), attempts), tasks)
    units = np.repeat(np.arange(tasks), groups * attempts)
    n = codes.size
    acc = (rng.random(n) < np.array([0.4, 0.5, 0.55, 0.7, 0.72])[codes]).astype(float)
    speed = rng.random(n)
    cost = rng.random(n)
    cost[rng.random(n) < 0.05] = np.nan  # not measured: the sum is not either
    draws = MeanDraws(codes, groups, units, n_draws=400, seed=2)
    names = list("abcde")
    weighted = weighted_best_set(draws, [acc, speed, cost])
    assert weighted is not None
    for w in ([0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [1.0, 0.0, 0.0]):
        x = w[0] * acc + w[1] * speed + w[2] * cost
        estimate = grouped_intervals(codes, groups, x, clusters=units).mean
        own, _ = best_group(names, estimate, draws, x, pairs=False)
        given, _ = best_group(names, estimate, draws, x, pairs=False, best=weighted(w))
        np.testing.assert_array_equal(given.best_group, own.best_group)
        np.testing.assert_array_equal(given.rank_low, own.rank_low)


def test_no_weighted_set_where_best_group_uses_the_draws():
    codes = np.tile(np.arange(2), 50)
    unpaired = MeanDraws(codes, 2, None, n_draws=100)
    assert weighted_best_set(unpaired, [np.ones(100), np.zeros(100)]) is None


def test_the_tuner_ranks_as_best_group_on_its_reward(capsys):
    import metrickit as mk

    cases = mk.examples.load("tickets")
    tuner = mk.widgets.tune_spec(cases, debounce_ms=0)
    capsys.readouterr()
    d = tuner.data
    references = [o[1] if isinstance(o, tuple) else o for o in tuner.speed_ref.options]
    # (slider, value, whether the part sums are made after it): a reference move changes
    # a part and takes the direct path; the next weight move, with the same parts, makes
    # the sums (the tuner's first update saw its initial parts)
    moves = [("w_speed", 0.05, True), ("w_speed", 0.4, True),
             ("speed_ref", references[1], False), ("w_speed", 0.9, True),
             ("w_cost", 0.3, True), ("speed_ref", references[-1], False)]
    for name, value, made in moves:
        getattr(tuner, name).value = value
        assert tuner._best_parts[2] is made, (name, value)
        reward = mk.RewardSpec.from_dict(tuner.spec).score_arrays(d.acc, d.lat,
                                                                  d.cost)["reward"]
        estimate = grouped_intervals(d.codes, len(d.groups), reward, clusters=d.units).mean
        own, _ = best_group(d.groups, estimate, d.draws, reward, pairs=False)
        expected = {d.groups[i] for i in np.flatnonzero(own.best_group)}
        assert set(tuner.tied) == expected, (name, value)


def test_sums_too_large_to_keep_give_the_summed_tables_set(monkeypatch):
    # many groups: the first step's sums would not fit, so each call is the direct set of
    # the summed table (one part's work), never the sums recomputed for every weighting
    from metrickit.compute import ranking

    parts, ran = _tables(11, True)
    weighted = WeightedBestSet(parts, ran, n_permutations=300, seed=4)
    assert weighted._fits(ran.shape[1])
    monkeypatch.setattr(ranking, "_PERM_CACHE_BYTES", 1000)
    assert not weighted._fits(ran.shape[1])
    made = []
    real = ranking._part_sums
    monkeypatch.setattr(ranking, "_part_sums", lambda tables, r: made.append(len(tables))
                        or real(tables, r))
    for w in ([0.2, 0.3, 0.5], [0.6, 0.2, 0.2]):
        summed = sum(wi * p for wi, p in zip(w, parts, strict=True))
        np.testing.assert_array_equal(
            weighted(w), permutation_best_set(summed, ran, n_permutations=300, seed=4))
    assert made and set(made) == {1} and not weighted._sums
