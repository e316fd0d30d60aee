"""How the report and the plots write a number: one rounding rule, one formatter per kind.

A quantity printed in two places (a table and a plot label, two tables, a verdict and a
table) goes through the same function here, so it never reads as two values. The rule is
numpy's and pandas' ``round``: the value is scaled to the digits shown and rounded half to
even (``round(0.6375, 3)`` is 0.638 in pandas, and so here), then written with exactly that
many digits. A table printed with ``DataFrame.round(3)`` therefore agrees with the report.

Plain Python (no numpy), so the report's text can be formatted without loading anything.
Every function returns None for a value that is not a finite number (NA: shown as
*missing*, never as 0).
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["duration", "finite", "fixed", "interval", "rounded", "share", "significant",
           "time_unit"]


def finite(x: Any) -> float | None:
    """``x`` as a float, or None when it is not a finite number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def rounded(v: float, digits: int) -> float:
    """``v`` rounded to ``digits`` decimals as ``numpy.round`` does (scaled, then half to
    even); never ``-0.0``.

    Examples
    --------
    >>> rounded(0.6375, 3), rounded(0.0625, 3), rounded(-0.0001, 3)
    (0.638, 0.062, 0.0)
    """
    if digits >= 0:
        scale = 10.0**digits
        out = round(v * scale) / scale
    else:
        scale = 10.0**-digits
        out = round(v / scale) * scale
    return out + 0.0 if out != 0 else 0.0


def fixed(x: Any, digits: int = 3, *, sign: bool = False) -> str | None:
    """``x`` with ``digits`` decimals (``sign``: a leading ``+`` on positive values).

    Examples
    --------
    >>> fixed(0.6375), fixed(0.125, sign=True), fixed(float("nan")) is None
    ('0.638', '+0.125', True)
    """
    v = finite(x)
    if v is None:
        return None
    r = rounded(v, digits)
    return f"{r:+.{digits}f}" if sign and r != 0 else f"{r:.{digits}f}"


def interval(low: Any, high: Any, digits: int = 3, *, sign: bool = False) -> str | None:
    """``[low, high]`` with :func:`fixed`; None when either end is not a number."""
    lo, hi = fixed(low, digits, sign=sign), fixed(high, digits, sign=sign)
    return None if lo is None or hi is None else f"[{lo}, {hi}]"


def share(x: Any) -> str | None:
    """A proportion as a percentage: whole percents, one decimal (more if needed) near 0
    and 1 so that a share that is not exactly 0 or 1 never reads as 0 % or 100 %.

    Examples
    --------
    >>> share(0.276), share(0.996), share(0.9996), share(0.003), share(1.0)
    ('28%', '99.6%', '99.96%', '0.3%', '100%')
    """
    v = finite(x)
    if v is None:
        return None
    percent = v * 100
    digits = 1 if 0 < abs(v) < 0.095 or 0.995 <= abs(v) < 1 else 0
    r = rounded(percent, digits)
    while v not in (0.0, 1.0, -1.0) and abs(r) in (0.0, 100.0) and digits < 6:
        digits += 1
        r = rounded(percent, digits)
    return f"{r:.{digits}f}%"


def significant(x: Any, digits: int = 3) -> str | None:
    """``x`` to ``digits`` significant digits, written as ``format(x, ".3g")`` writes it
    (p-values: ``0.0289``, ``3.8e-06``).

    Examples
    --------
    >>> significant(0.028913), significant(3.8e-06), significant(1.0)
    ('0.0289', '3.8e-06', '1')
    """
    v = finite(x)
    if v is None:
        return None
    if v == 0:
        return "0"
    r = rounded(v, digits - 1 - math.floor(math.log10(abs(v))))
    return f"{r:.{digits}g}"


_TIME_UNITS = (("ms", 1.0, 0.0), ("s", 1e3, 1e3), ("min", 6e4, 1.2e5), ("h", 3.6e6, 7.2e6))


def time_unit(values: Any) -> tuple[str, float]:
    """The unit a column of durations in ms is written in, and its size in ms: ms below
    1 s, s below 2 min, min below 2 h, else h, by the median of the finite positive values
    (the plots' axes choose theirs by the same rule), so a column reads in one unit.

    Examples
    --------
    >>> time_unit([72_600, 240_000]), time_unit([]), time_unit([250.0])
    (('min', 60000.0), ('ms', 1.0), ('ms', 1.0))
    """
    xs = sorted(v for v in (finite(x) for x in values) if v is not None and v > 0)
    if not xs:
        return "ms", 1.0
    mid = len(xs) // 2
    typical = xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
    unit, scale = "ms", 1.0
    for name, size, limit in _TIME_UNITS:
        if typical >= limit:
            unit, scale = name, size
    return unit, scale


def duration(ms: Any, unit: tuple[str, float] | None = None) -> str | None:
    """A duration given in ms, in ``unit`` (default: its own, :func:`time_unit`): whole ms,
    otherwise one decimal.

    Examples
    --------
    >>> duration(72_600), duration(132_000), duration(72_600, time_unit([132_000]))
    ('72.6 s', '2.2 min', '1.2 min')
    """
    v = finite(ms)
    if v is None:
        return None
    name, size = unit if unit is not None else time_unit([v])
    return f"{fixed(v / size, 0 if name == 'ms' else 1)} {name}"
