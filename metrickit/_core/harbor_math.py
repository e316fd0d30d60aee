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
zeroed for int items. CPython adds those errors left to right; :func:`harbor_sum`
first sums them in numpy's faster order and proves with an error bound that the
order cannot change the result's last bit, and only when it cannot prove it does a
second sequential ``cumsum`` follow.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit._core.schema import Parsed
from metrickit._core.values import INT, MISSING
from metrickit.errors import AggregationError

Number = int | float
_Agg = Callable[[npt.NDArray[np.float64], npt.NDArray[np.bool_]], Number]

__all__ = [
    "HARBOR_METRICS",
    "GroupAccumulator",
    "HarborAccumulator",
    "harbor_max",
    "harbor_mean",
    "harbor_min",
    "harbor_sum",
    "harbor_sums",
    "parsed_columns",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

# Integers whose magnitude stays below this are exact in float64, and so are the
# partial sums of such integers while they stay below it.
_EXACT = 2.0**53


def _int_sum(values: FloatArray) -> int:
    """Exact integer sum of integral float64 values (each |v| <= 2**53)."""
    return _int_prefix(0, values)[0]


# CPython's sum adds ints in a C long while it can; the first partial sum outside this
# range makes it fall back to plain ``+`` for the rest of the list: ints stay exact, but
# floats after that are added *without* compensation. A C long has 64 bits where Harbor
# runs (Linux, macOS); on Windows it has 32, which this does not model.
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _int_prefix(start: int, values: FloatArray) -> tuple[int, bool]:
    """``start + sum(values)`` exactly, and whether a partial sum left the C long range."""
    if values.size == 0:
        return start, False
    if abs(start) + float(np.abs(values).max()) * values.size < 2.0**62:
        return start + int(values.astype(np.int64).sum()), False
    total, overflowed = start, False
    for v in values.tolist():  # rare: ~1,000 values near 2**53 are needed to get here
        total += int(v)
        overflowed = overflowed or not _LONG_MIN <= total <= _LONG_MAX
    return total, overflowed


def _plain(values: FloatArray, running: float) -> float:
    """``running + v0 + v1 + ...`` left to right with no compensation (CPython after an
    int overflow)."""
    buf = np.empty(values.size + 1, dtype=np.float64)
    buf[0] = running
    buf[1:] = values
    return float(np.cumsum(buf, out=np.empty_like(buf))[-1])


# Phase 3 runs in pieces of this many items: the temporaries stay in the CPU cache, which
# makes the same numpy calls about twice as fast as on million-item arrays.
_CHUNK = 1 << 15
_U = 2.0**-53  # unit roundoff of float64


def _phase3(
    values: FloatArray, is_int: BoolArray, running: float, comp: float | None
) -> tuple[float, float, float]:
    """Add ``values`` to the running float as CPython's ``sum`` does in phase 3.

    Returns ``(running, c, abs_errors)``. With ``comp`` given, ``c`` is the compensation
    exactly as CPython accumulates it (``comp`` plus each float item's rounding error,
    added left to right) and ``abs_errors`` is 0. With ``comp=None`` the second
    sequential sum is skipped: ``c`` is the errors summed in another order (numpy's
    pairwise sum per piece) and ``abs_errors`` the sum of their magnitudes, from which
    :func:`_settle` bounds how far CPython's order can be (Higham, *Accuracy and
    Stability of Numerical Algorithms*, eq. 4.4).
    """
    n = values.size
    if n == 0:
        return running, (0.0 if comp is None else comp), 0.0
    size = min(n, _CHUNK)
    # Separate input and output buffers for the cumsums: an in-place accumulate keeps
    # the GIL (numpy buffers overlapping operands), a separate one runs beside others.
    src = np.empty(size + 1, dtype=np.float64)
    run = np.empty(size + 1, dtype=np.float64)
    err = np.empty(size + 1, dtype=np.float64)
    acc = np.empty(size + 1, dtype=np.float64)
    z = np.empty(size, dtype=np.float64)
    keep = np.empty(size, dtype=np.bool_)
    c = 0.0 if comp is None else comp
    magnitude = 0.0
    for lo in range(0, n, size):
        hi = min(lo + size, n)
        m = hi - lo
        x = src[: m + 1]
        x[0] = running
        x[1:] = values[lo:hi]
        r = run[: m + 1]
        # add.accumulate adds strictly left to right: the running float of CPython's loop
        np.cumsum(x, out=r)
        prev, total = r[:-1], r[1:]
        item = values[lo:hi]
        d = z[:m]
        e = err[1 : m + 1]
        growing = running >= 0.0 and item.min() >= 0.0 and item.max() <= running
        if growing:
            # Items >= 0 never larger than the running sum (so |prev| >= |item| for
            # each): Fast2Sum's (prev - total) + item is the exact error, which is also
            # CPython's own branch for this case.
            np.subtract(prev, total, out=e)
            np.add(e, item, out=e)
        else:
            # TwoSum: the exact error of prev + item (equal to Neumaier's branchy form,
            # as the exact error is unique): (prev - (total - d)) + (item - d),
            # d = total - prev.
            np.subtract(total, prev, out=d)
            np.subtract(total, d, out=e)
            np.subtract(prev, e, out=e)
            np.subtract(item, d, out=d)
            np.add(e, d, out=e)
        # Int items add no compensation. Multiplying by 0/1 is several times faster than
        # a masked assignment; it differs only where e is NaN/inf, which happens only
        # once the running sum is no longer finite, and then the result is that sum.
        np.logical_not(is_int[lo:hi], out=keep[:m])
        np.multiply(e, keep[:m], out=e)
        if comp is None:
            c += float(e.sum())
            if growing:
                # |error| <= u * |total| <= u * (last running sum) for each item here
                magnitude += m * _U * float(r[-1])
            else:
                magnitude += float(np.abs(e, out=d).sum())
        else:
            ce = err[: m + 1]
            ce[0] = c
            c = float(np.cumsum(ce, out=acc[: m + 1])[-1])
        running = float(r[-1])
    return running, c, magnitude


def _settle(running: float, c: float, magnitude: float, count: int) -> float | None:
    """CPython's final ``running + c`` when the order ``c`` was summed in cannot matter.

    The exact error sum differs from any ordering's float sum by at most
    ``gamma(count) * magnitude``, so CPython's compensation lies within twice that of
    ``c``. Rounding is monotone: if ``running`` plus either end of that interval rounds
    to the same float, that float is the result. None when it does not (then the
    caller sums the compensation in CPython's order).
    """
    if not (math.isfinite(running) and math.isfinite(c) and magnitude < 1e300) or running == 0:
        return None
    if count * _U > 1e-3:
        return None
    bound = 4.0 * count * _U * magnitude  # >= 2 gamma(count) * magnitude / (1 - gamma)
    low = math.nextafter(c - bound, -math.inf)
    high = math.nextafter(c + bound, math.inf)
    # With running != 0, a compensation of exactly 0 (skipped by CPython) gives
    # running, which lies between running + low and running + high as well.
    result = running + low
    return result if result == running + high else None


def _sum_steps(
    values: FloatArray, is_int: BoolArray, pieces: int = 1
) -> Generator[None, None, int | float]:
    """:func:`harbor_sum` as a generator that pauses before each of ``pieces`` parts of
    phase 3, so :func:`harbor_sums` can interleave several columns on a thread pool."""
    values = np.asarray(values, dtype=np.float64)
    is_int = np.asarray(is_int, dtype=np.bool_)
    n = values.size
    if n == 0:
        return 0
    floats = ~is_int
    if not floats.any():
        return _int_sum(values)
    k = int(np.argmax(floats))
    prefix, overflowed = _int_prefix(0, values[:k])
    first = float(prefix) + float(values[k])  # int + float, as PyNumber_Add does
    rest = values[k + 1 :]
    if rest.size == 0:
        return first
    rest_int = is_int[k + 1 :]
    if overflowed:
        with np.errstate(over="ignore", invalid="ignore"):
            return _plain(rest, first)
    with np.errstate(over="ignore", invalid="ignore"):
        # Fast exact case: every value integral and every partial sum exact, so no
        # step rounds and the compensation stays 0.
        if (
            abs(first) < _EXACT  # cheap scalar tests first: most float columns stop here
            and first == math.trunc(first)
            and bool(np.all(rest == np.trunc(rest)))
            and float(np.abs(rest).sum()) + abs(first) < _EXACT
        ):
            return float(first + rest.sum())
    running, c, magnitude = first, 0.0, 0.0
    bounds = np.linspace(0, rest.size, max(pieces, 1) + 1).astype(np.int64).tolist()
    for lo, hi in itertools.pairwise(bounds):
        if hi <= lo:
            continue  # fewer items than pieces
        yield
        with np.errstate(over="ignore", invalid="ignore"):
            running, dc, dm = _phase3(rest[lo:hi], rest_int[lo:hi], running, None)
        c += dc  # the pieces' error sums, added in one more order: still within the bound
        magnitude += dm
    settled = _settle(running, c, magnitude, rest.size)
    if settled is not None:
        return settled
    with np.errstate(over="ignore", invalid="ignore"):
        running, c, _ = _phase3(rest, rest_int, first, 0.0)
    if c != 0.0 and math.isfinite(c):
        running += c
    return running


def _finish(steps: Generator[None, None, int | float]) -> int | float:
    """Run a :func:`_sum_steps` generator to its result."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def harbor_sum(values: FloatArray, is_int: BoolArray) -> int | float:
    """``sum(list)`` as CPython 3.12/3.13 computes it, for the described list.

    ``values[i]`` is the cell's value; ``is_int[i]`` says whether Harbor holds it as a
    Python ``int`` (JSON integers, zero fills) rather than a ``float``.
    """
    return _finish(_sum_steps(values, is_int))


def harbor_sums(
    columns: list[tuple[FloatArray, BoolArray]], pool: Executor, pieces: int = 2
) -> list[int | float]:
    """:func:`harbor_sum` of several columns on a thread pool, bit for bit the same.

    Each column's sum is sequential, so a column is one chain of steps; splitting each
    chain into ``pieces`` and queueing the next piece behind the other columns' keeps
    every thread busy (three columns on two threads: 1.5 column-times, not 2).
    """
    results: list[Any] = [None] * len(columns)
    errors: list[BaseException] = []
    remaining = [len(columns)]
    done = threading.Condition()
    steps = [_sum_steps(v, i, pieces) for v, i in columns]

    def advance(j: int) -> None:
        while True:
            try:
                next(steps[j])
            except StopIteration as finished:
                results[j] = finished.value
            except BaseException as exc:  # handed to the caller below
                errors.append(exc)
            else:
                try:
                    pool.submit(advance, j)
                    return
                except RuntimeError:  # the pool is shutting down: finish here
                    continue
            with done:
                remaining[0] -= 1
                done.notify_all()
            return

    for j in range(len(columns)):
        try:
            pool.submit(advance, j)
        except RuntimeError:  # the pool is shutting down: sum in this thread
            advance(j)
    with done:
        done.wait_for(lambda: remaining[0] == 0)
    if errors:
        raise errors[0]
    return results


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
        self._overflowed = False  # the int prefix left the C long range: no compensation
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
            k = int(np.argmax(floats)) if floats.any() else values.size
            self._int, overflowed = _int_prefix(self._int, values[:k])
            self._overflowed = self._overflowed or overflowed
            if k == values.size:
                return
            self._float = float(self._int) + float(values[k])  # int + float, as PyNumber_Add
            values = values[k + 1 :]
            is_int = is_int[k + 1 :]
            if values.size == 0:
                return
        with np.errstate(over="ignore", invalid="ignore"):
            if self._overflowed:
                self._float = _plain(values, self._float)
            else:
                self._float, self._comp, _ = _phase3(values, is_int, self._float, self._comp)

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


def mean_or_zero(values: npt.NDArray[np.float64], is_int: npt.NDArray[np.bool_]) -> Number:
    # Empty input: 0, as the seed's example metric.py does (Harbor's own Mean would
    # divide by zero).
    return 0 if len(values) == 0 else harbor_mean(values, is_int)


def _empty_raises(name: str, fn: _Agg) -> _Agg:
    def wrapped(values: npt.NDArray[np.float64], is_int: npt.NDArray[np.bool_]) -> Number:
        if len(values) == 0:
            raise AggregationError(
                f"{name} of no rows is undefined; Harbor's {name.capitalize()} raises here too. "
                "Use 'mean' or 'sum' (0 for empty input) or check the input is not empty"
            )
        return fn(values, is_int)

    return wrapped


HARBOR_METRICS: dict[str, _Agg] = {
    "mean": mean_or_zero,
    "sum": harbor_sum,
    "min": _empty_raises("min", harbor_min),
    "max": _empty_raises("max", harbor_max),
}


class GroupAccumulator:
    """Harbor's state for one group: its row count and one accumulator per key seen."""

    def __init__(self) -> None:
        self.n = 0
        self.acc: dict[str, HarborAccumulator] = {}

    def feed(self, columns: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], n: int) -> None:
        for key, (_, _, present) in columns.items():
            if key not in self.acc and present.any():
                acc = HarborAccumulator()
                acc.add_int_zeros(self.n)  # earlier rows lacked the key: int 0 each
                self.acc[key] = acc
        for key, acc in self.acc.items():
            if key in columns:
                values, is_int, _ = columns[key]
                acc.update(values, is_int)
            else:
                acc.add_int_zeros(n)
        self.n += n

    def result(self, name: str, order: Sequence[str] | None) -> dict[str, Number]:
        keys = sorted(self.acc) if order is None else [k for k in order if k in self.acc]
        if len(keys) >= 2:
            return {key: _final(self.acc[key], name) for key in keys}
        if keys:
            return {name: _final(self.acc[keys[0]], name)}
        zeros = HarborAccumulator()
        zeros.add_int_zeros(self.n)
        return {name: _final(zeros, name)}


def _final(acc: HarborAccumulator, name: str) -> Number:
    if acc.n == 0:
        if name in ("mean", "sum"):
            return 0
        raise AggregationError(
            f"{name} of no rows is undefined; Harbor's {name.capitalize()} raises here too. "
            "Use 'mean' or 'sum' (0 for empty input) or check the input is not empty"
        )
    if name == "mean":
        return acc.mean()
    if name == "sum":
        return acc.sum()
    return acc.min() if name == "min" else acc.max()


def parsed_columns(parsed: Parsed) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    out = {}
    for key, values in parsed.values.items():
        kinds = parsed.kinds[key]
        out[key] = (values, (kinds == INT) | (kinds == MISSING), kinds != MISSING)
    return out
