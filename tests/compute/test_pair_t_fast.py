"""The permutation best set's fast paired t (from matrix products) equals the direct one
(from the tasks × pairs array of differences) on every kind of table it meets."""

from __future__ import annotations

import numpy as np
import pytest

from metrickit.compute.ranking import _center_tasks, _gram_pair_t, _pair_t


def _tables(seed: int):
    rng = np.random.default_rng(seed)
    for n_tasks, n_groups in ((2, 2), (5, 3), (24, 14), (60, 4)):
        binary = (rng.random((n_tasks, n_groups)) < 0.5).astype(float)
        graded = np.round(rng.random((n_tasks, n_groups)), 2)
        for cell in (binary, graded):
            yield cell, np.ones(cell.shape, dtype=bool)
            yield cell, rng.random(cell.shape) < 0.8  # missing cells
        twins = np.repeat(graded[:, :1], n_groups, axis=1)  # identical groups
        yield twins, np.ones(twins.shape, dtype=bool)
        shifted = twins + np.arange(n_groups) * 0.25  # constant, non-zero differences
        yield shifted, np.ones(shifted.shape, dtype=bool)
        # large values with small differences (latencies in ms), and twins among them:
        # rounding in the products must neither invent a spread nor hide a real one
        yield 1000.0 + graded * 0.01, np.ones(graded.shape, dtype=bool)
        yield twins * 3.7 + 1e6, np.ones(twins.shape, dtype=bool)


def test_shuffled_tables_in_one_call_equal_each_table_alone():
    # the best set passes a stack of shuffled tables [shuffle, task, group] at once
    rng = np.random.default_rng(5)
    stack = np.round(rng.random((7, 30, 5)), 2)
    stack[3] = stack[3][:, :1]  # one shuffle with identical groups
    i, j = np.triu_indices(5, k=1)
    ran = np.ones((30, 5), dtype=bool)
    together = _gram_pair_t(stack, ran, i, j)
    for k in range(7):
        np.testing.assert_allclose(together[k], _pair_t(stack[k], ran, i, j),
                                   rtol=1e-9, atol=1e-9)
    assert (together[3] == 0).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_paired_t_equals_the_direct_one(seed):
    for cell, ran in _tables(seed):
        i, j = np.triu_indices(cell.shape[1], k=1)
        # the best set takes each task's level out first (_center_tasks)
        fast = _gram_pair_t(_center_tasks(cell, ran), ran, i, j)
        direct = _pair_t(cell, ran, i, j)
        # all-equal non-zero differences: no spread, so |t| is beyond any critical value
        # (the direct sums leave a rounding trace of variance, 1e16; the fast path none)
        infinite = np.abs(direct) > 1e12
        assert ((np.abs(fast) > 1e12) == infinite).all()
        clear = np.abs(direct) > 1e-9  # a t of 1e-17 either way is a zero
        assert (np.sign(fast[clear]) == np.sign(direct[clear])).all()
        np.testing.assert_allclose(fast[~infinite], direct[~infinite], rtol=1e-9, atol=1e-9)
