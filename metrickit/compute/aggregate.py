"""Harbor-identical aggregation of reward frames.

:func:`aggregate` reproduces Harbor 0.25's ``Mean``, ``Sum``, ``Min`` and ``Max``
(``harbor/metrics/base.py::aggregate_reward_dicts``):

* the reward keys are the sorted union of the keys that occur;
* at most one key: ``{"<metric>": value}`` (the key's own name is dropped);
* two or more: ``{key: value}`` per key, sorted;
* a ``null`` row or a missing key counts as the integer 0.

The arithmetic is Python's own (see :mod:`metrickit._core.harbor_math`), so results equal
Harbor's bit for bit, including int/float result types.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit._core.harbor_math import harbor_max, harbor_mean, harbor_min, harbor_sum, harbor_sums
from metrickit.compute.stream import aggregate_lazy, is_lazy
from metrickit.errors import AggregationError
from metrickit.io.rewards import (
    INT,
    INVALID,
    KIND_PREFIX,
    MISSING,
    STATUSES,
    read_rewards,
    reward_keys,
)

__all__ = ["HARBOR_METRICS", "aggregate", "reward_arrays"]

Number = int | float
# Below this many rows a thread pool costs more than it saves.
_THREADED_ROWS = 100_000
_POOL_PREFIX = "metrickit-aggregate"
_Agg = Callable[[npt.NDArray[np.float64], npt.NDArray[np.bool_]], Number]


def _mean(values: npt.NDArray[np.float64], is_int: npt.NDArray[np.bool_]) -> Number:
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
    "mean": _mean,
    "sum": harbor_sum,
    "min": _empty_raises("min", harbor_min),
    "max": _empty_raises("max", harbor_max),
}


def _is_frame(obj: Any) -> bool:
    try:
        import narwhals as nw

        nw.from_native(obj)
    except TypeError:
        return False
    return True


def reward_arrays(
    frame: Any,
) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Keys that occur, and per key: values, is-int mask, present mask (numpy arrays).

    Works for frames from :func:`read_rewards` (either backend) and for plain frames of
    numeric reward columns (integer dtype = ints, float = floats, null = missing).
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    columns = list(nf.columns)
    if "_status" in columns:
        invalid = category_codes(nf.get_column("_status"), STATUSES) == INVALID
        if invalid.any():
            lines = (
                nf.get_column("_line").to_numpy()[invalid][:5].tolist()
                if "_line" in columns
                else []
            )
            raise AggregationError(
                f"the frame has {int(invalid.sum())} invalid row(s) (lines {lines}...) from "
                "read_rewards(..., errors='report'); fix the input or filter them out "
                "explicitly (frame[frame['_status'] != 'invalid']) before aggregating"
            )
    keys = reward_keys(frame)
    values: dict[str, np.ndarray] = {}
    is_int: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    schema = nf.schema
    for key in keys:
        column = nf.get_column(key)
        kind_name = KIND_PREFIX + key
        if kind_name in columns:
            codes = _kind_codes(nf.get_column(kind_name))
            present[key] = codes != MISSING
            is_int[key] = codes <= INT  # MISSING (0) and INT (1): Harbor holds an int
            values[key] = column.to_numpy().astype(np.float64, copy=False)
        else:
            nulls = column.is_null().to_numpy()
            present[key] = ~nulls
            if schema[key].is_integer():
                is_int[key] = np.ones(len(column), dtype=np.bool_)
            else:
                is_int[key] = nulls.copy()
            values[key] = column.fill_null(0).to_numpy().astype(np.float64, copy=False)
            if not np.all(np.isfinite(values[key])):
                bad = int(np.argmin(np.isfinite(values[key])))
                raise AggregationError(
                    f"column {key!r} has a non-finite value {values[key][bad]!r} at row {bad}; "
                    "expected finite numbers (Harbor rejects NaN and infinity)"
                )
    keys = [k for k in keys if present[k].any()]
    return keys, values, is_int, present


def category_codes(series: Any, categories: Sequence[str]) -> npt.NDArray[np.uint8]:
    """Codes of a categorical column against ``categories`` (their positions), fast.

    Handles pandas Categorical and polars Enum/Categorical without turning each cell into
    a string; falls back to strings for any other column type.
    """
    native = series.to_native() if hasattr(series, "to_native") else series
    wanted = {c: i for i, c in enumerate(categories)}
    if hasattr(native, "cat") and hasattr(native.cat, "codes"):  # pandas categorical
        present = [str(c) for c in native.cat.categories]
        codes = native.cat.codes.to_numpy()
        if present == list(categories)[: len(present)] and codes.dtype == np.int8:
            return codes.view(np.uint8)  # already our codes; NaN's -1 reads as 255
        lookup = np.array([wanted.get(c, 255) for c in present] + [255])
        return lookup[codes].astype(np.uint8)  # code -1 (NaN) indexes the trailing 255
    import polars as pl

    if isinstance(native, pl.Series) and isinstance(native.dtype, pl.Enum):
        cats = list(native.dtype.categories)
        if cats == list(categories)[: len(cats)] and len(cats) < 255 and not native.has_nulls():
            return native.to_physical().to_numpy().astype(np.uint8)  # already our codes
        lookup = np.array([wanted.get(c, 255) for c in cats] + [255])
        physical = native.to_physical().fill_null(len(cats)).to_numpy()
        return lookup[physical].astype(np.uint8)
    values = [str(v) for v in (native.to_list() if hasattr(native, "to_list") else native)]
    return np.array([wanted.get(v, 255) for v in values], dtype=np.uint8)


def _categories(series: Any) -> list[str]:
    """The categories a categorical column can hold, else its distinct values."""
    native = series.to_native() if hasattr(series, "to_native") else series
    if hasattr(native, "cat") and hasattr(native.cat, "categories"):  # pandas
        return [str(c) for c in native.cat.categories]
    import polars as pl

    if isinstance(native, pl.Series) and isinstance(native.dtype, pl.Enum):
        return list(native.dtype.categories)
    values = native.unique() if hasattr(native, "unique") else native
    return [str(v) for v in (values.to_list() if hasattr(values, "to_list") else values)]


def _kind_codes(series: Any) -> npt.NDArray[np.uint8]:
    return category_codes(series, ("missing", "int", "float", "bool"))


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """One pool for the process: starting threads per call would cost more than a key."""
    return ThreadPoolExecutor(os.cpu_count() or 1, thread_name_prefix=_POOL_PREFIX)


# A forked child inherits the cached pool without its threads: start a fresh one there.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool.cache_clear)


def _harbor_result(
    name: str,
    fn: _Agg,
    keys: list[str],
    values: dict[str, np.ndarray],
    is_int: dict[str, np.ndarray],
    n: int,
) -> dict[str, Number]:
    """Harbor's naming: one key or none -> ``{name: v}``, several -> one entry per key."""
    if len(keys) <= 1:
        if keys:
            return {name: fn(values[keys[0]], is_int[keys[0]])}
        return {name: fn(np.zeros(n, dtype=np.float64), np.ones(n, dtype=np.bool_))}
    workers = min(len(keys), os.cpu_count() or 1)
    # (never from one of the pool's own threads: waiting there could starve the pool)
    in_pool = threading.current_thread().name.startswith(_POOL_PREFIX)
    if workers > 1 and n >= _THREADED_ROWS and not in_pool:
        # Harbor's sum is a sequential cumsum that numpy runs without the GIL, so keys
        # aggregate side by side, interleaved in pieces so no thread idles.
        if fn is _mean or fn is harbor_sum:
            sums = harbor_sums([(values[k], is_int[k]) for k in keys], _pool())
            results = [total / n for total in sums] if fn is _mean else sums
        else:
            results = list(_pool().map(lambda key: fn(values[key], is_int[key]), keys))
        return dict(zip(keys, results, strict=True))
    return {key: fn(values[key], is_int[key]) for key in keys}


def _harbor_dict(frame: Any, name: str, fn: _Agg) -> dict[str, Number]:
    keys, values, is_int, _ = reward_arrays(frame)
    return _harbor_result(name, fn, keys, values, is_int, len(frame))


def _finished_trials(frame: Any) -> Any:
    """``frame`` without the rows of Harbor trials that are still running."""
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    if "_status" not in nf.columns:
        return frame
    status = nf.get_column("_status")
    if "running" not in _categories(status):
        return frame  # e.g. every frame from read_rewards: nothing to filter
    # Compare category codes, not strings: casting a million categoricals costs ~0.1 s.
    running = category_codes(status, ("running",)) == 0
    if not running.any():
        return frame
    keep = nw.new_series("keep", ~running, nw.Boolean, backend=nw.get_native_namespace(nf))
    return nf.filter(keep).to_native()


def aggregate(
    rewards: Any,
    metric: str | Any = "mean",
    *,
    by: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Aggregate rewards exactly as Harbor 0.25 does.

    Parameters
    ----------
    rewards
        A frame from :func:`~metrickit.read_rewards` (pandas or polars), any frame of
        numeric reward columns, a path, JSONL text, or a list of dicts/None.
    metric
        ``"mean"`` (Harbor's default), ``"sum"``, ``"min"``, ``"max"``, or a metric object
        (anything with ``name`` and ``compute(frame)``, see :mod:`metrickit.compute.metrics`).
    by
        Column(s) to group by. The result is then ``{group: {...}}`` with one Harbor dict
        per group (groups in order of first appearance; a tuple key for several columns).

    A trial table from :func:`~metrickit.read_harbor_job` works too; its running trials
    (``_status == "running"``, no result yet) are left out, as Harbor's job metrics only
    cover finished trials (:func:`metrickit.io.harbor.job_metrics` also offers Harbor 0.26's policy).

    Returns
    -------
    dict
        ``{"mean": 0.25}`` for at most one reward key, ``{"a": ..., "b": ...}`` for more.

    Raises
    ------
    AggregationError
        ``min``/``max`` of no rows, invalid rows in the frame, an unknown metric name.

    Examples
    --------
    >>> import metrickit as mk
    >>> mk.aggregate([{"correctness": 1}, {"style": 1}, {}, None])
    {'correctness': 0.25, 'style': 0.25}
    >>> mk.aggregate([{"reward": 1}, {"reward": 0}, None], "sum")
    {'sum': 1}
    """
    if is_lazy(rewards):  # polars LazyFrame / scan_rewards / Dask: streamed in row order
        return aggregate_lazy(rewards, metric, by=by)
    if not _is_frame(rewards):
        if by is None and isinstance(metric, str) and metric in HARBOR_METRICS:
            # No frame: Harbor's answer for any valid input (keys named like metadata
            # columns too), in memory that grows with the data (metrickit.compute.direct).
            from metrickit.compute.direct import aggregate_source

            return aggregate_source(rewards, metric)
        rewards = read_rewards(rewards)
    rewards = _finished_trials(rewards)
    if by is not None:
        return _aggregate_by(rewards, metric, by)
    if isinstance(metric, str):
        try:
            fn = HARBOR_METRICS[metric]
        except KeyError:
            raise AggregationError(
                f"unknown metric {metric!r}; expected one of {sorted(HARBOR_METRICS)} "
                "or a metric object"
            ) from None
        return _harbor_dict(rewards, metric, fn)
    compute = getattr(metric, "compute", None)
    if compute is None:
        raise AggregationError(
            f"metric {metric!r} is neither a name ({sorted(HARBOR_METRICS)}) nor an object "
            "with compute(frame)"
        )
    result = compute(rewards)
    return result if isinstance(result, dict) else {getattr(metric, "name", "metric"): result}


def group_indices(frame: Any, by: str | Sequence[str]) -> dict[Any, np.ndarray]:
    """Row indices of each group, groups in order of first appearance.

    A single column gives scalar labels, several give tuples. Nulls form their own group.
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    by_cols = [by] if isinstance(by, str) else list(by)
    missing = [c for c in by_cols if c not in nf.columns]
    if missing:
        raise AggregationError(f"by={missing[0]!r} is not a column; columns are {list(nf.columns)}")
    columns = [nf.get_column(c).to_list() for c in by_cols]
    labels = columns[0] if len(by_cols) == 1 else list(zip(*columns, strict=True))
    codes, uniques = pd.factorize(pd.Series(labels, dtype=object), use_na_sentinel=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return {uniques[i]: order[bounds[i] : bounds[i + 1]] for i in range(len(uniques))}


def _aggregate_by(rewards: Any, metric: Any, by: str | Sequence[str]) -> dict[Any, Any]:
    import narwhals as nw

    groups = group_indices(rewards, by)
    if isinstance(metric, str):
        fn = HARBOR_METRICS.get(metric)
        if fn is None:
            raise AggregationError(
                f"unknown metric {metric!r}; expected one of {sorted(HARBOR_METRICS)}"
            )
        keys, values, is_int, present = reward_arrays(rewards)
        out: dict[Any, Any] = {}
        for label, idx in groups.items():
            # Harbor sees only this group's rows: its key set is what occurs in them.
            here = [k for k in keys if present[k][idx].any()]
            out[label] = _harbor_result(
                metric,
                fn,
                here,
                {k: values[k][idx] for k in here},
                {k: is_int[k][idx] for k in here},
                len(idx),
            )
        return out
    nf = nw.from_native(rewards, eager_only=True)
    return {label: aggregate(nf[idx].to_native(), metric) for label, idx in groups.items()}
