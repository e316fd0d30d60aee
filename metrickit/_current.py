"""The measurements of the case being scored right now.

:func:`metrickit.score_cases` and :func:`metrickit.check_scorer` set them around each
scorer call (from the case's ``latency_ms`` and ``cost_usd`` columns); a scorer reads them
with :func:`observation` and :func:`service_cost`, and :func:`metrickit.reward` uses them
when it is not given the values. Context variables keep parallel calls apart.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["measured", "observation", "service_cost"]

_LATENCY_MS: ContextVar[float | None] = ContextVar("metrickit_latency_ms", default=None)
_COST_USD: ContextVar[float | None] = ContextVar("metrickit_cost_usd", default=None)


def _measurement(value: Any) -> float | None:
    """A measured value as a float, or None when it is missing (None, NaN, not a number)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def observation() -> float | None:
    """The measured latency of the current case in milliseconds, or None if not measured.

    Examples
    --------
    >>> import metrickit as mk
    >>> mk.observation() is None  # outside a scorer call
    True
    """
    return _LATENCY_MS.get()


def service_cost() -> float | None:
    """The measured cost of the current case in US dollars, or None if not measured.

    Examples
    --------
    >>> import metrickit as mk
    >>> mk.service_cost() is None  # outside a scorer call
    True
    """
    return _COST_USD.get()


@contextmanager
def measured(latency_ms: Any = None, cost_usd: Any = None) -> Iterator[None]:
    """Make ``latency_ms``/``cost_usd`` the current case's measurements inside the block."""
    latency_token = _LATENCY_MS.set(_measurement(latency_ms))
    cost_token = _COST_USD.set(_measurement(cost_usd))
    try:
        yield
    finally:
        _COST_USD.reset(cost_token)
        _LATENCY_MS.reset(latency_token)
