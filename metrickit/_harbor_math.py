"""Harbor's arithmetic, reproduced bit for bit with vectorised numpy.

Harbor 0.25 aggregates with Python builtins on Python >= 3.12:
``sum(values) / len(values)``, ``sum``, ``min`` and ``max`` over a list in which
every value is a Python ``int`` or ``float`` (``None`` rows and missing keys are the
int ``0``). On CPython 3.12 and 3.13 ``sum`` works in three phases:

1. while items are ints, it adds them exactly;
2. the first float is added to that int prefix with an ordinary ``int + float``;
3. from then on floats are added with Neumaier compensation, while ints are added
   to the running float *without* compensation; the compensation is added once at
   the end if it is finite and non-zero.

So ``sum([1e16, 1.0, -1e16]) == 1.0`` but ``sum([1e16, 1, -1e16]) == 0.0``. The
functions here take a float64 value array plus a boolean "this cell was a JSON
integer" array and follow exactly those steps. Phase 3 is vectorised: the running
float is a sequential ``cumsum`` (numpy's ``add.accumulate`` adds strictly left
to right), the per-step compensation is the exact rounding error of each addition
(TwoSum, identical to Neumaier's branch form because the exact error is unique),
zeroed for int items, and summed again with a sequential ``cumsum``.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["HarborAccumulator", "harbor_max", "harbor_mean", "harbor_min", "harbor_sum"]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# Integers whose magnitude stays below this are exact in float64, and so are the
# partial sums of such integers while they stay below it.
_EXACT = 2.0**53


def _int_sum(values: FloatArray) -> int:
    """Exact integer sum of integral float64 values (each |v| <= 2**53)."""
    if values.size == 0:
        return 0
    bound = float(np.abs(values).max()) * values.size
    if bound < 2.0**62:
        return int(values.astype(np.int64).sum())
    return sum(int(v) for v in values.tolist())


def harbor_sum(values: FloatArray, is_int: BoolArray) -> int | float:
    """``sum(list)`` as CPython 3.12/3.13 computes it, for the described list.

    ``values[i]`` is the cell's value; ``is_int[i]`` says whether Harbor holds it as a
    Python ``int`` (JSON integers, zero fills) rather than a ``float``.
    """
    values = np.asarray(values, dtype=np.float64)
    is_int = np.asarray(is_int, dtype=np.bool_)
    n = values.size
    if n == 0:
        return 0
    floats = ~is_int
    if not floats.any():
        return _int_sum(values)
    k = int(np.argmax(floats))
    prefix = _int_sum(values[:k])
    first = float(prefix) + float(values[k])  # int + float, as PyNumber_Add does
    rest = values[k + 1 :]
    if rest.size == 0:
        return first
    with np.errstate(over="ignore", invalid="ignore"):
        # Fast exact case: every value integral and every partial sum exact, so no
        # step rounds and the compensation stays 0.
        if (
            abs(first) < _EXACT
            and float(np.abs(rest).sum()) + abs(first) < _EXACT
            and first == math.trunc(first)
            and bool(np.all(rest == np.trunc(rest)))
        ):
            return float(first + rest.sum())
        running = np.empty(rest.size + 1, dtype=np.float64)
        running[0] = first
        running[1:] = rest
        np.cumsum(running, out=running)
        prev = running[:-1]
        total = running[1:]
        # TwoSum: exact error of prev + rest (equals Neumaier's branchy form), computed
        # in place: err = (prev - (total - z)) + (rest - z) with z = total - prev.
        z = np.subtract(total, prev)
        err = np.subtract(total, z)
        np.subtract(prev, err, out=err)
        np.subtract(rest, z, out=z)
        np.add(err, z, out=err)
        # Int items add no compensation. Multiplying by 0/1 is several times faster than
        # a masked assignment; it differs only where err is NaN/inf, which happens only
        # once the running sum is no longer finite, and then the result is that sum.
        np.multiply(err, ~is_int[k + 1 :], out=err)
        comp = float(np.cumsum(err, out=err)[-1]) if err.size else 0.0
    result = float(running[-1])
    if comp != 0.0 and math.isfinite(comp):
        result += comp
    return result


def harbor_mean(values: FloatArray, is_int: BoolArray) -> float:
    """``sum(values) / len(values)``; raises ``ZeroDivisionError`` on empty input."""
    total = harbor_sum(values, is_int)
    return total / len(values)


def _extreme(values: FloatArray, is_int: BoolArray, *, smallest: bool) -> int | float:
    if len(values) == 0:
        raise ValueError(f"{'min' if smallest else 'max'}() iterable argument is empty")
    values = np.asarray(values, dtype=np.float64)
    target = values.min() if smallest else values.max()
    # Python's min/max keep the first extremal item, with its own type.
    first = int(np.argmax(values == target))
    value = float(values[first])
    return int(value) if bool(is_int[first]) else value


def harbor_min(values: FloatArray, is_int: BoolArray) -> int | float:
    """``min(list)``: the first smallest item, keeping its int/float type."""
    return _extreme(values, is_int, smallest=True)


def harbor_max(values: FloatArray, is_int: BoolArray) -> int | float:
    """``max(list)``: the first largest item, keeping its int/float type."""
    return _extreme(values, is_int, smallest=False)


class HarborAccumulator:
    """Harbor's ``sum``/``min``/``max`` of one column, fed in order, chunk by chunk.

    The state is exactly what CPython's ``sum`` carries from one item to the next (the
    exact int prefix, then the running float and its Neumaier compensation), and what
    ``min``/``max`` carry (the first extremal item with its type), so feeding a column
    in any number of pieces gives the same bits as :func:`harbor_sum`,
    :func:`harbor_min` and :func:`harbor_max` on the whole column.

    Examples
    --------
    >>> import numpy as np
    >>> acc = HarborAccumulator()
    >>> acc.update(np.array([1e16, 1.0]), np.array([False, False]))
    >>> acc.update(np.array([-1e16]), np.array([False]))
    >>> acc.sum(), acc.n
    (1.0, 3)
    """

    def __init__(self) -> None:
        self.n = 0
        self._int = 0  # phase 1: exact sum of the int prefix
        self._float: float | None = None  # phase 3: running float, None while in phase 1
        self._comp = 0.0
        self._min: tuple[float, bool] | None = None
        self._max: tuple[float, bool] | None = None

    def update(self, values: FloatArray, is_int: BoolArray) -> None:
        """Add the next items: their values and whether each is a Python ``int``."""
        values = np.asarray(values, dtype=np.float64)
        is_int = np.asarray(is_int, dtype=np.bool_)
        if values.size == 0:
            return
        self.n += int(values.size)
        self._update_extremes(values, is_int)
        if self._float is None:
            floats = ~is_int
            if not floats.any():
                self._int += _int_sum(values)
                return
            k = int(np.argmax(floats))
            self._int += _int_sum(values[:k])
            self._float = float(self._int) + float(values[k])  # int + float, as PyNumber_Add
            values = values[k + 1 :]
            is_int = is_int[k + 1 :]
            if values.size == 0:
                return
        with np.errstate(over="ignore", invalid="ignore"):
            running = np.empty(values.size + 1, dtype=np.float64)
            running[0] = self._float
            running[1:] = values
            np.cumsum(running, out=running)
            prev = running[:-1]
            total = running[1:]
            z = total - prev
            err = np.empty(values.size + 1, dtype=np.float64)
            err[0] = self._comp  # the compensation is itself summed left to right
            err[1:] = (prev - (total - z)) + (values - z)
            err[1:][is_int] = 0.0
            np.cumsum(err, out=err)
        self._float = float(running[-1])
        self._comp = float(err[-1])

    def add_int_zeros(self, count: int) -> None:
        """Add ``count`` int zeros (null rows, missing keys) without materialising them."""
        if count <= 0:
            return
        self.n += count
        if self._float is not None:
            self._float = self._float + 0.0  # (double)0 added plainly: -0.0 becomes 0.0
        zero = (0.0, True)
        if self._min is None or self._min[0] > 0.0:
            self._min = zero
        if self._max is None or self._max[0] < 0.0:
            self._max = zero

    def _update_extremes(self, values: FloatArray, is_int: BoolArray) -> None:
        low = values.min()
        at = int(np.argmax(values == low))
        if self._min is None or low < self._min[0]:  # ties keep the earlier item
            self._min = (float(values[at]), bool(is_int[at]))
        high = values.max()
        at = int(np.argmax(values == high))
        if self._max is None or high > self._max[0]:
            self._max = (float(values[at]), bool(is_int[at]))

    def sum(self) -> int | float:
        """``sum(items)``: an int while every item was an int."""
        if self._float is None:
            return self._int
        result = self._float
        if self._comp != 0.0 and math.isfinite(self._comp):
            result += self._comp
        return result

    def mean(self) -> float:
        """``sum(items) / len(items)``; raises ``ZeroDivisionError`` when empty."""
        return self.sum() / self.n

    def min(self) -> int | float:
        """``min(items)``; raises ``ValueError`` when empty."""
        return self._extreme(self._min, "min")

    def max(self) -> int | float:
        """``max(items)``; raises ``ValueError`` when empty."""
        return self._extreme(self._max, "max")

    @staticmethod
    def _extreme(item: tuple[float, bool] | None, name: str) -> int | float:
        if item is None:
            raise ValueError(f"{name}() iterable argument is empty")
        value, is_int = item
        return int(value) if is_int else value
