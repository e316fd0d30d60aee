"""The measurements of the case being scored right now.

:func:`metrickit.score_cases` and :func:`metrickit.check_scorer` set them around each
scorer call (from the case's ``latency_ms`` and ``cost_usd`` columns); a scorer reads them
with :func:`observation` and :func:`service_cost`, and :func:`metrickit.reward` uses them
when it is not given the values. Context variables keep parallel calls apart.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["measured", "observation", "service_cost"]

_LATENCY_MS: ContextVar[float | None] = ContextVar("metrickit_latency_ms", default=None)
_COST_USD: ContextVar[float | None] = ContextVar("metrickit_cost_usd", default=None)


def current_measurement(value: Any, what: str = "measurement") -> float | None:
    """A measured value as a float, or None when it was not measured (None or NaN).

    Anything else that is not a real number (a string such as ``"fast"`` or ``"1500"``, a
    bool, a list) is an error, not "not measured": it would otherwise hide a broken
    column behind a 0 part score.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        from metrickit.errors import RewardInputError

        raise RewardInputError(
            f"{what} is {value!r} ({type(value).__name__}); expected a number, "
            "or None/NaN when it was not measured"
        )
    number = float(value)
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
    latency_token = _LATENCY_MS.set(current_measurement(latency_ms, "latency_ms"))
    cost_token = _COST_USD.set(current_measurement(cost_usd, "cost_usd"))
    try:
        yield
    finally:
        _COST_USD.reset(cost_token)
        _LATENCY_MS.reset(latency_token)
