"""Read Harbor reward JSONL into pandas or polars DataFrames.

A reward file has one JSON value per line: an object of named numbers
(``{"correctness": 1, "style": 0.5}``), ``{}``, or ``null`` (the trial has no result).
:func:`read_rewards` turns it into one row per line, zero-filled as Harbor does,
and keeps enough metadata that nothing is hidden:

``_source``
    the file (or ``<text>`` / ``<rows>``) the row came from (categorical).
``_line``
    the 1-based line number in that source (blank lines are not rows, but still count).
``_status``
    ``"ok"`` (an object with keys), ``"empty"`` (``{}``), ``"null"`` (a ``null`` line) or
    ``"invalid"`` (only with ``errors="report"``: the line broke the contract).
``<key>``
    one float64 column per reward key, sorted as Harbor sorts them; 0 where filled.
``_kind_<key>``
    how the value got there: ``"missing"`` (filled with 0), ``"int"``, ``"float"`` or
    ``"bool"``. Harbor keeps JSON integers as Python ints, and its ``sum`` treats ints
    and floats differently, so this is what lets :func:`metrickit.aggregate` match
    Harbor to the last bit; it is also how to tell a filled 0 from a real 0.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

from metrickit._core.schema import MAX_FILLED_CELLS, Parsed, check_backend, to_frame

# Re-exported: other modules import these from here.
from metrickit.errors import Problem, RewardFileError
from metrickit.io.jsonl import (
    parse_blocks,
    parse_rows,
    raise_message,
)
from metrickit.io.sources import iter_blocks, iter_sources, split_blocks

if TYPE_CHECKING:
    pass

__all__ = ["read_rewards"]


Backend = Literal["pandas", "polars", "dask"]
Errors = Literal["raise", "report"]
Source = (
    str
    | os.PathLike[str]
    | bytes
    | io.IOBase
    | Iterable[Mapping[str, Any] | None]
    | Sequence[str | os.PathLike[str]]
)


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


@overload
def read_rewards(
    source: Source, *, backend: Backend = ..., errors: Literal["raise"] = ...
) -> Any: ...
@overload
def read_rewards(
    source: Source, *, backend: Backend = ..., errors: Literal["report"]
) -> tuple[Any, list[Problem]]: ...


def read_rewards(source: Source, *, backend: Backend = "pandas", errors: Errors = "raise") -> Any:
    """Read Harbor reward JSONL into a DataFrame, one row per non-blank line.

    Parameters
    ----------
    source
        A path (``.jsonl`` or ``.jsonl.gz``), a glob, a list of paths, JSONL text or bytes,
        an open file, or an iterable of dicts/``None`` (the rewards Harbor holds in memory).
    backend
        ``"pandas"`` (default) or ``"polars"``. Both hold the same content. ``"dask"``
        builds a Dask DataFrame from paths/globs, one partition per file or block, parsed
        on the workers (``errors="raise"`` only; see :mod:`metrickit.io.dask`).
    errors
        ``"raise"`` (default) raises :class:`~metrickit.errors.RewardFileError` at the first
        bad line, naming file, line, key and value. ``"report"`` returns ``(frame, problems)``:
        every bad line is listed and keeps its row with ``_status == "invalid"``.

    Returns
    -------
    DataFrame, or ``(DataFrame, list[Problem])`` with ``errors="report"``.

    Raises
    ------
    RewardFileError
        Malformed JSON, a line that is not an object or ``null``, a value that is not a
        finite number, a duplicated key, an integer beyond 2**53.

    Examples
    --------
    >>> import metrickit as mk
    >>> df = mk.read_rewards('{"reward": 1}\\n{"reward": 0}\\nnull\\n{"reward": 0}\\n')
    >>> df["reward"].tolist(), df["_status"].tolist()
    ([1.0, 0.0, 0.0, 0.0], ['ok', 'ok', 'null', 'ok'])
    >>> mk.aggregate(df)
    {'mean': 0.25}
    """
    if backend == "dask":
        if errors != "raise":
            raise ValueError("backend='dask' supports errors='raise' only")
        from metrickit.io.dask import one_partition, read_rewards_dask, source_paths

        if source_paths(source) is None:  # text or rows: read here, one partition
            return one_partition(read_rewards(source))
        return read_rewards_dask(source)
    check_backend(backend, more=("dask",))
    if errors not in ("raise", "report"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'report'")
    parts: list[Parsed] = []
    problems: list[Problem] = []
    for name, payload in iter_sources(source):
        if isinstance(payload, Path):
            got, found = parse_blocks(name, iter_blocks(payload), dense_cells=MAX_FILLED_CELLS)
        elif isinstance(payload, bytes):
            got, found = parse_blocks(name, split_blocks(payload), dense_cells=MAX_FILLED_CELLS)
        else:
            parsed, found = parse_rows(name, payload)
            got = [parsed]
        if found and errors == "raise":
            raise RewardFileError(raise_message(found))
        parts.extend(got)
        problems.extend(found)
    frame = to_frame(parts, backend=backend)
    if errors == "report":
        return frame, problems
    return frame


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------
