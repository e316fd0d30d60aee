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

import functools
import glob
import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import numpy.typing as npt

# Re-exported: other modules import these from here.
from metrickit._core.values import (  # noqa: F401
    BOOL,
    EMPTY,
    FLOAT,
    INT,
    INVALID,
    KIND_PREFIX,
    KINDS,
    MAX_EXACT_INT,
    META_COLUMNS,
    MISSING,
    NULL,
    OK,
    STATUSES,
    _check_value,
    _NonFinite,
    _short,
)
from metrickit.errors import Problem, RewardFileError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = [
    "KINDS",
    "STATUSES",
    "filled_mask",
    "kind_column",
    "read_rewards",
    "reward_keys",
]

_BOM = b"\xef\xbb\xbf"
_JSON_WS = b" \t\r\n"
_SAMPLE_LINES = 200
#: Bytes parsed at a time. Blocks keep the temporaries small (and in cache): peak memory
#: is the result plus a small multiple of this, and numpy scans run faster than on one
#: file-sized array.
BLOCK_BYTES = 4 << 20
#: The frame readers refuse input whose frame would hold more zero-filled cells (rows x
#: keys minus the cells in the data) than this: many distinct keys on few rows.
#: ``metrickit.aggregate(path)`` and ``metrickit aggregate`` still answer, in memory that
#: grows with the data.
MAX_FILLED_CELLS = 20_000_000
# A block parsed into dense columns holds at most this many cells, or 4x its own cells.
_DENSE_BLOCK_CELLS = 1 << 20
# ... or, for the frame readers, MAX_FILLED_CELLS when it has at most this many keys.
_DENSE_KEYS = 1000
# Lines longer than this take the exact path (json.loads holds a line as text and values,
# about twice the line; polars' reader needs several times that) and are not copied there.
_LONG_LINE = 1 << 20
# Rows with a "1.0"-style token are re-read with json; past this many, a second polars
# read (Int64 schema) is cheaper.
_MAX_MARKED = 20_000
# A \uD800-\uDFFF escape: half of a UTF-16 surrogate pair. Python's json decodes a lone one
# into a str that cannot be encoded as UTF-8 (so it cannot name a polars column), and
# polars' reader renames such keys; lines with one always take the exact path.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

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


@dataclass
class Parsed:
    """Column arrays of one source, before they become a DataFrame."""

    source: str
    lines: npt.NDArray[np.int64]
    status: npt.NDArray[np.uint8]
    values: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    kinds: dict[str, npt.NDArray[np.uint8]] = field(default_factory=dict)
    #: how many ``\n`` the parsed bytes held: the line offset of the block after it
    newlines: int = 0

    @property
    def n(self) -> int:
        return len(self.lines)


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
        from metrickit.io.dask import read_rewards_dask

        return read_rewards_dask(source)
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas', 'polars' or 'dask'")
    if errors not in ("raise", "report"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'report'")
    parts: list[Parsed] = []
    problems: list[Problem] = []
    for name, payload in _iter_sources(source):
        if isinstance(payload, Path):
            got, found = parse_blocks(name, iter_blocks(payload), dense_cells=MAX_FILLED_CELLS)
        elif isinstance(payload, bytes):
            got, found = parse_blocks(name, split_blocks(payload), dense_cells=MAX_FILLED_CELLS)
        else:
            parsed, found = parse_rows(name, payload)
            got = [parsed]
        if found and errors == "raise":
            raise RewardFileError(_raise_message(found))
        parts.extend(got)
        problems.extend(found)
    frame = to_frame(parts, backend=backend)
    if errors == "report":
        return frame, problems
    return frame


def reward_keys(frame: Any) -> list[str]:
    """The reward key columns of a frame, in column order.

    For a frame from :func:`read_rewards` these are the columns that have a
    ``_kind_<key>`` companion. For any other frame, every numeric column whose name does
    not start with ``_``.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=False)
    names = list(nf.columns)
    marked = [c for c in names if KIND_PREFIX + c in names]
    if marked:
        return marked
    schema = nf.collect_schema() if hasattr(nf, "collect_schema") else nf.schema
    return [c for c, dt in schema.items() if not c.startswith("_") and dt.is_numeric()]


def kind_column(key: str) -> str:
    """Name of the column that records how ``key`` was filled: ``_kind_<key>``."""
    return KIND_PREFIX + key


def filled_mask(frame: Any) -> Any:
    """A frame of booleans, one column per reward key: True where the 0 was filled in.

    Same backend as ``frame``.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    keys = reward_keys(frame)
    return nf.select(
        [(nw.col(kind_column(k)).cast(nw.String) == "missing").alias(k) for k in keys]
    ).to_native()


# ---------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------


def _looks_like_text(s: str) -> bool:
    head = s.lstrip()[:1]
    return "\n" in s or head in ("{", "[", '"') or s.strip() in ("null", "")


def _json_text(s: str) -> bool:
    """One line of valid JSON (a path is never one; a line this long is never a path)."""
    if len(s) > 4096:
        return True
    try:
        json.loads(s)
    except (ValueError, RecursionError):
        return False
    return True


def _is_frame(obj: Any) -> bool:
    """A DataFrame or LazyFrame of any library narwhals knows (iterating one gives its
    column names, which would be read as paths)."""
    import narwhals as nw

    try:
        nw.from_native(obj)
    except TypeError:
        return False
    return True


def _is_file(s: str) -> bool:
    try:
        return Path(s).is_file()
    except (OSError, ValueError):  # a name too long or with NUL cannot be a file
        return False


def _directory_message(path: Path) -> str:
    return (
        f"{path}: is a directory; pass a reward .jsonl file (or use read_harbor_job for a "
        "Harbor job folder)"
    )


def iter_blocks(path: Path, block_bytes: int | None = None) -> Iterator[bytes]:
    """A file (``.gz`` decompressed on the fly) in pieces of about ``block_bytes``, each
    cut just after a newline, so a large file is never held whole.

    A line longer than a block comes as a piece of its own, held once: in a plain file its
    end is found first and the line read in one call (so it is never in memory twice); in
    a ``.gz`` file (where seeking back decompresses again) its pieces are joined once.
    """
    size = block_bytes or BLOCK_BYTES
    gz = path.suffix == ".gz"
    try:
        fh = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        raise RewardFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RewardFileError(_directory_message(path)) from None

    def read(n: int) -> bytes:
        try:
            return fh.read(n)
        except IsADirectoryError:
            raise RewardFileError(_directory_message(path)) from None
        except (OSError, EOFError, zlib.error) as exc:
            what = "not a readable gzip file" if gz else "cannot be read"
            raise RewardFileError(f"{path}: {what} ({exc})") from None

    carry = b""
    with fh:
        while True:
            chunk = read(size)
            if not chunk:
                break
            cut = chunk.rfind(b"\n")
            if cut < 0:  # a line longer than a block
                line, carry = _long_line(fh, read, carry, chunk, size, seek=not gz)
                del chunk
                if not line.endswith(b"\n"):  # the file's last line
                    carry = line
                    break
                yield line
                del line
                continue
            # at most one copy per block: the carried start of its first line + the lines
            if carry:
                piece = b"".join((carry, memoryview(chunk)[: cut + 1]))
            else:
                piece = chunk if cut + 1 == len(chunk) else chunk[: cut + 1]
            carry = chunk[cut + 1 :]
            del chunk
            yield piece
            del piece
    if carry:
        yield carry


def _long_line(
    fh: Any, read: Any, carry: bytes, chunk: bytes, size: int, *, seek: bool
) -> tuple[bytes, bytes]:
    """The line that starts with ``carry + chunk`` (``chunk`` holds no newline), up to and
    including its newline or the end of the file, and the bytes read after it."""
    if seek:
        start = fh.tell() - len(chunk) - len(carry)
        del chunk, carry
        end = -1
        while end < 0:  # find the end without keeping the bytes, then read the line once
            more = read(size)
            at = more.find(b"\n")
            if not more:
                end = fh.tell()
            elif at >= 0:
                end = fh.tell() - len(more) + at + 1
        del more
        fh.seek(start)
        return read(end - start), b""
    parts: list[bytes | memoryview] = [carry, chunk]
    del chunk, carry
    rest = b""
    while True:
        more = read(size)
        if not more:
            break
        at = more.find(b"\n")
        if at >= 0:
            parts.append(memoryview(more)[: at + 1])
            rest = more[at + 1 :]
            break
        parts.append(more)
    del more
    return b"".join(parts), rest


def split_blocks(data: bytes, block_bytes: int | None = None) -> Iterator[bytes]:
    """In-memory JSONL in pieces of about ``block_bytes``, each cut just after a newline."""
    size = block_bytes or BLOCK_BYTES
    n = len(data)
    if n <= size:
        yield data
        return
    lo = 0
    while lo < n:
        cut = data.rfind(b"\n", lo, lo + size)
        if cut < 0:
            cut = data.find(b"\n", lo + size)
        if cut < 0 or lo + size >= n:
            yield data[lo:]
            return
        yield data[lo : cut + 1]
        lo = cut + 1


def _expand(item: str | os.PathLike[str]) -> list[Path]:
    text = os.fspath(item)
    path = Path(text)
    if path.exists() or not any(ch in text for ch in "*?["):
        return [path]
    matches = sorted(glob.glob(text, recursive=True))
    if not matches:
        raise RewardFileError(f"{text}: no files match this pattern")
    return [Path(m) for m in matches]


def _iter_sources(source: Any) -> Iterable[tuple[str, Path | bytes | Iterable[Any]]]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield "<bytes>", bytes(source)
    elif isinstance(source, str) and not source.strip() and "\n" not in source:
        raise RewardFileError(
            f"source is {source!r}: a blank string is neither a path nor JSONL text (an "
            "unset variable?); pass a reward file's path, or JSONL text with its lines"
        )
    elif isinstance(source, str) and _looks_like_text(source) and not _is_file(source):
        if "\n" not in source and not _json_text(source):
            # '{run}/rewards.jsonl' that does not exist: a missing file, not bad JSON
            try:
                found = _expand(source)
            except RewardFileError:  # a glob pattern that matches nothing
                found = []
            if not found or not found[0].exists():
                raise RewardFileError(
                    f"{source}: no such file (read as a path: no file or glob match of that "
                    "name exists, and it is one line that is not valid JSON, so not JSONL "
                    "text either)"
                )
            for path in found:
                yield str(path), path
        else:
            yield "<text>", source.encode("utf-8")
    elif isinstance(source, str | os.PathLike):
        for path in _expand(source):
            yield str(path), path
    elif hasattr(source, "read"):
        data = source.read()
        name = str(getattr(source, "name", "<file>"))
        yield name, data.encode("utf-8") if isinstance(data, str) else bytes(data)
    elif isinstance(source, Mapping):
        raise RewardFileError(
            "read_rewards got a single dict; pass a list of dicts/None (one per trial)"
        )
    elif _is_frame(source):
        raise RewardFileError(
            f"read_rewards got a {type(source).__module__.split('.')[0]} "
            f"{type(source).__name__}; it reads reward files, JSONL text and reward dicts, "
            "not frames. A frame from read_rewards is read already: pass it to aggregate(), "
            "compare_metrics() and the rest as it is; to read reward dicts held in a column, "
            "pass read_rewards(frame[column].tolist())"
        )
    elif isinstance(source, Iterable):
        rows = list(source)
        if rows and all(isinstance(r, str | os.PathLike) for r in rows):
            for item in rows:
                for path in _expand(item):
                    yield str(path), path
        else:
            yield "<rows>", rows
    else:
        raise RewardFileError(
            f"read_rewards cannot read a {type(source).__name__}; expected a path, JSONL "
            "text, an open file, or a list of dicts/None"
        )


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


def parse_bytes(name: str, data: bytes) -> tuple[Parsed, list[Problem]]:
    """Parse one JSONL payload into one :class:`Parsed` (see :func:`parse_blocks`)."""
    parts, problems = parse_blocks(name, split_blocks(data))
    return _concat(name, parts), problems


def parse_blocks(
    name: str, blocks: Iterable[bytes], *, dense_cells: int = 0
) -> tuple[list[Parsed], list[Problem]]:
    """Parse the consecutive blocks of one source, numbering lines across them.

    Each block takes the vectorised path when it can prove it is exact, else the
    line-by-line path (which also produces the error messages): one odd line costs its
    block, not the file. Working block by block also keeps the temporaries a few MB.
    """
    parts: list[Parsed] = []
    problems: list[Problem] = []
    offset = 0
    keys: set[str] = set()
    for index, block in enumerate(blocks):
        if index == 0 and block.startswith(_BOM):
            block = block[len(_BOM) :]
        found: list[Problem] = []
        # A byte-order mark only counts at the start of the file; elsewhere it is part
        # of a (then invalid) line, and the exact path says so.
        parsed = None
        if _BOM not in block[:3]:
            parsed = _parse_fast(name, block, keys_hint=keys, dense_cells=dense_cells)
        if parsed is None:
            parsed, found = _parse_slow(name, block)
        if offset:
            parsed.lines += offset
            found = [replace(p, line=p.line + offset) for p in found]
        offset += parsed.newlines
        keys.update(parsed.values)
        parts.append(parsed)
        problems.extend(found)
    if not parts:
        parts.append(Parsed(name, np.zeros(0, np.int64), np.zeros(0, np.uint8)))
    return parts, problems


def _concat(name: str, parts: list[Parsed]) -> Parsed:
    if len(parts) == 1:
        return parts[0]
    newlines = sum(p.newlines for p in parts)
    _, cols = _merge(parts)
    return Parsed(
        name, cols["lines"], cols["status"], cols["values"], cols["kinds"], newlines=newlines
    )


class _Obj(dict[str, Any]):
    duplicates: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> _Obj:
    obj = _Obj()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj:
            obj.duplicates.append(key)
        obj[key] = value
    return obj


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_NonFinite, object_pairs_hook=_pairs_hook)


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class _RowBuilder:
    """Collects rows one by one (the slow, exact path)."""

    source: str
    lines: list[int] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    cells: dict[str, dict[int, tuple[float, int]]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def bad(self, line: int, message: str, key: str | None = None,
            value: str | None = None) -> None:
        self.problems.append(Problem(self.source, line, message, key=key, value=value))
        self.lines.append(line)
        self.status.append(INVALID)

    def add(self, line: int, obj: Any) -> None:
        if obj is None:
            self.lines.append(line)
            self.status.append(NULL)
            return
        if not isinstance(obj, dict):
            kind = {list: "a JSON list", str: "a JSON string", bool: "a JSON boolean"}.get(
                type(obj), "a JSON number"
            )
            self.bad(
                line,
                f"line is {kind} ({_short(obj)}); expected a JSON object of named numbers or null",
            )
            return
        duplicates = getattr(obj, "duplicates", [])
        if duplicates:
            self.bad(
                line,
                f"key {duplicates[0]!r} appears more than once on the line; expected each key once",
                key=duplicates[0],
            )
            return
        checked: dict[str, tuple[float, int]] = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                self.bad(line, f"key {key!r} is not a string; expected string keys")
                return
            if not key.isascii() and not _is_utf8(key):
                self.bad(
                    line,
                    f"key {key!r} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape "
                    "without its pair), which is not valid Unicode and cannot name a column; "
                    "expected a key of UTF-8 text",
                    key=key,
                )
                return
            result = _check_value(key, value)
            if isinstance(result, str):
                self.bad(line, result, key=key, value=_short(value, 200))  # its repr
                return
            checked[key] = result
        row = len(self.lines)
        self.lines.append(line)
        self.status.append(OK if checked else EMPTY)
        for key, cell in checked.items():
            self.cells.setdefault(key, {})[row] = cell

    def build(self) -> Parsed:
        n = len(self.lines)
        _check_filled(self.source, n, len(self.cells), sum(len(c) for c in self.cells.values()))
        parsed = Parsed(
            self.source,
            np.asarray(self.lines, dtype=np.int64),
            np.asarray(self.status, dtype=np.uint8),
        )
        for key in sorted(self.cells):
            values = np.zeros(n, dtype=np.float64)
            kinds = np.zeros(n, dtype=np.uint8)
            column = self.cells[key]
            idx = np.fromiter(column.keys(), dtype=np.int64, count=len(column))
            vals = np.fromiter((c[0] for c in column.values()), dtype=np.float64, count=len(column))
            knd = np.fromiter((c[1] for c in column.values()), dtype=np.uint8, count=len(column))
            values[idx] = vals
            kinds[idx] = knd
            parsed.values[key] = values
            parsed.kinds[key] = kinds
        return parsed


def _parse_slow(name: str, data: bytes) -> tuple[Parsed, list[Problem]]:
    builder, newlines = _slow_rows(name, data)
    parsed = builder.build()
    parsed.newlines = newlines
    return parsed, builder.problems


def _slow_rows(name: str, data: bytes) -> tuple[_RowBuilder, int]:
    """Every line of ``data`` through json, into a builder (sparse cells); and the number
    of newlines in ``data``."""
    builder = _RowBuilder(name)
    for number, stripped in enumerate(_stripped_lines(data), start=1):
        if not stripped:
            continue
        try:
            text = str(stripped, "utf-8")
        except UnicodeDecodeError as exc:
            builder.bad(
                number,
                f"line is not valid UTF-8 (byte {stripped[exc.start]:#04x} at column "
                f"{exc.start + 1}); expected UTF-8 JSON",
            )
            continue
        try:
            obj = _loads(text)
        except json.JSONDecodeError as exc:
            builder.bad(
                number,
                f"invalid JSON ({exc.msg} at column {exc.colno}): {_short(text)}; expected a "
                "JSON object of named numbers or null",
            )
            continue
        except RecursionError:
            builder.bad(number, "JSON nested too deeply; expected a flat object of numbers")
            continue
        except ValueError as exc:
            # Not a JSONDecodeError: Python refuses to convert an integer literal of more
            # than sys.get_int_max_str_digits() digits (4300 by default).
            builder.bad(
                number,
                f"a number on the line cannot be read ({exc}); expected a JSON object of "
                "named numbers with |x| <= 2**53",
            )
            continue
        builder.add(number, obj)
        del text, obj  # a long line's text and values go before the next line is read
    return builder, data.count(b"\n")


def _stripped_lines(data: bytes) -> Iterator[bytes | memoryview]:
    """The lines of ``data`` without JSON whitespace around them; a line longer than
    :data:`_LONG_LINE` as a view into ``data``, so it is not copied before it is decoded."""
    if len(data) <= _LONG_LINE:
        for raw in data.split(b"\n"):
            yield raw.strip(_JSON_WS)
        return
    view = memoryview(data)
    lo = 0
    while lo <= len(data):
        hi = data.find(b"\n", lo)
        if hi < 0:
            hi = len(data)
        if hi - lo <= _LONG_LINE:
            yield data[lo:hi].strip(_JSON_WS)
        else:
            a, b = lo, hi
            while a < b and data[a] in _JSON_WS:
                a += 1
            while b > a and data[b - 1] in _JSON_WS:
                b -= 1
            yield view[a:b]
        lo = hi + 1


def parse_rows(name: str, rows: Iterable[Any]) -> tuple[Parsed, list[Problem]]:
    """Validate in-memory rewards (dicts or None), one row each."""
    builder = _RowBuilder(name)
    for number, obj in enumerate(rows, start=1):
        if isinstance(obj, Mapping) and not isinstance(obj, dict):
            obj = dict(obj)
        builder.add(number, obj)
    return builder.build(), builder.problems


def _sample_keys(
    body: bytes | memoryview, lines_wanted: int = _SAMPLE_LINES, head_bytes: int = 1 << 16
) -> list[str] | None:
    """Keys of the first lines, or None when the sample is not clean."""
    keys: set[str] = set()
    head = bytes(body[:head_bytes])
    lines = head.split(b"\n")
    if len(head) < len(body):
        lines = lines[:-1]  # the last one may be cut in the middle
    for raw in lines[:lines_wanted]:
        stripped = raw.strip(_JSON_WS)
        if not stripped:
            continue
        try:
            # Decode strictly first: json.loads(bytes) lets UTF-8-encoded surrogates
            # through ('surrogatepass'), and such a key crashes polars' schema.
            obj = json.loads(stripped.decode("utf-8"))
        except (ValueError, RecursionError):
            return None
        if isinstance(obj, dict):
            keys.update(obj)
        elif obj is not None:
            return None
    return sorted(keys)


def _parse_fast(
    name: str, data: bytes, keys_hint: Iterable[str] = (), dense_cells: int = 0
) -> Parsed | None:
    """Parse with polars when the result provably equals the exact path's, else None.

    polars' NDJSON reader is fast but lenient in ways Harbor is not: it rejects ``null``
    lines, skips blank lines, ignores keys outside the schema, keeps the *first* of
    duplicated keys, reads ``{"a": null}`` as missing, and loses the int/float
    distinction. Each is closed here: null lines are found with numpy and overwritten
    in a copy with ``{}`` of the same length; every ``:`` in the block must match one
    non-null parsed cell (so no key, duplicate or null value went unseen); non-finite or
    huge values and anything polars rejects go to the exact path; and which cells were
    JSON integers comes from a byte-level proof (:func:`_integral_means_int`) plus json for
    the few rows it marks, or else from a second read with an Int64 schema.

    ``keys_hint`` (the keys of the blocks before this one) joins the keys sampled from
    the first lines, so a key that is rare at the start is usually in the schema anyway.
    ``dense_cells`` raises the number of rows x keys cells a block may spread into: the
    frame readers pass :data:`MAX_FILLED_CELLS`, since their frame (and the exact path's
    block) is dense anyway; streaming aggregation keeps the block's cells sparse.
    """
    import polars as pl

    end = len(data)
    while end and data[end - 1] in _JSON_WS:
        end -= 1
    trailing_newlines = data.count(b"\n", end)
    if not end:
        return Parsed(
            name, np.zeros(0, np.int64), np.zeros(0, np.uint8), newlines=trailing_newlines
        )
    body = memoryview(data)[:end]
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = np.empty_like(starts)
    ends[:-1] = newlines
    ends[-1] = len(buf)
    if data.find(b"\r", 0, end) >= 0:
        ends -= buf[np.maximum(ends - 1, 0)] == 13
    lengths = ends - starts
    if int(lengths.max()) > _LONG_LINE:
        return None
    first = buf[np.minimum(starts, len(buf) - 1)]
    if np.any(lengths == 0) or np.any((first == 32) | (first == 9) | (first == 13)):
        return None  # blank or indented lines: the exact path numbers them
    n = len(starts)
    has_backslash = data.find(b"\\", 0, end) >= 0
    if has_backslash and _SURROGATE_ESCAPE.search(body) is not None:
        return None
    # the whole block: so it knows where the sample is cut; after the first block the keys
    # of the blocks before it are known, and a key they lack costs one schema inference
    keys_hint = set(keys_hint)
    if keys_hint:
        sampled = _sample_keys(body, _SAMPLE_LINES // 10)
    else:  # the first block: a key missing from the sample costs a second read
        sampled = _sample_keys(body, 10 * _SAMPLE_LINES, 1 << 18)
    if sampled is None:
        return None
    keys = sorted(set(sampled).union(keys_hint))
    candidates = np.flatnonzero(lengths == 4)
    null_rows = np.zeros(n, dtype=np.bool_)
    payload: bytes = data
    if len(candidates):
        at = starts[candidates]
        is_null = (
            (buf[at] == ord("n"))
            & (buf[at + 1] == ord("u"))
            & (buf[at + 2] == ord("l"))
            & (buf[at + 3] == ord("l"))
        )
        null_rows[candidates[is_null]] = True
        at = at[is_null]
        if len(at):
            # A copy of the block with each null line overwritten by "{}  " (same length).
            copy = bytearray(body)
            out = np.frombuffer(copy, dtype=np.uint8)
            out[at] = ord("{")
            out[at + 1] = ord("}")
            out[at + 2] = out[at + 3] = ord(" ")
            payload = bytes(copy)
            del copy, out
    colons = int(np.count_nonzero(buf == ord(":")))
    # Dense columns only when the block is about as dense as its cells: a block whose keys
    # are sparse (one distinct key per line, say) keeps its cells in the exact path instead
    # of a rows x keys frame.
    def too_sparse(key_count: int) -> bool:
        # dense_cells only for a frame's worth of columns: many more keys than that are
        # keys that change from line to line, which the exact path keeps as cells
        wide = dense_cells if key_count <= _DENSE_KEYS else 0
        return n * key_count > max(_DENSE_BLOCK_CELLS, 4 * colons, wide)

    if too_sparse(len(keys)):
        return None

    def read(columns: list[str], dtype: Any, ignore_errors: bool = False) -> pl.DataFrame:
        schema = {k: dtype for k in columns} or {"\x00": pl.Float64}
        return pl.read_ndjson(payload, schema=schema, ignore_errors=ignore_errors)

    def cells(frame: pl.DataFrame) -> int:
        return frame.height * frame.width - sum(frame.null_count().row(0))

    try:
        frame = read(keys, pl.Float64)
        if cells(frame) != colons:
            # A key the sample did not show (or a duplicate, or a null value): json reads
            # the rows with more ":" than cells for their keys, unless they are many (keys
            # that change from line to line: the exact path keeps such a block sparse).
            unseen = _unseen_keys(buf, starts, ends, frame, n // 4 + 1000)
            new = sorted(unseen.difference(keys)) if unseen is not None else []
            if not new or too_sparse(len(keys) + len(new)):
                return None
            more = read(new, pl.Float64)  # only the new columns: the others are read
            if more.height != frame.height or cells(frame) + cells(more) != colons:
                return None
            frame = pl.concat([frame, more], how="horizontal")
            keys = list(frame.columns)
    except pl.exceptions.PolarsError:
        return None
    if frame.height != n:
        return None
    parsed = Parsed(
        name,
        np.arange(1, n + 1, dtype=np.int64),
        np.full(n, EMPTY, dtype=np.uint8),
        newlines=len(newlines) + trailing_newlines,
    )
    any_present = np.zeros(n, dtype=np.bool_)
    integral_keys: list[str] = []
    key_cells: dict[str, int] = {}
    null_counts: tuple[int, ...] = frame.null_count().row(0)
    # Every column's validity in one select: a Series method (is_not_null, fill_null) runs
    # as an expression of its own, about 1 ms each, which 200 keys would pay 400 times.
    valid = frame.select(pl.all().is_not_null()).to_numpy() if any(null_counts) else None
    for index, key in enumerate(frame.columns):
        nulls = null_counts[index]
        if nulls == n and key not in sampled:
            continue  # a key of an earlier block that this block does not have
        values = np.array(frame.to_series(index).to_numpy(), dtype=np.float64)  # null: NaN
        if nulls and valid is not None:
            present = np.ascontiguousarray(valid[:, index])
            values[~present] = 0.0
        else:
            present = np.ones(n, dtype=np.bool_)
        # >=, not >: the integers 2**53 + 1 (which the exact path rejects) and 2**53 both
        # parse to the float 2**53 here, so only the exact path can tell them apart.
        if not np.all(np.isfinite(values)) or np.any(np.abs(values) >= MAX_EXACT_INT):
            return None
        kinds = present.view(np.uint8) * np.uint8(FLOAT)
        if np.any(present & (values == np.trunc(values))):
            integral_keys.append(key)
        parsed.values[key] = values
        parsed.kinds[key] = kinds
        any_present |= present
        key_cells[key] = n - nulls
    del frame
    if integral_keys:
        # Without escapes a key's bytes are its UTF-8 name, each key's bytes occur once per
        # cell, and the rest of the block is numbers and punctuation: so when the keys hold
        # every "e"/"E" of the block, no number has an exponent, and the scan for one can go.
        exponents = True
        if not has_backslash:
            in_keys = sum(
                count * (key.count("e") + key.count("E")) for key, count in key_cells.items()
            )
            letters = np.count_nonzero(buf == ord("e")) + np.count_nonzero(buf == ord("E"))
            exponents = int(letters) != in_keys
        by_value, max_fraction, marked = _integral_means_int(buf, exponents=exponents)
        largest = max(float(np.abs(parsed.values[k]).max()) for k in integral_keys)
        by_value = by_value and largest < 10.0 ** (15 - max_fraction)
        floats = None
        if by_value and not has_backslash:
            floats = _float_token_cells(buf, marked, starts, keys)
        if floats is not None:
            # Outside the float-token cells found, an integral cell is an int.
            float_rows, float_keys = floats
            position = {key: i for i, key in enumerate(keys)}
            for key in integral_keys:
                values = parsed.values[key]
                is_int = (parsed.kinds[key] == FLOAT) & (values == np.trunc(values))
                is_int[float_rows[float_keys == position[key]]] = False
                _mark_int(parsed.kinds[key], values, is_int)
            integral_keys = []
    if integral_keys:
        # Rows holding a "1.0"-style token are few in practice: read just those with json.
        rows = np.unique(np.searchsorted(starts, marked, side="right") - 1)
        if by_value and len(rows) <= _MAX_MARKED:
            # Outside the marked rows no float token can hold an integral value, so an
            # integral cell there is an int; in the marked rows json.loads says which.
            for key in integral_keys:
                values = parsed.values[key]
                is_int = (parsed.kinds[key] == FLOAT) & (values == np.trunc(values))
                is_int[rows] = False
                _mark_int(parsed.kinds[key], values, is_int)
            for row in rows.tolist():
                obj = json.loads(bytes(body[int(starts[row]) : int(ends[row])]))
                for key, value in obj.items():
                    if key in parsed.kinds and type(value) is int:
                        parsed.kinds[key][row] = INT
                        parsed.values[key][row] += 0.0
            integral_keys = []
    if integral_keys:
        try:
            ints = read(integral_keys, pl.Int64, ignore_errors=True)
        except pl.exceptions.PolarsError:
            return None
        if ints.height != n:
            return None
        for key in integral_keys:
            is_int = ints.get_column(key).alias("value").is_not_null().to_numpy()
            _mark_int(parsed.kinds[key], parsed.values[key], is_int)
    parsed.status[any_present] = OK
    parsed.status[null_rows] = NULL
    return parsed


def _unseen_keys(
    buf: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    frame: pl.DataFrame,
    most: int,
) -> set[str] | None:
    """The keys of the lines holding more ``:`` than ``frame`` has cells for them (read
    with json), or None if more than ``most`` lines do or one is not a JSON object."""
    import polars as pl

    n = len(starts)
    colon_rows = np.searchsorted(starts, np.flatnonzero(buf == ord(":")), side="right") - 1
    per_row = np.bincount(colon_rows, minlength=n)
    if frame.width:
        present = frame.select(pl.sum_horizontal(pl.all().is_not_null())).to_series()
        per_row -= present.to_numpy().astype(np.int64)
    rows = np.flatnonzero(per_row)
    if len(rows) > most:
        return None
    keys: set[str] = set()
    data = buf.data
    for row in rows.tolist():
        try:
            obj = json.loads(str(data[int(starts[row]) : int(ends[row])], "utf-8"))
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict):
            return None
        keys.update(obj)
    return keys


def _mark_int(
    kinds: npt.NDArray[np.uint8], values: npt.NDArray[np.float64], is_int: npt.NDArray[np.bool_]
) -> None:
    """Mark cells as JSON integers (they were FLOAT): one pass each, no fancy indexing."""
    kinds -= is_int.view(np.uint8) * np.uint8(FLOAT - INT)
    np.add(values, 0.0, out=values, where=is_int)  # JSON -0 is the int 0


def _integral_means_int(
    buf: npt.NDArray[np.uint8], *, exponents: bool = True
) -> tuple[bool, int, npt.NDArray[np.int64]]:
    """Where a number token with an integral value could be a JSON float.

    Returns ``(True, max_fraction_digits, marked)``. ``marked`` holds the positions of
    the ``.`` of fractions of only zeros (``1262.0``) or of 18 digits or more, and of the
    ``e``/``E`` of exponents (a digit before it): the tokens that can hold an integral
    value, which the caller classifies one by one. Elsewhere a float token has a
    non-zero fraction of at most ``max_fraction_digits`` digits, and if every value is
    below ``10**(15 - that)`` the token has at most 15 significant digits, so its float64
    keeps a non-zero fraction (15 digits survive the round trip): integral cells there
    can only come from int tokens. A ``.`` or ``e`` inside a key only marks a position
    the caller drops (it is not reached from a ``:`` over number bytes) or costs a
    slower classification, never a wrong answer. The buffer is scanned in blocks so the
    temporaries stay a few MB.
    """
    n = len(buf)
    block = 1 << 20  # cache-sized pieces: the same scans run ~3x faster than on 8 MB
    longest = 0
    marked: list[npt.NDArray[np.int64]] = []
    none = np.zeros(0, dtype=np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        chunk = buf[lo:hi]
        # a digit followed by e or E (| 32 folds "E" onto "e"); the pair may straddle pieces
        pair = buf[lo : hi + 1]
        if exponents:
            exponent = ((pair[1:] | 32) == ord("e")) & ((pair[:-1] - ord("0")) < 10)
            if exponent.any():
                marked.append(np.flatnonzero(exponent) + (lo + 1))
        dots = np.flatnonzero(chunk == ord(".")) + lo
        if dots.size == 0:
            continue
        digits = np.zeros(dots.size, dtype=np.int64)
        zeros_only = np.ones(dots.size, dtype=np.bool_)
        alive = np.ones(dots.size, dtype=np.bool_)
        for k in range(1, 19):
            at = dots + k
            c = buf[np.minimum(at, n - 1)]
            digit = alive & (at < n) & (c >= ord("0")) & (c <= ord("9"))
            digits += digit
            zeros_only &= ~digit | (c == ord("0"))
            alive = digit
            if not alive.any():
                break
        numeric = digits > 0  # a dot not followed by a digit is not inside a number
        candidate = numeric & (zeros_only | alive)  # alive: 18 digits and more
        marked.append(dots[candidate])
        real = numeric & ~candidate
        if real.any():
            longest = max(longest, int(digits[real].max()))
    return True, longest, np.concatenate(marked) if marked else none


# The bytes a JSON number token (and the whitespace around it) is made of.
_NUMBER_BYTES = np.zeros(256, dtype=np.bool_)
_NUMBER_BYTES[list(b"0123456789.eE+- \t\r")] = True
# How far back from a marked "." or "e" its ":" may be: longer tokens take json.loads.
_MAX_TOKEN = 64


def _float_token_cells(
    buf: npt.NDArray[np.uint8],
    marked: npt.NDArray[np.int64],
    starts: npt.NDArray[np.int64],
    keys: Sequence[str],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The cells, as ``(rows, key indices)``, whose value token holds a marked ``.`` or
    ``e`` (so is a JSON float), found with vectorised byte scans; None when a marked
    position cannot be placed this way (the caller then asks json).

    Valid only in a block whose ``:`` bytes each separate one schema key from one number
    (the fast path's cell count proves it) and which holds no backslash. Then a marked
    byte that reaches a ``:`` backwards over number and whitespace bytes lies in that
    ``:``'s value token, which is therefore a float; any other marked byte lies in a key
    and is dropped. The key is the text between the two ``"`` before the ``:``: without
    escapes, the key's UTF-8 bytes, identified among ``keys`` by length and first and
    last 8 bytes (refused unless that tells every key apart) and then checked.
    """
    empty = np.zeros(0, dtype=np.int64)
    if marked.size == 0:
        return empty, empty
    # the first byte before each marked one that is not part of a number or whitespace
    # (a token marked twice, as "1.0e5" is, gives its cell twice: harmless)
    back = _look_back(buf, marked, _NUMBER_BYTES)
    if back is None:
        return None
    colon = back[buf[np.maximum(back, 0)] == ord(":")]
    if colon.size == 0:
        return empty, empty
    close = _look_back(buf, colon, _WHITESPACE)  # the key's closing quote
    if close is None or np.any(buf[np.maximum(close, 0)] != ord('"')):
        return None
    table = _key_table(tuple(keys))
    if table is None:
        return None  # two keys alike in length and first and last bytes
    key_fp, order, sorted_fp, longest = table
    open_ = _look_back(buf, close, _NOT_QUOTE, longest + 2)
    if open_ is None or np.any(buf[np.maximum(open_, 0)] != ord('"')):
        return None
    fp = _fingerprint(buf, open_ + 1, close - open_ - 1)
    key_index = order[np.minimum(np.searchsorted(sorted_fp, fp[0]), len(order) - 1)]
    if not all(np.array_equal(k[key_index], f) for k, f in zip(key_fp, fp, strict=True)):
        return None
    rows = np.searchsorted(starts, colon, side="right") - 1
    return rows, key_index.astype(np.int64)


_WHITESPACE = np.zeros(256, dtype=np.bool_)
_WHITESPACE[list(b" \t\r")] = True
_NOT_QUOTE = np.ones(256, dtype=np.bool_)
_NOT_QUOTE[ord('"')] = False


def _look_back(
    buf: npt.NDArray[np.uint8], pos: npt.NDArray[np.int64], skip: npt.NDArray[np.bool_],
    width: int = _MAX_TOKEN,
) -> npt.NDArray[np.int64] | None:
    """For each position, the nearest position before it whose byte ``skip`` does not
    hold (-1 past the start), looking at most ``width`` bytes back; None if one is
    further."""
    out = np.empty(len(pos), dtype=np.int64)
    todo = np.arange(len(pos))
    # most tokens and keys are short: a narrow window first, the full one for the rest
    for look in sorted({min(width, 12), width}):
        at = pos[todo, None] - np.arange(1, look + 1, dtype=np.int64)
        stop = ~skip[buf[np.maximum(at, 0)]] | (at < 0)
        first = stop.argmax(axis=1)
        found = stop[np.arange(len(todo)), first]
        out[todo[found]] = pos[todo[found]] - 1 - first[found]
        todo = todo[~found]
        if not todo.size:
            return out
    return None


@functools.lru_cache(maxsize=64)
def _key_table(
    keys: tuple[str, ...],
) -> tuple[tuple[npt.NDArray[np.uint64], ...], npt.NDArray[np.intp], npt.NDArray[np.uint64],
           int] | None:
    """The fingerprints of ``keys`` (see :func:`_fingerprint`), the order that sorts them,
    the sorted hashes and the longest key's byte length; None if two hashes coincide."""
    table = [key.encode("utf-8") for key in keys]
    data = np.frombuffer(b"".join(table) or b"\0", dtype=np.uint8)
    size = np.array([len(k) for k in table], dtype=np.int64)
    lo = np.concatenate([[0], np.cumsum(size)[:-1]]).astype(np.int64)
    fp = _fingerprint(data, lo, size)
    order = np.argsort(fp[0], kind="stable")
    sorted_fp = fp[0][order]
    if np.any(sorted_fp[1:] == sorted_fp[:-1]):
        return None
    return fp, order, sorted_fp, int(size.max(initial=0))


def _fingerprint(
    data: npt.NDArray[np.uint8], lo: npt.NDArray[np.int64], size: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], ...]:
    """(hash, size, first 8 bytes, last 8 bytes) of the byte strings ``data[lo:lo+size]``,
    the bytes packed into one uint64 each (zeros past a shorter string)."""
    j = np.arange(8, dtype=np.int64)
    inside = j < size[:, None]
    top = len(data) - 1
    head = np.where(inside, data[np.clip(lo[:, None] + j, 0, top)], 0).astype(np.uint8)
    tail = np.where(inside, data[np.clip(lo[:, None] + size[:, None] - 1 - j, 0, top)], 0)
    first = np.ascontiguousarray(head).view("<u8").ravel()
    last = np.ascontiguousarray(tail.astype(np.uint8)).view("<u8").ravel()
    sizes = size.astype(np.uint64)
    with np.errstate(over="ignore"):
        mixed = first * np.uint64(0x9E3779B97F4A7C15) + last * np.uint64(0xC2B2AE3D27D4EB4F)
    return np.asarray(mixed + sizes, dtype=np.uint64), sizes, first, last


def _raise_message(problems: list[Problem]) -> str:
    first = str(problems[0])
    if len(problems) > 1:
        first += (
            f" (and {len(problems) - 1} more problem(s) in this input; "
            "read_rewards(..., errors='report') lists them all)"
        )
    return first


# ---------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------


def _merge(parts: list[Parsed]) -> tuple[list[str], dict[str, Any]]:
    """One array per column from the parsed parts, *consuming* them: each part's arrays
    are dropped as soon as they are copied, so the merge needs one column's worth of
    memory on top of the parts, not a second copy of everything."""
    keys = sorted({k for p in parts for k in p.values})
    sizes = [p.n for p in parts]
    n = sum(sizes)
    unique_sources = list(dict.fromkeys(p.source for p in parts))
    source_codes = np.empty(n, dtype=np.int8 if len(unique_sources) < 128 else np.int32)
    at = 0
    for p, size in zip(parts, sizes, strict=True):
        source_codes[at : at + size] = unique_sources.index(p.source)
        at += size

    def take(pieces: list[Any], dtype: Any) -> Any:
        if len(pieces) == 1:
            return pieces[0]
        return np.concatenate(pieces) if pieces else np.zeros(0, dtype)

    lines = take([p.lines for p in parts], np.int64)
    status = take([p.status for p in parts], np.uint8)
    for p in parts:
        p.lines, p.status = np.zeros(0, np.int64), np.zeros(0, np.uint8)
    values: dict[str, npt.NDArray[np.float64]] = {}
    kinds: dict[str, npt.NDArray[np.uint8]] = {}
    for key in keys:
        values[key] = take(
            [_pop(p.values, key, size, np.float64) for p, size in zip(parts, sizes, strict=True)],
            np.float64,
        )
        kinds[key] = take(
            [_pop(p.kinds, key, size, np.uint8) for p, size in zip(parts, sizes, strict=True)],
            np.uint8,
        )
    assert len(lines) == n
    return keys, {
        "sources": unique_sources,
        "source_codes": source_codes,
        "lines": lines,
        "status": status,
        "values": values,
        "kinds": kinds,
    }


def _pop(columns: dict[str, Any], key: str, size: int, dtype: Any) -> Any:
    """A part's column, removed from the part; zeros (missing) where it lacks the key."""
    column = columns.pop(key, None)
    return np.zeros(size, dtype) if column is None else column


def _check_filled(source: str, rows: int, keys: int, cells: int) -> None:
    """Refuse a frame of more than :data:`MAX_FILLED_CELLS` zero-filled cells."""
    filled = rows * keys - cells
    if filled > MAX_FILLED_CELLS:
        raise RewardFileError(
            f"{source}: {rows:,} rows x {keys:,} reward keys would make a frame of "
            f"{rows * keys:,} cells, {filled:,} of them zero-filled (the frame readers stop "
            f"at {MAX_FILLED_CELLS:,} zero-filled cells: metrickit.io.rewards.MAX_FILLED_CELLS); "
            "use metrickit.aggregate(path) or `metrickit aggregate`, which aggregate key by "
            "key in memory that grows with the data"
        )


def _check_names(keys: list[str], parts: Sequence[Parsed] = ()) -> None:
    reserved = set(META_COLUMNS) | {KIND_PREFIX + k for k in keys}
    clash = [k for k in keys if k in reserved]
    if clash:
        where = ""  # the first line with the key, when the parts are at hand
        for part in parts:
            kinds = part.kinds.get(clash[0])
            if kinds is not None and kinds.any():
                where = f"{part.source}:{int(part.lines[np.flatnonzero(kinds)[0]])}: "
                break
        raise RewardFileError(
            f"{where}reward key {clash[0]!r} clashes with a metadata column metrickit adds "
            f"({', '.join(META_COLUMNS)}, {KIND_PREFIX}<key>), so no frame can hold it; "
            "metrickit.aggregate(path) and `metrickit aggregate` build no metadata columns "
            "and give Harbor's answer, or rename the key"
        )


def to_frame(parts: list[Parsed], *, backend: Backend = "pandas") -> Any:
    """Turn parsed sources into one DataFrame of the chosen backend."""
    names = sorted({k for p in parts for k in p.values})
    _check_names(names, parts)
    if len(parts) > 1:
        cells = sum(int(np.count_nonzero(kinds)) for p in parts for kinds in p.kinds.values())
        source = parts[0].source if len({p.source for p in parts}) == 1 else "the input"
        _check_filled(source, sum(p.n for p in parts), len(names), cells)
    keys, cols = _merge(parts)
    if backend == "polars":
        return _to_polars(keys, cols)
    return _to_pandas(keys, cols)


def string_dtype(values: Iterable[Any], default: Any = None) -> Any:
    """``default`` (a pandas dtype), or the Python-backed string dtype when a value is not
    UTF-8 text.

    A path that is not UTF-8 (legal on Linux: ``os.fsdecode`` keeps its bytes as lone
    surrogates) cannot be stored in Arrow, which holds pandas' default strings; the
    Python-backed string dtype keeps it exactly as ``os.fsdecode`` gives it.
    """
    import pandas as pd

    for value in values:
        if isinstance(value, str) and not value.isascii() and not _is_utf8(value):
            return pd.StringDtype("python")
    return default


def printable(name: str) -> str:
    """``name`` with the bytes of a non-UTF-8 path shown as ``\\xe9`` escapes (printable)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace") if not _is_utf8(name) else name


def not_utf8_label(names: Iterable[str], backend: str = "polars") -> str | None:
    """The message refusing a source label (path) that is not UTF-8, or None if all are."""
    for name in names:
        if not name.isascii() and not _is_utf8(name):
            return (
                f"{printable(name)}: the path is not UTF-8 (bytes {os.fsencode(name)!r}); "
                f"{backend} holds UTF-8 text only, so it cannot label rows with this path. Use "
                "backend='pandas' (which keeps the path as os.fsdecode gives it), aggregate "
                "it with metrickit.aggregate (no label needed), or rename the file"
            )
    return None


def _to_pandas(keys: list[str], cols: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    data: dict[str, Any] = {
        "_source": pd.Categorical.from_codes(
            cols["source_codes"],
            categories=pd.Index(cols["sources"], dtype=string_dtype(cols["sources"])),
        )
        if cols["sources"]
        else pd.Categorical([], categories=[]),
        "_line": cols["lines"],
        "_status": pd.Categorical.from_codes(cols["status"], categories=pd.Index(list(STATUSES))),
    }
    for key in keys:
        data[key] = cols["values"][key]
    for key in keys:
        data[KIND_PREFIX + key] = pd.Categorical.from_codes(
            cols["kinds"][key], categories=pd.Index(list(KINDS))
        )
    return pd.DataFrame(data, copy=False)


def _polars_enum(codes: npt.NDArray[Any], categories: Sequence[str]) -> pl.Series:
    import polars as pl

    # gather on the categories themselves: the codes become the Enum's physical values
    return pl.Series(list(categories), dtype=pl.Enum(categories)).gather(
        codes.astype(np.uint32, copy=False)
    )


def _to_polars(keys: list[str], cols: dict[str, Any]) -> pl.DataFrame:
    import polars as pl

    refused = not_utf8_label(cols["sources"])
    if refused:
        raise RewardFileError(refused)
    if not cols["sources"]:  # no input at all (so no keys either): nothing to gather
        return pl.DataFrame(
            schema={"_source": pl.Enum([]), "_line": pl.Int64, "_status": pl.Enum(STATUSES)}
        )
    # The numpy columns as they are (codes included), then one select that turns every
    # code column into its Enum by a gather on the categories: polars runs them in
    # parallel, ~4x faster than one Series at a time.
    raw: dict[str, Any] = {
        "_source": cols["source_codes"],
        "_line": cols["lines"],
        "_status": cols["status"],
    }
    enums: dict[str, Sequence[str]] = {"_source": cols["sources"], "_status": STATUSES}
    for key in keys:
        raw[key] = cols["values"][key]
    for key in keys:
        raw[KIND_PREFIX + key] = cols["kinds"][key]
        enums[KIND_PREFIX + key] = KINDS

    def column(index: int, name: str) -> pl.Expr:
        # by position: pl.col("^a$") would be a regex, and a reward key may look like one
        if name not in enums:
            return pl.nth(index)
        categories = pl.Series(list(enums[name]), dtype=pl.Enum(enums[name]))
        return pl.lit(categories).gather(pl.nth(index)).alias(name)

    # a dict keeps an empty-string key as a column name (a list of Series renames it)
    return pl.DataFrame(raw).select([column(i, name) for i, name in enumerate(raw)])
