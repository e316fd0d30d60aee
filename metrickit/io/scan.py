"""Reward files larger than memory: a polars LazyFrame that parses strictly, chunk by chunk.

:func:`scan_rewards` gives the same columns, zero-fill rules and errors as
:func:`metrickit.read_rewards` (``_source``, ``_line`` per file, ``_status``, one float
column per key, ``_kind_<key>``), but reads each file in pieces of a few tens of MB cut
at line boundaries. Every piece goes through the same strict parser as
:func:`~metrickit.read_rewards` (:func:`metrickit.io.rewards.parse_bytes`), with its line
numbers shifted to the file's, so ``null`` lines, keys that first appear late, and bad
values are handled exactly as in the eager path.

The key set of a file is only known once all of it has been read, so the frame's schema
is discovered by a first streaming pass when polars first asks for it (``collect``,
``collect_schema``, ``collect_batches``). :func:`metrickit.aggregate` and the Harbor
metrics do not need the schema: given the scan itself they make a single pass, carrying
Harbor's sum state across pieces (:class:`metrickit._core.harbor_math.HarborAccumulator`), so
the result is bit-identical to ``aggregate(read_rewards(path))`` with memory bounded by
the piece size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from metrickit._core.schema import (
    Parsed,
    check_names,
    import_polars,
    not_utf8_label,
    piece_columns,
    polars_reward_schema,
    printable,
    reward_frame,
)
from metrickit.errors import Problem, RewardFileError
from metrickit.io.jsonl import iter_parsed, parse_bytes, parse_slow, raise_message
from metrickit.io.sources import BOM, expand_paths, iter_blocks

if TYPE_CHECKING:
    import polars as pl

__all__ = ["DEFAULT_CHUNK_BYTES", "scan_rewards"]

#: Size of the pieces a file is parsed in. Peak memory is a small multiple of this.
DEFAULT_CHUNK_BYTES = 2 << 20

# The attribute that marks a LazyFrame as a scan straight from scan_rewards (derived
# frames, e.g. after .filter, do not carry it and take the generic streaming path).
SCAN_ATTRIBUTE = "_metrickit_scan"

PathSource = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]


def scan_rewards(source: PathSource, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> pl.LazyFrame:
    """Lazily read Harbor reward JSONL files larger than memory.

    Parameters
    ----------
    source
        A path (``.jsonl`` or ``.jsonl.gz``), a glob (``"runs/**/rewards.jsonl"``) or a
        list of paths and globs.
    chunk_bytes
        Bytes parsed at a time (lines are never split). Peak memory is a small multiple.

    Returns
    -------
    polars.LazyFrame
        The columns of :func:`~metrickit.read_rewards` (polars backend), row for row.
        ``aggregate(scan)`` and the Harbor metrics stream it in one pass.

    Raises
    ------
    RewardFileError
        As :func:`~metrickit.read_rewards` (file and line, key and value), when the frame
        is evaluated or its schema is first needed; a missing file or empty glob at once.

    Examples
    --------
    >>> import metrickit as mk, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "rewards.jsonl"
    >>> _ = path.write_text('{"a": 1}\\nnull\\n{"a": 0.5, "b": 1}\\n')
    >>> scan = mk.scan_rewards(path)
    >>> mk.aggregate(scan)
    {'a': 0.5, 'b': 0.3333333333333333}
    >>> scan.select("_line", "b", "_kind_b").collect().rows()
    [(1, 0.0, 'missing'), (2, 0.0, 'missing'), (3, 1.0, 'int')]
    """
    import_polars("scan_rewards (a polars LazyFrame)",
                  "use metrickit.aggregate(path), which reads a file of any size block by "
                  "block, or read_rewards for a pandas frame")
    import polars as pl
    from polars.io.plugins import register_io_source

    if isinstance(source, bytes | bytearray) or (
        isinstance(source, str) and ("\n" in source or source.lstrip()[:1] in ("{", "["))
    ):
        raise RewardFileError(
            "scan_rewards reads files; for JSONL text or in-memory rows use read_rewards"
        )
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes={chunk_bytes!r}; expected a positive number of bytes")
    items = [source] if isinstance(source, str | os.PathLike) else list(source)
    paths = [path for item in items for path in expand_paths(item)]
    for path in paths:
        if not path.exists():
            raise RewardFileError(f"{path}: no such file")
        if path.is_dir():
            raise RewardFileError(
                f"{path}: is a directory; pass reward .jsonl files (or a glob such as "
                f"'{path}/**/*.jsonl')"
            )
    spec = ScanSpec(paths, chunk_bytes)

    def io_source(
        with_columns: list[str] | None,
        predicate: pl.Expr | None,
        n_rows: int | None,
        batch_size: int | None,
    ) -> Iterator[pl.DataFrame]:
        keys = spec.keys()
        remaining = n_rows
        for parsed in spec.parsed():
            if remaining is not None and remaining <= 0:
                return
            _check_known_keys(parsed, keys)
            frame = spec.polars_frame(parsed, keys)
            if predicate is not None:
                frame = frame.filter(predicate)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if remaining is not None:
                frame = frame.head(remaining)
                remaining -= frame.height
            yield frame

    lazy = register_io_source(
        io_source,
        schema=lambda: pl.Schema(spec.schema_or_error()),
        explain_name="metrickit.scan_rewards",
        explain_detail=", ".join(printable(name) for name in spec.names),
    )
    setattr(lazy, SCAN_ATTRIBUTE, spec)
    schema_of = lazy.collect_schema

    def collect_schema() -> pl.Schema:
        # The scan's own schema raises the input's error (a key clashing with a metadata
        # column, a bad line) rather than list no reward columns: polars would wrap it.
        spec.schema()
        return schema_of()

    lazy.collect_schema = collect_schema  # type: ignore[method-assign]
    return lazy


@dataclass
class ScanSpec:
    """What a scan reads; the key set is found once, on first need."""

    paths: list[Path]
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    _keys: list[str] | None = None
    error: RewardFileError | None = None

    @property
    def names(self) -> list[str]:
        """Source names, as ``_source`` shows them (same as read_rewards)."""
        return list(dict.fromkeys(str(p) for p in self.paths))

    def parsed(self) -> Iterator[Parsed]:
        """Every piece of every file, strictly parsed, lines numbered per file, in order
        (polars reads the next piece in a second thread: see
        :func:`metrickit.io.jsonl.fast_blocks`)."""
        for path in self.paths:
            for parsed, problems in iter_parsed(str(path), iter_blocks(path, self.chunk_bytes)):
                if problems:
                    raise RewardFileError(raise_message(problems))
                yield parsed

    def keys(self) -> list[str]:
        """Sorted reward keys over all files (one streaming pass, cached)."""
        if self.error is not None:
            raise self.error
        if self._keys is None:
            # key -> the line it first appears on, so a clash names file and line
            first: dict[str, Parsed] = {}
            for parsed in self.parsed():
                for key in parsed.values.keys() - first.keys():
                    row = int(np.flatnonzero(parsed.kinds[key])[0])
                    at = slice(row, row + 1)
                    first[key] = Parsed(parsed.source, parsed.lines[at], parsed.status[at],
                                        kinds={key: parsed.kinds[key][at]})
            keys = sorted(first)
            check_names(keys, list(first.values()))
            self._keys = keys
        return self._keys

    def schema_or_error(self) -> dict[str, Any]:
        """The schema; on bad input, remember the error for evaluation to raise.

        polars wraps an exception raised while it asks for the schema in its own
        ``ComputeError``; raised from the source instead, the ``RewardFileError`` (file,
        line, value) reaches the caller as it is.
        """
        try:
            return self.schema()
        except RewardFileError as exc:
            self.error = exc
            return self.schema(keys=[], names=[printable(name) for name in self.names])

    def schema(
        self, keys: list[str] | None = None, names: list[str] | None = None
    ) -> dict[str, Any]:

        if names is None:
            # a path that is not UTF-8 cannot be a polars string (aggregate(scan) needs none)
            refused = not_utf8_label(self.names, "a polars LazyFrame")
            if refused:
                raise RewardFileError(refused)
        keys = self.keys() if keys is None else keys
        return polars_reward_schema(keys, self.names if names is None else names)

    def polars_frame(self, parsed: Parsed, keys: list[str]) -> pl.DataFrame:
        """One piece as a frame with the scan's full schema (absent keys zero-filled)."""
        return reward_frame(keys, piece_columns(parsed, keys, list(self.names)), "polars")


def _check_known_keys(parsed: Parsed, keys: list[str]) -> None:
    """Refuse a key the schema pass did not see, rather than drop its values.

    The schema comes from an earlier pass over the files; a line appended (or a file
    rewritten) since then can bring a key that has no column.
    """
    extra = sorted(set(parsed.values) - set(keys))
    if extra:
        first = int(parsed.lines[np.flatnonzero(parsed.kinds[extra[0]])[0]])
        raise RewardFileError(
            f"{parsed.source}:{first}: key {extra[0]!r} was not in the file when its "
            "schema was read (the file changed while it was being read); scan it again "
            "once it is complete"
        )


def parse_piece(name: str, data: bytes, *, first: bool) -> tuple[Parsed, list[Problem]]:
    """Parse one piece (lines numbered from 1 within it), problems collected."""
    if not first and data.startswith(BOM):
        # A byte-order mark only counts at the start of the file; elsewhere it is
        # part of a (then invalid) line, and the exact path says so.
        return parse_slow(name, data)
    return parse_bytes(name, data)


def parse_chunk(name: str, data: bytes, offset: int, *, first: bool) -> Parsed:
    """Strictly parse one piece; raise with the file's own line numbers."""
    parsed, problems = parse_piece(name, data, first=first)
    if problems:
        raise RewardFileError(
            raise_message([replace(p, line=p.line + offset) for p in problems])
        )
    if offset:
        parsed.lines = parsed.lines + offset
    return parsed
