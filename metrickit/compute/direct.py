"""Harbor aggregates of reward files without building a frame.

``metrickit aggregate`` (a drop-in Harbor ``metric.py``) and ``aggregate(path)`` only need
the numbers, not the frame's metadata columns (``_source``, ``_line``, ``_status``,
``_kind_<key>``). Here each block of each source is parsed and fed, in row order, into
Harbor's running state (:class:`metrickit.compute.stream.GroupAccumulator`), so:

* any valid Harbor input gets Harbor's answer, including keys named like metadata
  columns (``{"_source": 1}``, ``x`` beside ``_kind_x``), which a frame cannot hold;
* memory grows with the data, not rows x keys: a block whose keys are sparse (say one
  distinct key per line) is kept as its cells and aggregated one key at a time.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from metrickit._core.harbor_math import GroupAccumulator, HarborAccumulator, parsed_columns
from metrickit._core.values import INT
from metrickit.errors import RewardFileError
from metrickit.io.jsonl import RowBuilder, fast_blocks, raise_message, slow_rows
from metrickit.io.sources import iter_blocks, iter_sources, split_blocks

__all__ = ["aggregate_source"]


def aggregate_source(source: Any, metric: str) -> dict[str, Any]:
    """Harbor's ``metric`` over a path, glob, list of paths, JSONL text/bytes, open file or
    list of dicts/None, as ``aggregate(read_rewards(source), metric)`` computes it."""
    group = GroupAccumulator()
    for name, payload in iter_sources(source):
        if isinstance(payload, Path | bytes):
            blocks = iter_blocks(payload) if isinstance(payload, Path) else split_blocks(payload)
            problems = _feed_blocks(group, name, blocks)
        else:
            builder = RowBuilder(name)
            for number, obj in enumerate(payload, start=1):
                builder.add(number, dict(obj) if hasattr(obj, "keys") else obj)
            problems = builder.problems
            if not problems:
                _feed_cells(group, builder)
        if problems:
            raise RewardFileError(raise_message(problems))
    return group.result(metric, None)


def _feed_blocks(group: GroupAccumulator, name: str, blocks: Any) -> list[Any]:
    """Parse and feed every block of one source; the problems (nothing fed after one)."""
    problems: list[Any] = []
    for block, parsed, offset in fast_blocks(name, blocks):
        if parsed is not None:
            if not problems:
                group.feed(parsed_columns(parsed), parsed.n)
            continue
        builder, _ = slow_rows(name, block)
        problems.extend(replace(p, line=p.line + offset) for p in builder.problems)
        if not problems:
            _feed_cells(group, builder)
    return problems


def _feed_cells(group: GroupAccumulator, builder: RowBuilder) -> None:
    """Feed the rows a builder collected, one key at a time from its sparse cells."""
    n = len(builder.lines)
    for key in builder.cells:
        if key not in group.acc:
            acc = HarborAccumulator()
            acc.add_int_zeros(group.n)  # earlier rows lacked the key: int 0 each
            group.acc[key] = acc
    for key, acc in group.acc.items():
        column = builder.cells.get(key)
        if column is None:
            acc.add_int_zeros(n)
            continue
        idx = np.fromiter(column.keys(), dtype=np.int64, count=len(column))
        values = np.zeros(n, dtype=np.float64)
        is_int = np.ones(n, dtype=np.bool_)
        values[idx] = np.fromiter((c[0] for c in column.values()), np.float64, len(column))
        is_int[idx] = np.fromiter((c[1] == INT for c in column.values()), np.bool_, len(column))
        acc.update(values, is_int)
    group.n += n

