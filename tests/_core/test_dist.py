"""metrickit._core.dist returns what scipy.stats returns (to 1e-12), edges included."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats

from metrickit._core import dist

RNG = np.random.default_rng(20250714)
# probabilities: the edges, values outside [0, 1], NaN, the tails and the middle
Q = np.r_[0, 1, -0.1, 1.1, np.nan, 1e-300, 1e-12, 0.025, 0.05, 0.5, 0.95, 0.975, 1 - 1e-12,
          RNG.uniform(size=40)]
X = np.r_[-np.inf, np.inf, np.nan, 0, -1e-8, 1e-8, -40, 40, RNG.normal(scale=4, size=40)]
DFS = [0.5, 1, 2, 3.5, 9, 30, 1000, 1e7, np.inf, 0, -1, np.nan]


def _same(ours, theirs) -> None:
    ours, theirs = np.asarray(ours, dtype=float), np.asarray(theirs, dtype=float)
    assert ours.shape == theirs.shape
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isposinf(ours), np.isposinf(theirs))
    np.testing.assert_array_equal(np.isneginf(ours), np.isneginf(theirs))
    finite = np.isfinite(ours)
    np.testing.assert_allclose(ours[finite], theirs[finite], rtol=0, atol=1e-12)


@pytest.mark.parametrize("df", DFS)
def test_student_t(df):
    _same(dist.t_ppf(Q, df), stats.t.ppf(Q, df))
    _same(dist.t_isf(Q, df), stats.t.isf(Q, df))
    _same(dist.t_cdf(X, df), stats.t.cdf(X, df))
    _same(dist.t_sf(X, df), stats.t.sf(X, df))


def test_normal():
    _same(dist.norm_ppf(Q), stats.norm.ppf(Q))
    _same(dist.norm_isf(Q), stats.norm.isf(Q))
    _same(dist.norm_cdf(X), stats.norm.cdf(X))
    _same(dist.norm_sf(X), stats.norm.sf(X))


@pytest.mark.parametrize("df", DFS)
def test_chi_squared(df):
    x = np.abs(X) * 3
    _same(dist.chi2_ppf(Q, df), stats.chi2.ppf(Q, df))
    _same(dist.chi2_isf(Q, df), stats.chi2.isf(Q, df))
    _same(dist.chi2_cdf(x, df), stats.chi2.cdf(x, df))
    _same(dist.chi2_sf(X, df), stats.chi2.sf(X, df))  # negative x: below the support


@pytest.mark.parametrize("n", [0, 1, 5, 10, 40, 1000, 2.5, -1])
@pytest.mark.parametrize("p", [0, 1e-9, 0.3, 0.5, 0.99, 1, 1.2, np.nan])
def test_binomial(n, p):
    k = np.r_[-1, 0, 1, 2.5, 5, 10, 11, np.nan, np.arange(40)]
    _same(dist.binom_cdf(k, n, p), stats.binom.cdf(k, n, p))
    _same(dist.binom_sf(k, n, p), stats.binom.sf(k, n, p))


@pytest.mark.parametrize("a", [0.5, 1, 3, 40, 0, np.nan])
@pytest.mark.parametrize("b", [0.5, 2, 17, -1])
def test_beta(a, b):
    x = np.r_[-0.5, 0, 1e-9, 0.3, 0.5, 0.99, 1, 1.5, np.nan, RNG.uniform(size=20)]
    with warnings.catch_warnings():  # Boost's root finder gives up (and says so) at q=1e-300
        warnings.simplefilter("ignore", RuntimeWarning)
        _same(dist.beta_ppf(Q, a, b), stats.beta.ppf(Q, a, b))
    _same(dist.beta_cdf(x, a, b), stats.beta.cdf(x, a, b))
    _same(dist.beta_sf(x, a, b), stats.beta.sf(x, a, b))


@pytest.mark.parametrize("df", [1, 2, 9, 30, 1000, 0, np.nan])
@pytest.mark.parametrize("nc", [-3, 0, 0.5, 2, 8, np.nan])
def test_noncentral_t(df, nc):
    _same(dist.nct_cdf(X, df, nc), stats.nct.cdf(X, df, nc))
    _same(dist.nct_sf(X, df, nc), stats.nct.sf(X, df, nc))


def test_broadcasting_and_scalars():
    assert isinstance(dist.t_ppf(0.975, 3), float)
    assert dist.t_ppf(0.975, 3) == float(stats.t.ppf(0.975, 3))
    q = np.array([0.9, 0.95, 0.975])
    df = np.array([[2.0], [10.0]])
    _same(dist.t_ppf(q, df), stats.t.ppf(q, df))
    assert dist.t_ppf(q, df).shape == (2, 3)


def test_importing_it_leaves_scipy_stats_out():
    code = ("import sys, metrickit._core.dist as d; d.t_ppf(0.975, 3); d.norm_cdf(1.0); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"
