"""Harbor-identical aggregation of reward frames.

:func:`aggregate` reproduces Harbor 0.25's ``Mean``, ``Sum``, ``Min`` and ``Max``
(``harbor/metrics/base.py::aggregate_reward_dicts``):

* the reward keys are the sorted union of the keys that occur;
* at most one key: ``{"<metric>": value}`` (the key's own name is dropped);
* two or more: ``{key: value}`` per key, sorted;
* a ``null`` row or a missing key counts as the integer 0.

The arithmetic is Python's own (see :mod:`metrickit._core.harbor_math`), so results equal
Harbor's bit for bit, including int/float result types.

On a trial table the trials that count are :func:`metrickit._core.frame.counted_trials`'s
(running trials never do), and a key's NA rows (the key is absent from those trials' whole
evaluation, which Harbor never aggregates) are left out of that key.
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

from metrickit._core.frame import (
    counted_trials,
    group_indices,
    is_frame,
    is_lazy,
    materialize,
    na_rows,
    native_frame,
    reward_arrays,
)
from metrickit._core.harbor_math import (
    HARBOR_METRICS,
    harbor_sum,
    harbor_sums,
    mean_or_zero,
)
from metrickit.compute.stream import aggregate_lazy
from metrickit.errors import AggregationError
from metrickit.io.rewards import read_rewards

__all__ = ["HARBOR_METRICS", "aggregate", "reward_arrays"]

Number = int | float
# Below this many rows a thread pool costs more than it saves.
_THREADED_ROWS = 100_000
_POOL_PREFIX = "metrickit-aggregate"
_Agg = Callable[[npt.NDArray[np.float64], npt.NDArray[np.bool_]], Number]


















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
    """Harbor's naming: one key or none -> ``{name: v}``, several -> one entry per key.

    A key's arrays may be shorter than ``n``: its NA rows (the key is absent from those
    trials' evaluation) are left out of it."""
    if len(keys) <= 1:
        if keys:
            return {name: fn(values[keys[0]], is_int[keys[0]])}
        return {name: fn(np.zeros(n, dtype=np.float64), np.ones(n, dtype=np.bool_))}
    workers = min(len(keys), os.cpu_count() or 1)
    # (never from one of the pool's own threads: waiting there could starve the pool)
    in_pool = threading.current_thread().name.startswith(_POOL_PREFIX)
    same = all(len(values[k]) == n for k in keys)
    if workers > 1 and n >= _THREADED_ROWS and not in_pool and same:
        # Harbor's sum is a sequential cumsum that numpy runs without the GIL, so keys
        # aggregate side by side, interleaved in pieces so no thread idles.
        if fn is mean_or_zero or fn is harbor_sum:
            sums = harbor_sums([(values[k], is_int[k]) for k in keys], _pool())
            results = [total / n for total in sums] if fn is mean_or_zero else sums
        else:
            results = list(_pool().map(lambda key: fn(values[key], is_int[key]), keys))
        return dict(zip(keys, results, strict=True))
    return {key: fn(values[key], is_int[key]) for key in keys}


def _harbor_dict(frame: Any, name: str, fn: _Agg) -> dict[str, Number]:
    keys, values, is_int, _ = reward_arrays(frame)
    for key, na in _trial_na(frame, keys).items():
        values[key], is_int[key] = values[key][~na], is_int[key][~na]
    return _harbor_result(name, fn, keys, values, is_int, len(frame))


def _trial_na(frame: Any, keys: list[str]) -> dict[str, npt.NDArray[np.bool_]]:
    """The NA rows of each key of a trial table (:func:`metrickit._core.frame.na_rows`);
    a reward frame never has any, so it is not searched."""
    import narwhals as nw

    if "reward_valid" not in nw.from_native(frame, eager_only=True).columns:
        return {}
    return na_rows(frame, keys)


def _lazy_trial_table(frame: Any) -> bool:
    """A lazy or Dask frame of a trial table (its NA cells need the rows at hand)."""
    import narwhals as nw

    from metrickit.io.scan import SCAN_ATTRIBUTE

    native = native_frame(frame)
    if getattr(native, SCAN_ATTRIBUTE, None) is not None:
        return False  # scan_rewards: reward files, and no schema pass before the stream
    names = ([str(c) for c in native.columns] if not hasattr(native, "collect_schema")
             else nw.from_native(native).collect_schema().names())
    return "reward_valid" in names and "task_name" in names




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

    Notes
    -----
    A trial table from any metrickit reader works too. Its trials count by
    :func:`metrickit._core.frame.counted_trials` under Harbor 0.25's policy: running trials
    (no result yet) are left out, as Harbor's job metrics only cover finished trials
    (:func:`metrickit.job_metrics` also offers Harbor 0.26's policy). Harbor never
    aggregates a key over an evaluation that has none of it: where rows of several
    evaluations are aggregated together (no ``by``, or ``by`` other than ``eval``), a
    key's NA rows (the key is absent from their evaluation) are left out of that key,
    never counted as 0. Within one evaluation the result is Harbor's, bit for bit.

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
    if is_lazy(rewards) and _lazy_trial_table(rewards):
        rewards = materialize(rewards)  # a trial table fits in memory; NA cells need rows
    if is_lazy(rewards):  # polars LazyFrame / scan_rewards / Dask
        if isinstance(metric, str):  # streamed in row order
            _harbor_fn(metric)
            return aggregate_lazy(rewards, metric, by=by)
        if by is None and getattr(metric, "streams", False):
            # a metric that reads a lazy frame batch by batch itself (metrickit.Metric)
            return _result(metric, _compute(metric)(rewards))
        rewards = materialize(rewards)
    elif not is_frame(rewards):
        if by is None and isinstance(metric, str) and metric in HARBOR_METRICS:
            # No frame: Harbor's answer for any valid input (keys named like metadata
            # columns too), in memory that grows with the data (metrickit.compute.direct).
            from metrickit.compute.direct import aggregate_source

            return aggregate_source(rewards, metric)
        rewards = read_rewards(rewards)
    rewards = counted_trials(rewards).frame  # running trials never count
    if by is not None:
        return _aggregate_by(rewards, metric, by)
    if isinstance(metric, str):
        return _harbor_dict(rewards, metric, _harbor_fn(metric))
    return _result(metric, _compute(metric)(rewards))


def _harbor_fn(metric: str) -> Callable[..., Number]:
    """Harbor's reduction called ``metric``, or an error listing the names."""
    fn = HARBOR_METRICS.get(metric)
    if fn is None:
        raise AggregationError(
            f"unknown metric {metric!r}; expected one of {sorted(HARBOR_METRICS)} "
            "or a metric object"
        )
    return fn


def _compute(metric: Any) -> Callable[[Any], Any]:
    """A metric object's ``compute(frame)``, or an error saying what a metric is."""
    compute = getattr(metric, "compute", None)
    if compute is None:
        raise AggregationError(
            f"metric {metric!r} is neither a name ({sorted(HARBOR_METRICS)}) nor an object "
            "with compute(frame)"
        )
    return compute


def _result(metric: Any, result: Any) -> dict[str, Any]:
    return result if isinstance(result, dict) else {getattr(metric, "name", "metric"): result}




def _aggregate_by(rewards: Any, metric: Any, by: str | Sequence[str]) -> dict[Any, Any]:
    import narwhals as nw

    groups = group_indices(rewards, by)
    if isinstance(metric, str):
        fn = _harbor_fn(metric)
        keys, values, is_int, present = reward_arrays(rewards)
        na = _trial_na(rewards, keys)
        out: dict[Any, Any] = {}
        for label, idx in groups.items():
            # Harbor sees only this group's rows: its key set is what occurs in them.
            here = [k for k in keys if present[k][idx].any()]
            rows = {k: idx[~na[k][idx]] if k in na else idx for k in here}
            out[label] = _harbor_result(
                metric,
                fn,
                here,
                {k: values[k][rows[k]] for k in here},
                {k: is_int[k][rows[k]] for k in here},
                len(idx),
            )
        return out
    nf = nw.from_native(rewards, eager_only=True)
    return {label: aggregate(nf[idx].to_native(), metric) for label, idx in groups.items()}
