"""The few probability distributions metrickit's statistics need, without ``scipy.stats``.

Importing ``scipy.stats`` costs more than half a second (it pulls in ``scipy.spatial``,
``scipy.optimize``, ``scipy.sparse`` and a docstring parser), which a command such as
``metrickit report`` pays in full for a handful of quantiles. ``scipy.special`` holds the
functions ``scipy.stats`` itself calls for these distributions (Student's t: ``stdtr``,
``stdtrit``; the normal: ``ndtr``, ``ndtri``; chi-squared: ``chdtr``, ``chdtrc``,
``chdtri``, ``gammaincinv``; the beta: ``betainc``, ``betaincc``, Boost's ``_beta_ppf``;
the binomial: Boost's ``_binom_cdf``, ``_binom_sf``; the noncentral t: ``nctdtr`` and
Boost's ``_nct_sf``), so the numbers are the ones
``scipy.stats`` returns (``tests/_core/test_dist.py`` checks them to 1e-12), and the edges
follow ``scipy.stats`` too: a probability outside [0, 1] or a parameter outside its domain
gives NaN, a quantile of 0 or 1 the end of the support.

Every function takes numbers or arrays (broadcast together) and returns a float for
scalar arguments, else an array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special as sc

# Boost's binomial and noncentral t tails and beta quantile, which scipy.stats calls by
# these private names
from scipy.special import _ufuncs

FloatArray = npt.NDArray[np.float64]
Real = float | FloatArray

__all__ = [
    "beta_cdf", "beta_ppf", "beta_sf", "binom_cdf", "binom_sf", "chi2_cdf", "chi2_isf",
    "chi2_ppf", "chi2_sf", "nct_cdf", "nct_sf", "norm_cdf", "norm_isf", "norm_ppf", "norm_sf",
    "t_cdf", "t_isf", "t_ppf", "t_sf",
]


def _out(x: Any) -> Real:
    out = np.asarray(x, dtype=np.float64)
    return float(out) if out.ndim == 0 else out


def _arrays(*args: npt.ArrayLike) -> list[FloatArray]:
    return [np.asarray(a, dtype=np.float64) for a in np.broadcast_arrays(*args)]


def _probability(
    core: Callable[..., Any], lower: float, upper: float, q: npt.ArrayLike,
    valid: Callable[..., Any], *params: npt.ArrayLike,
) -> Real:
    """A quantile function as ``scipy.stats``' ``ppf``/``isf`` defines its edges: NaN for
    ``q`` outside [0, 1] or invalid parameters, ``lower`` at 0 and ``upper`` at 1."""
    q_, *p = _arrays(q, *params)
    ok = valid(*p)
    with np.errstate(all="ignore"):
        inner = core(q_, *p)
        out = np.where(ok & (q_ > 0) & (q_ < 1), inner, np.nan)
    out = np.where(ok & (q_ == 0), lower, out)
    out = np.where(ok & (q_ == 1), upper, out)
    return _out(out)


def _tail(
    core: Callable[..., Any], low_value: float, high_value: float, low: float, high: float,
    x: npt.ArrayLike, valid: Callable[..., Any], *params: npt.ArrayLike,
) -> Real:
    """A cdf or sf on the support (``low``, ``high``), as ``scipy.stats`` defines its edges:
    ``low_value`` at or below ``low``, ``high_value`` at or above ``high``, NaN for a NaN
    ``x`` or invalid parameters."""
    x_, *p = _arrays(x, *params)
    ok = valid(*p) & ~np.isnan(x_)
    with np.errstate(all="ignore"):
        inner = core(x_, *p)
    out = np.where(x_ <= low, low_value, np.where(x_ >= high, high_value, inner))
    return _out(np.where(ok, out, np.nan))


def _positive(df: FloatArray) -> Any:
    return df > 0


def _any(*_: FloatArray) -> Any:
    return True


# -- Student's t -----------------------------------------------------------------------------


def t_cdf(x: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.t.cdf(x, df)``."""
    return _tail(lambda x_, d: sc.stdtr(d, x_), 0.0, 1.0, -np.inf, np.inf, x, _positive, df)


def t_sf(x: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.t.sf(x, df)``."""
    return _tail(lambda x_, d: sc.stdtr(d, -x_), 1.0, 0.0, -np.inf, np.inf, x, _positive, df)


def t_ppf(q: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.t.ppf(q, df)``."""
    return _probability(lambda q_, d: sc.stdtrit(d, q_), -np.inf, np.inf, q, _positive, df)


def t_isf(q: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.t.isf(q, df)``."""
    return _probability(lambda q_, d: -sc.stdtrit(d, q_), np.inf, -np.inf, q, _positive, df)


# -- the standard normal ---------------------------------------------------------------------


def norm_cdf(x: npt.ArrayLike) -> Real:
    """``scipy.stats.norm.cdf(x)``."""
    return _tail(sc.ndtr, 0.0, 1.0, -np.inf, np.inf, x, _any)


def norm_sf(x: npt.ArrayLike) -> Real:
    """``scipy.stats.norm.sf(x)``."""
    return _tail(lambda x_: sc.ndtr(-x_), 1.0, 0.0, -np.inf, np.inf, x, _any)


def norm_ppf(q: npt.ArrayLike) -> Real:
    """``scipy.stats.norm.ppf(q)``."""
    return _probability(sc.ndtri, -np.inf, np.inf, q, _any)


def norm_isf(q: npt.ArrayLike) -> Real:
    """``scipy.stats.norm.isf(q)``."""
    return _probability(lambda q_: -sc.ndtri(q_), np.inf, -np.inf, q, _any)


# -- chi-squared -----------------------------------------------------------------------------


def chi2_cdf(x: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.chi2.cdf(x, df)``."""
    return _tail(lambda x_, d: sc.chdtr(d, x_), 0.0, 1.0, 0.0, np.inf, x, _positive, df)


def chi2_sf(x: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.chi2.sf(x, df)``."""
    return _tail(lambda x_, d: sc.chdtrc(d, x_), 1.0, 0.0, 0.0, np.inf, x, _positive, df)


def chi2_ppf(q: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.chi2.ppf(q, df)``."""
    return _probability(lambda q_, d: 2 * sc.gammaincinv(d / 2, q_), 0.0, np.inf, q,
                        _positive, df)


def chi2_isf(q: npt.ArrayLike, df: npt.ArrayLike) -> Real:
    """``scipy.stats.chi2.isf(q, df)``."""
    return _probability(lambda q_, d: sc.chdtri(d, q_), np.inf, 0.0, q, _positive, df)


# -- the binomial ----------------------------------------------------------------------------


def _binom_valid(n: FloatArray, p: FloatArray) -> Any:
    return (n >= 0) & (n == np.floor(n)) & (p >= 0) & (p <= 1)


def binom_cdf(k: npt.ArrayLike, n: npt.ArrayLike, p: npt.ArrayLike) -> Real:
    """``scipy.stats.binom.cdf(k, n, p)``: P(X <= k), ``k`` rounded down."""
    k_, n_, p_ = _arrays(k, n, p)
    ok = _binom_valid(n_, p_) & ~np.isnan(k_)
    kf = np.floor(k_)
    with np.errstate(all="ignore"):
        inner = _ufuncs._binom_cdf(kf, n_, p_)
    out = np.where(kf < 0, 0.0, np.where(kf >= n_, 1.0, inner))
    return _out(np.where(ok, out, np.nan))


def binom_sf(k: npt.ArrayLike, n: npt.ArrayLike, p: npt.ArrayLike) -> Real:
    """``scipy.stats.binom.sf(k, n, p)``: P(X > k), ``k`` rounded down."""
    k_, n_, p_ = _arrays(k, n, p)
    ok = _binom_valid(n_, p_) & ~np.isnan(k_)
    kf = np.floor(k_)
    with np.errstate(all="ignore"):
        inner = _ufuncs._binom_sf(kf, n_, p_)
    out = np.where(kf < 0, 1.0, np.where(kf >= n_, 0.0, inner))
    return _out(np.where(ok, out, np.nan))


# -- the beta (exact binomial intervals) ------------------------------------------------------


def _beta_valid(a: FloatArray, b: FloatArray) -> Any:
    return (a > 0) & (b > 0)


def beta_cdf(x: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> Real:
    """``scipy.stats.beta.cdf(x, a, b)``."""
    return _tail(lambda x_, a_, b_: sc.betainc(a_, b_, x_), 0.0, 1.0, 0.0, 1.0, x,
                 _beta_valid, a, b)


def beta_sf(x: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> Real:
    """``scipy.stats.beta.sf(x, a, b)``."""
    return _tail(lambda x_, a_, b_: sc.betaincc(a_, b_, x_), 1.0, 0.0, 0.0, 1.0, x,
                 _beta_valid, a, b)


def beta_ppf(q: npt.ArrayLike, a: npt.ArrayLike, b: npt.ArrayLike) -> Real:
    """``scipy.stats.beta.ppf(q, a, b)`` (Boost's inverse, as ``scipy.stats`` calls it)."""
    return _probability(lambda q_, a_, b_: _ufuncs._beta_ppf(q_, a_, b_), 0.0, 1.0, q,
                        _beta_valid, a, b)


# -- the noncentral t (power of a t test) ----------------------------------------------------


def _nct_valid(df: FloatArray, nc: FloatArray) -> Any:
    return (df > 0) & np.isfinite(nc)


def nct_cdf(x: npt.ArrayLike, df: npt.ArrayLike, nc: npt.ArrayLike) -> Real:
    """``scipy.stats.nct.cdf(x, df, nc)``."""
    return _tail(lambda x_, d, c: sc.nctdtr(d, c, x_), 0.0, 1.0, -np.inf, np.inf, x,
                 _nct_valid, df, nc)


def nct_sf(x: npt.ArrayLike, df: npt.ArrayLike, nc: npt.ArrayLike) -> Real:
    """``scipy.stats.nct.sf(x, df, nc)``: Boost's upper tail, which ``scipy.stats`` calls
    (``1 - nctdtr`` would lose a small tail's digits and ``nctdtr`` is NaN far out)."""
    return _tail(lambda x_, d, c: np.clip(_ufuncs._nct_sf(x_, d, c), 0, 1), 1.0, 0.0,
                 -np.inf, np.inf, x, _nct_valid, df, nc)
