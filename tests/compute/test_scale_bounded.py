"""Work bounded by input size: the skewed-data interval at many tasks (issue 25).

No timings: the tests record the largest block of resample indices drawn and check the
rule that switches to Hall's interval, so they fail on an unbounded bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrickit.compute import intervals


class _Recorder:
    """``np.random.default_rng`` that records the size of every ``integers`` draw."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, limit: int) -> None:
        self.sizes: list[int] = []
        real = np.random.default_rng
        recorder = self

        class Rng:
            def __init__(self, seed: object = None) -> None:
                self._rng = real(seed)

            def integers(self, low: int, high: int, size: object = None) -> np.ndarray:
                cells = int(np.prod(size)) if size is not None else 1
                recorder.sizes.append(cells)
                if cells > limit:
                    raise MemoryError(f"a draw of {cells:,} indices (limit {limit:,})")
                return self._rng.integers(low, high, size)

            def __getattr__(self, name: str) -> object:
                return getattr(self._rng, name)

        monkeypatch.setattr(np.random, "default_rng", Rng)


def _old_bootstrap_t(m: np.ndarray, confidence: float, n_resamples: int, seed: int):
    g = m.size
    s = m[np.random.default_rng(seed).integers(0, g, (n_resamples, g))]
    mu, sd = s.mean(axis=1), s.std(axis=1, ddof=1)
    mean, se = m.mean(), m.std(ddof=1) / math.sqrt(g)
    t = np.where(sd > 0, (mu - mean) / (sd / math.sqrt(g)), 0.0)
    lo, hi = np.quantile(t, [(1 - confidence) / 2, (1 + confidence) / 2])
    return mean - hi * se, mean - lo * se


@pytest.mark.parametrize("g", [20, 3_000, 9_999])
def test_blocked_bootstrap_t_is_the_unblocked_one(g):
    m = np.random.default_rng(g).lognormal(0, 1.5, g)
    assert intervals._bootstrap_t(m, 0.95, 2000, 3) == pytest.approx(
        _old_bootstrap_t(m, 0.95, 2000, 3), rel=1e-12)


def test_bootstrap_t_draws_in_bounded_blocks(monkeypatch):
    rec = _Recorder(monkeypatch, limit=intervals.BLOCK_CELLS)
    m = np.random.default_rng(0).lognormal(0, 1, 9_000)  # 2000 x 9000 = 18M at once before
    intervals._bootstrap_t(m, 0.95, 2000, 0)
    assert max(rec.sizes) <= intervals.BLOCK_CELLS
    assert sum(rec.sizes) == 2000 * 9_000


def test_many_tasks_use_halls_interval_without_resampling(monkeypatch):
    rec = _Recorder(monkeypatch, limit=0)  # any resampling fails
    n = 200_000
    x = np.random.default_rng(1).lognormal(0, 1, n)
    gi = intervals.grouped_intervals(np.zeros(n, dtype=np.intp), 1, x)
    assert gi.method == ["skewed"] and rec.sizes == []
    assert gi.low[0] < math.exp(0.5) < gi.high[0]


def test_halls_interval_agrees_with_the_bootstrap_t_where_both_run():
    # second-order equivalent: at 5,000 lognormal tasks the bounds agree to the bootstrap's
    # Monte Carlo error (~1 % of the half-width), far closer than the t interval
    m = np.random.default_rng(5).lognormal(0, 1.5, 5_000)
    boot = np.array(intervals._bootstrap_t(m, 0.95, 4000, 0))
    hall = np.array(intervals._hall(m, 0.95))
    half = (boot[1] - boot[0]) / 2
    assert np.abs(hall - boot).max() < 0.05 * half
    se = m.std(ddof=1) / math.sqrt(m.size)
    t = np.array([m.mean() - 1.96 * se, m.mean() + 1.96 * se])
    assert np.abs(hall - boot).max() < np.abs(t - boot).max()


def test_halls_interval_without_skew_is_the_normal_one():
    m = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    se = m.std(ddof=1) / math.sqrt(5)
    low, high = intervals._hall(m, 0.95)
    assert (low, high) == pytest.approx((3 - 1.959964 * se, 3 + 1.959964 * se), rel=1e-6)


def test_several_skewed_groups_at_many_tasks_stay_bounded(monkeypatch):
    # candidate_means' path: one skewed interval per candidate, 50,000 tasks each
    rec = _Recorder(monkeypatch, limit=intervals.BLOCK_CELLS)
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(3), 50_000)
    x = rng.lognormal(8, 1, groups.size)
    gi = intervals.grouped_intervals(groups, 3, x, clusters=np.arange(groups.size))
    assert all(method == "skewed" for method in gi.method)
    assert not rec.sizes or max(rec.sizes) <= intervals.BLOCK_CELLS


def test_a_repeated_small_bootstrap_t_reuses_its_draws(monkeypatch):
    # the tuner's case: the same tasks, new values on every slider move; the resamples'
    # draw counts are kept, so the second call draws nothing and is still the direct one
    rng = np.random.default_rng(7)
    first, second = rng.lognormal(0, 1.2, 24), rng.lognormal(0, 0.8, 24)
    expected = _old_bootstrap_t(second, 0.95, 2000, 11)
    intervals._counts.clear()
    intervals._bootstrap_t(first, 0.95, 2000, 11)
    _Recorder(monkeypatch, limit=0)  # any new draw fails
    assert intervals._bootstrap_t(second, 0.95, 2000, 11) == pytest.approx(expected, rel=1e-12)


def test_a_resample_of_one_repeated_value_has_no_spread():
    # tied values: a resample of equal values has t = 0, never the huge t that rounding
    # leaves in their standard deviation (0.1 five times: ~1e-17; the direct way's upper
    # bound then runs to 2.6e16)
    m = np.array([0.1] * 5 + [2.5])
    low, high = intervals._bootstrap_t(m, 0.95, 2000, 0)
    assert m.min() - 3 < low <= m.mean() <= high < m.max() + 3
    with np.errstate(invalid="ignore"):
        direct = _old_bootstrap_t(m, 0.95, 2000, 0)
    assert max(abs(direct[0]), abs(direct[1])) > 1e6  # the failure this guards against
    assert sum(c.nbytes for c in intervals._counts.values()) <= intervals._COUNTS_BYTES


def test_many_skewed_intervals_at_once_are_each_ones_own(monkeypatch):
    # grouped_intervals computes the bootstrap-t of every skewed group of one size in one
    # stacked product: the same bounds as one group at a time, each with its own seed
    rng = np.random.default_rng(5)
    ms = ([rng.lognormal(0, 1, 34) for _ in range(6)] + [rng.lognormal(0, 1.5, 12)] * 2
          + [rng.lognormal(0, 1, intervals.BOOTSTRAP_T_MAX + 1)])
    seeds = [3, 1, 4, 1, 5, 9, 2, 6, 5]
    together = intervals.skewed_intervals(ms, seeds=seeds)
    alone = [intervals.skewed_interval(m, seed=s) for m, s in zip(ms, seeds, strict=True)]
    np.testing.assert_allclose(together, alone, rtol=1e-13)
    assert together[0] != together[1]  # different data and seeds: different bounds
    # the stacked path was the one taken for the groups of 34 and of 12
    calls = []
    one = intervals._bootstrap_t
    monkeypatch.setattr(intervals, "_bootstrap_t",
                        lambda m, *a: calls.append(m.size) or one(m, *a))
    intervals.skewed_intervals(ms, seeds=seeds)
    assert calls == []
