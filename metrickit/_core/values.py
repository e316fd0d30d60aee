"""The reward value rules shared by every reader: what a valid reward value is, and the
codes of the kind and status columns. Plain Python (no numpy), so the per-trial reader
:mod:`metrickit.io.harbor_trials` stays free of array libraries too."""

from __future__ import annotations

import math
from typing import Any

KINDS = ("missing", "int", "float", "bool")
STATUSES = ("ok", "empty", "null", "invalid")
KIND_PREFIX = "_kind_"
META_COLUMNS = ("_source", "_line", "_status")
MISSING, INT, FLOAT, BOOL = range(4)
OK, EMPTY, NULL, INVALID = range(4)

# Integers beyond this cannot be held exactly in a float64 column.
MAX_EXACT_INT = 2**53


class NonFinite:
    """Placeholder for the NaN/Infinity tokens Python's json accepts and Harbor must not see."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return self.token


def is_null(value: Any) -> bool:
    """None, NaN, or pandas' NA/NaT (checked by type name: no pandas import needed)."""
    return value is None or (isinstance(value, float) and value != value) or (
        type(value).__name__ in ("NAType", "NaTType")
    )


def short_repr(value: Any, limit: int = 60) -> str:
    if isinstance(value, str) and len(value) > 2 * limit:
        # repr of a prefix, not of the whole (a 150 MB string would be copied once more);
        # the quotes it holds make repr pick the quote character it picks for the whole
        value = value[:limit] + "'" * ("'" in value) + '"' * ('"' in value)
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits() cannot be repr'd
        text = f"<{type(value).__name__} too large to show>"
    except Exception as exc:  # a user object's broken __repr__ must not break a report
        text = f"<unrepresentable {type(value).__name__}: {exc}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def describe_value(value: Any, limit: int = 80) -> str:
    """A value and its type for an error message: ``'high' (str)``, capped in length."""
    return f"{short_repr(value, limit)} ({type(value).__name__})"


def is_number(value: Any) -> bool:
    """An int or float, Python's or numpy's; a bool is not a number here."""
    import numbers

    return isinstance(value, numbers.Real) and not isinstance(value, bool) and (
        isinstance(value, int | float) or type(value).__module__ == "numpy"
    )


def is_finite_number(value: Any) -> bool:
    """:func:`is_number` and finite; an int too large for a float is not finite."""
    if not is_number(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def check_value(key: str, value: Any) -> tuple[float, int] | str:
    """(value, kind) for a valid reward value, else the reason it is not one."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0), BOOL
    if isinstance(value, int):
        if abs(value) > MAX_EXACT_INT:
            return (
                f"value of {key!r} is the integer {short_repr(value)}, too large to hold exactly; "
                f"expected a number with |x| <= 2**53"
            )
        return float(value), INT
    if isinstance(value, float):
        if not math.isfinite(value):
            why = "not a number" if math.isnan(value) else "the number overflows a float"
            return f"value of {key!r} is {value!r} ({why}); expected a finite number"
        return value, FLOAT
    if isinstance(value, NonFinite):
        return f"value of {key!r} is {value.token}; expected a finite number"
    if value is None:
        type_name = "null"
    elif isinstance(value, dict):
        type_name = "object"
        value = dict(value)
    else:
        type_name = type(value).__name__
    return (
        f"value of {key!r} is {short_repr(value)} ({type_name}); "
        "expected a finite number (JSON int, float, true or false)"
    )


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
