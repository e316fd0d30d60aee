"""The permutation best set's fast paired t (from matrix products) equals the direct one
(from the tasks × pairs array of differences) on every kind of table it meets."""

from __future__ import annotations

import numpy as np
import pytest

from metrickit.compute.ranking import _gram_pair_t, _pair_t


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


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_paired_t_equals_the_direct_one(seed):
    for cell, ran in _tables(seed):
        i, j = np.triu_indices(cell.shape[1], k=1)
        fast, direct = _gram_pair_t(cell, ran, i, j), _pair_t(cell, ran, i, j)
        # all-equal non-zero differences: no spread, so |t| is beyond any critical value
        # (the direct sums leave a rounding trace of variance, 1e16; the fast path none)
        infinite = np.abs(direct) > 1e12
        assert ((np.abs(fast) > 1e12) == infinite).all()
        clear = np.abs(direct) > 1e-9  # a t of 1e-17 either way is a zero
        assert (np.sign(fast[clear]) == np.sign(direct[clear])).all()
        np.testing.assert_allclose(fast[~infinite], direct[~infinite], rtol=1e-9, atol=1e-9)
