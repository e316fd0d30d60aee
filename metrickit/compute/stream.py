"""Harbor aggregates of lazy and distributed frames, one piece at a time, in row order.

Harbor's ``sum`` is sequential (an exact int prefix, then Neumaier-compensated floats),
so pieces cannot be summed separately and combined. Instead the pieces are fed in row
order into :class:`~metrickit._core.harbor_math.HarborAccumulator` objects, one per group and
reward key; only the running state is kept, never the rows. A key that first appears
late starts with the int zeros Harbor fills in for the rows before it.

Inputs: a scan from :func:`metrickit.scan_rewards` (parsed pieces, single pass), any
other polars LazyFrame (``collect_batches``), and Dask DataFrames (partitions computed
on the cluster, consumed in order).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from metrickit._core.frame import is_dask, materialize, native_frame
from metrickit._core.harbor_math import GroupAccumulator, parsed_columns
from metrickit._core.values import KIND_PREFIX
from metrickit.errors import AggregationError

__all__ = [
    "aggregate_lazy",
    "eager_batches",
    "empty_like",
    "is_dask",

    "lazy_reward_keys",
    "materialize",
    "occurring_keys",
]

Number = int | float
# (key -> (values, is_int, present)), row count
Piece = tuple[dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]], int]


def _frame_pieces(
    batches: Iterable[Any], by: str | Sequence[str] | None
) -> Iterator[tuple[Any, Piece]]:
    """(group label, piece) for eager frames given in row order."""
    from metrickit._core.frame import counted_trials, group_indices, reward_arrays

    for batch in batches:
        batch = counted_trials(batch).frame  # running trials never count
        _, values, is_int, present = reward_arrays(batch)
        n = len(batch)
        if by is None:
            yield None, ({k: (values[k], is_int[k], present[k]) for k in values}, n)
            continue
        for label, idx in group_indices(batch, by).items():
            columns = {k: (values[k][idx], is_int[k][idx], present[k][idx]) for k in values}
            yield label, (columns, len(idx))


def _scan_pieces(spec: Any, by_source: bool) -> Iterator[tuple[Any, Piece]]:
    for parsed in spec.parsed():
        yield (parsed.source if by_source else None), (parsed_columns(parsed), parsed.n)


def _is_source(by: str | Sequence[str] | None) -> bool:
    return by == "_source" or (not isinstance(by, str) and list(by or []) == ["_source"])


def _polars_batches(frame: Any) -> Iterator[Any]:
    if not hasattr(frame, "collect_batches"):  # polars < 1.32: one streaming collect
        yield frame.collect(engine="streaming")
        return
    yield from frame.collect_batches(maintain_order=True)


def eager_batches(frame: Any) -> Iterator[Any]:
    """The rows of a lazy or Dask frame as eager frames, in row order, one at a time."""

    frame = native_frame(frame)
    if is_dask(frame):
        from metrickit.io.dask import iter_partitions

        yield from iter_partitions(frame, columns=list(frame.columns))
        return
    yield from _polars_batches(frame)


def empty_like(frame: Any) -> Any:
    """An eager frame with the lazy frame's columns and no rows."""

    frame = native_frame(frame)
    if is_dask(frame):
        return frame._meta
    return frame.clear().collect()


def lazy_reward_keys(frame: Any) -> list[str]:
    """The reward keys of a lazy or Dask frame, from its schema."""

    from metrickit._core.frame import reward_keys

    frame = native_frame(frame)
    if is_dask(frame):
        names = [str(c) for c in frame.columns]
        return [c for c in names if KIND_PREFIX + c in names] or [
            c for c, dt in frame.dtypes.items() if not str(c).startswith("_") and dt.kind in "iuf"
        ]
    return reward_keys(frame)


def occurring_keys(frame: Any) -> list[str]:
    """The reward keys that occur in a lazy or Dask frame: Harbor's (and the eager
    frame's) key set. A scan's schema is exactly that; any other frame takes a pass."""

    from metrickit._core.frame import reward_arrays
    from metrickit.io.scan import SCAN_ATTRIBUTE

    native = native_frame(frame)
    order = lazy_reward_keys(native)
    if getattr(native, SCAN_ATTRIBUTE, None) is not None:
        return order  # the schema pass found every key in the data itself
    seen: set[str] = set()
    for batch in eager_batches(native):
        seen.update(reward_arrays(batch)[0])
        if len(seen) == len(order):
            break
    return [k for k in order if k in seen]


def _pieces(frame: Any, by: str | Sequence[str] | None) -> tuple[Iterator[Any], list[str] | None]:
    """Pieces in row order, and the key order of the result (None: sorted)."""
    import narwhals as nw

    from metrickit.io.scan import SCAN_ATTRIBUTE

    frame = native_frame(frame)
    spec = getattr(frame, SCAN_ATTRIBUTE, None)
    if spec is not None and (by is None or _is_source(by)):
        return _scan_pieces(spec, by is not None), None
    order = lazy_reward_keys(frame)
    if is_dask(frame):  # plain column names: no narwhals round trip for Dask
        names = [str(c) for c in frame.columns]
    else:
        names = nw.from_native(frame).collect_schema().names()
    if by is not None:
        by_cols = [by] if isinstance(by, str) else list(by)
        missing = [c for c in by_cols if c not in names]
        if missing:
            raise AggregationError(f"by={missing[0]!r} is not a column; columns are {names}")
    if is_dask(frame):
        from metrickit.io.dask import iter_partitions

        by_cols = [] if by is None else [by] if isinstance(by, str) else list(by)
        needed = {*order, *(KIND_PREFIX + k for k in order), "_status", "_line", *by_cols}
        columns = [c for c in frame.columns if c in needed]
        batches: Iterable[Any] = iter_partitions(frame, columns=columns)
    else:
        batches = _polars_batches(frame)
    return _frame_pieces(batches, by), order


def aggregate_lazy(frame: Any, metric: str, *, by: str | Sequence[str] | None) -> dict[Any, Any]:
    """:func:`metrickit.aggregate` of a Harbor metric name (``mean``, ``sum``, ``min``,
    ``max``) for a lazy or Dask frame, streamed in row order."""
    pieces, order = _pieces(frame, by)
    groups: dict[Any, GroupAccumulator] = {}
    for label, (columns, n) in pieces:
        group = groups.get(label)
        if group is None:
            group = groups[label] = GroupAccumulator()
        group.feed(columns, n)
    if by is None:
        return groups.get(None, GroupAccumulator()).result(metric, order)
    return {label: group.result(metric, order) for label, group in groups.items()}
