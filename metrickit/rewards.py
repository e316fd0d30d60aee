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

import glob
import gzip
import io
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import numpy.typing as npt

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

KINDS = ("missing", "int", "float", "bool")
STATUSES = ("ok", "empty", "null", "invalid")
KIND_PREFIX = "_kind_"
META_COLUMNS = ("_source", "_line", "_status")
MISSING, INT, FLOAT, BOOL = range(4)
OK, EMPTY, NULL, INVALID = range(4)

# Integers beyond this cannot be held exactly in a float64 column.
MAX_EXACT_INT = 2**53
_BOM = b"\xef\xbb\xbf"
_JSON_WS = b" \t\r\n"
_SAMPLE_LINES = 200
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
        on the workers (``errors="raise"`` only; see :mod:`metrickit._dask`).
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
        from metrickit._dask import read_rewards_dask

        return read_rewards_dask(source)
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas', 'polars' or 'dask'")
    if errors not in ("raise", "report"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'report'")
    parts: list[Parsed] = []
    problems: list[Problem] = []
    for name, payload in _iter_sources(source):
        if isinstance(payload, bytes):
            parsed, found = parse_bytes(name, payload)
        else:
            parsed, found = parse_rows(name, payload)
        if found and errors == "raise":
            raise RewardFileError(_raise_message(found))
        parts.append(parsed)
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


def _is_file(s: str) -> bool:
    try:
        return Path(s).is_file()
    except (OSError, ValueError):  # a name too long or with NUL cannot be a file
        return False


def _read_path(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RewardFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise RewardFileError(
            f"{path}: is a directory; pass a reward .jsonl file (or use read_harbor_job "
            "for a Harbor job folder)"
        ) from None
    if path.suffix == ".gz":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise RewardFileError(f"{path}: not a readable gzip file ({exc})") from None
    return raw


def _expand(item: str | os.PathLike[str]) -> list[Path]:
    text = os.fspath(item)
    path = Path(text)
    if path.exists() or not any(ch in text for ch in "*?["):
        return [path]
    matches = sorted(glob.glob(text, recursive=True))
    if not matches:
        raise RewardFileError(f"{text}: no files match this pattern")
    return [Path(m) for m in matches]


def _iter_sources(source: Any) -> Iterable[tuple[str, bytes | Iterable[Any]]]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield "<bytes>", bytes(source)
    elif isinstance(source, str) and _looks_like_text(source) and not _is_file(source):
        yield "<text>", source.encode("utf-8")
    elif isinstance(source, str | os.PathLike):
        for path in _expand(source):
            yield str(path), _read_path(path)
    elif hasattr(source, "read"):
        data = source.read()
        name = str(getattr(source, "name", "<file>"))
        yield name, data.encode("utf-8") if isinstance(data, str) else bytes(data)
    elif isinstance(source, Mapping):
        raise RewardFileError(
            "read_rewards got a single dict; pass a list of dicts/None (one per trial)"
        )
    elif isinstance(source, Iterable):
        rows = list(source)
        if rows and all(isinstance(r, str | os.PathLike) for r in rows):
            for item in rows:
                for path in _expand(item):
                    yield str(path), _read_path(path)
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
    """Parse one JSONL payload: the vectorised path when it can prove it is exact,
    else the line-by-line path (which also produces the error messages)."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    fast = _parse_fast(name, data)
    if fast is not None:
        return fast, []
    return _parse_slow(name, data)


class _NonFinite:
    """Placeholder for the NaN/Infinity tokens Python's json accepts and Harbor must not see."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __repr__(self) -> str:
        return self.token


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


def _short(value: Any, limit: int = 60) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past sys.get_int_max_str_digits() cannot be repr'd
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_value(key: str, value: Any) -> tuple[float, int] | str:
    """(value, kind) for a valid reward value, else the reason it is not one."""
    if isinstance(value, bool):
        return (1.0 if value else 0.0), BOOL
    if isinstance(value, int):
        if abs(value) > MAX_EXACT_INT:
            return (
                f"value of {key!r} is the integer {_short(value)}, too large to hold exactly; "
                f"expected a number with |x| <= 2**53"
            )
        return float(value), INT
    if isinstance(value, float):
        if not math.isfinite(value):
            why = "not a number" if math.isnan(value) else "the number overflows a float"
            return f"value of {key!r} is {value!r} ({why}); expected a finite number"
        return value, FLOAT
    if isinstance(value, _NonFinite):
        return f"value of {key!r} is {value.token}; expected a finite number"
    if value is None:
        type_name = "null"
    elif isinstance(value, dict):
        type_name = "object"
        value = dict(value)
    else:
        type_name = type(value).__name__
    return (
        f"value of {key!r} is {_short(value)} ({type_name}); "
        "expected a finite number (JSON int, float, true or false)"
    )


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

    def bad(self, line: int, message: str, key: str | None = None) -> None:
        self.problems.append(Problem(self.source, line, message, key=key))
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
                self.bad(line, result, key=key)
                return
            checked[key] = result
        row = len(self.lines)
        self.lines.append(line)
        self.status.append(OK if checked else EMPTY)
        for key, cell in checked.items():
            self.cells.setdefault(key, {})[row] = cell

    def build(self) -> Parsed:
        n = len(self.lines)
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
    builder = _RowBuilder(name)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        stripped = raw.strip(_JSON_WS)
        if not stripped:
            continue
        try:
            text = stripped.decode("utf-8")
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
    return builder.build(), builder.problems


def parse_rows(name: str, rows: Iterable[Any]) -> tuple[Parsed, list[Problem]]:
    """Validate in-memory rewards (dicts or None), one row each."""
    builder = _RowBuilder(name)
    for number, obj in enumerate(rows, start=1):
        if isinstance(obj, Mapping) and not isinstance(obj, dict):
            obj = dict(obj)
        builder.add(number, obj)
    return builder.build(), builder.problems


def _sample_keys(body: bytes) -> list[str] | None:
    """Keys of the first lines, or None when the sample is not clean."""
    keys: set[str] = set()
    head = body[: 1 << 16]
    lines = head.split(b"\n")
    if len(head) < len(body):
        lines = lines[:-1]  # the last one may be cut in the middle
    for raw in lines[:_SAMPLE_LINES]:
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


def _parse_fast(name: str, data: bytes) -> Parsed | None:
    """Parse with polars when the result provably equals the exact path's, else None.

    polars' NDJSON reader is fast but lenient in ways Harbor is not: it rejects ``null``
    lines, skips blank lines, ignores keys outside the schema, keeps the *first* of
    duplicated keys, reads ``{"a": null}`` as missing, and loses the int/float
    distinction. Each is closed here: null lines are found with numpy and overwritten
    in a copy with ``{}`` of the same length; every ``:`` in the file must match one
    non-null parsed cell (so no key, duplicate or null value went unseen); non-finite or
    huge values and anything polars rejects go to the exact path; and which cells were
    JSON integers comes from a byte-level proof (:func:`_integral_means_int`) plus json for
    the few rows it marks, or else from a second read with an Int64 schema.
    """
    import polars as pl

    end = len(data)
    while end and data[end - 1] in _JSON_WS:
        end -= 1
    if not end:
        return Parsed(name, np.zeros(0, np.int64), np.zeros(0, np.uint8))
    body = memoryview(data)[:end]
    buf = np.frombuffer(body, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = np.empty_like(starts)
    ends[:-1] = newlines
    ends[-1] = len(buf)
    if ends[-1] > 0 and data.find(b"\r", 0, end) >= 0:
        ends -= buf[np.maximum(ends - 1, 0)] == 13
    lengths = ends - starts
    first = buf[np.minimum(starts, len(buf) - 1)]
    if np.any(lengths == 0) or np.any((first == 32) | (first == 9) | (first == 13)):
        return None  # blank or indented lines: the exact path numbers them
    line_numbers = np.arange(1, len(starts) + 1, dtype=np.int64)
    if data.find(b"\\u", 0, end) >= 0 and _SURROGATE_ESCAPE.search(body) is not None:
        return None
    keys = _sample_keys(bytes(body[: 1 << 16]))
    if keys is None:
        return None
    candidates = np.flatnonzero(lengths == 4)
    null_rows = np.zeros(len(starts), dtype=np.bool_)
    null_starts = np.zeros(0, dtype=np.int64)
    if len(candidates):
        at = starts[candidates]
        is_null = (
            (buf[at] == ord("n"))
            & (buf[at + 1] == ord("u"))
            & (buf[at + 2] == ord("l"))
            & (buf[at + 3] == ord("l"))
        )
        null_rows[candidates[is_null]] = True
        null_starts = at[is_null]
    if len(null_starts):
        # One copy of the file with each null line replaced by "{}  " (same length),
        # assembled from slices of the original: no second full-size buffer.
        view = memoryview(data)
        pieces: list[Any] = []
        previous = 0
        for start in null_starts.tolist():
            pieces.append(view[previous:start])
            pieces.append(b"{}  ")
            previous = start + 4
        pieces.append(view[previous:])
        payload = b"".join(pieces)
        del pieces, view
    else:
        payload = data  # polars reads it as is; nothing to copy
    colons = data.count(b":", 0, end)

    def read(columns: list[str], dtype: Any, ignore_errors: bool = False) -> pl.DataFrame:
        schema = {k: dtype for k in columns} or {"\x00": pl.Float64}
        return pl.read_ndjson(payload, schema=schema, ignore_errors=ignore_errors)

    def cells(frame: pl.DataFrame) -> int:
        return frame.height * frame.width - sum(frame.null_count().row(0))

    try:
        frame = read(keys, pl.Float64)
        if cells(frame) != colons:
            # A key the sample did not show (or a duplicate, or a null value): find all keys.
            inferred = pl.read_ndjson(payload, infer_schema_length=None)
            keys = sorted(inferred.columns)
            frame = read(keys, pl.Float64)
            if cells(frame) != colons:
                return None
    except pl.exceptions.PolarsError:
        return None
    n = len(line_numbers)
    if frame.height != n:
        return None
    parsed = Parsed(name, line_numbers, np.full(n, EMPTY, dtype=np.uint8))
    any_present = np.zeros(n, dtype=np.bool_)
    integral_keys: list[str] = []
    for key in keys:
        column = frame.get_column(key)
        present = column.is_not_null().to_numpy()
        values = np.array(column.fill_null(0.0).to_numpy(), dtype=np.float64)
        # >=, not >: the integers 2**53 + 1 (which the exact path rejects) and 2**53 both
        # parse to the float 2**53 here, so only the exact path can tell them apart.
        if not np.all(np.isfinite(values)) or np.any(np.abs(values) >= MAX_EXACT_INT):
            return None
        kinds = present.astype(np.uint8) * np.uint8(FLOAT)
        if np.any(present & (values == np.trunc(values))):
            integral_keys.append(key)
        parsed.values[key] = values
        parsed.kinds[key] = kinds
        any_present |= present
    if integral_keys:
        by_value, max_fraction, marked = _integral_means_int(buf)
        largest = max(float(np.abs(parsed.values[k]).max()) for k in integral_keys)
        # Rows holding a "1.0"-style token are few in practice: read just those with json.
        rows = np.unique(np.searchsorted(starts, marked, side="right") - 1)
        if by_value and largest < 10.0 ** (15 - max_fraction) and len(rows) <= _MAX_MARKED:
            # Outside the marked rows no float token can hold an integral value, so an
            # integral cell there is an int; in the marked rows json.loads says which.
            for key in integral_keys:
                values = parsed.values[key]
                is_int = (parsed.kinds[key] == FLOAT) & (values == np.trunc(values))
                is_int[rows] = False
                parsed.kinds[key][is_int] = INT
                values[is_int] += 0.0  # JSON -0 is the int 0
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
            is_int = ints.get_column(key).is_not_null().to_numpy()
            parsed.kinds[key][is_int] = INT
            parsed.values[key][is_int] += 0.0  # JSON -0 is the int 0
    parsed.status[any_present] = OK
    parsed.status[null_rows] = NULL
    return parsed


def _integral_means_int(
    buf: npt.NDArray[np.uint8],
) -> tuple[bool, int, npt.NDArray[np.int64]]:
    """Where a number token with an integral value could be a JSON float.

    Returns ``(ok, max_fraction_digits, marked)``. ``ok`` holds when the bytes contain no
    exponent (a digit followed by ``e``/``E``) and no fraction of 18 or more digits;
    ``marked`` holds the positions of fractions of only zeros (``1.0``), whose rows the
    caller checks with json. Elsewhere a float token has a non-zero fraction of at most
    ``max_fraction_digits`` digits, and if every value is below ``10**(15 - that)`` the
    token has at most 15 significant digits, so its float64 keeps a non-zero fraction (15
    digits survive the round trip): integral cells there can only come from int tokens.
    A ``.`` or ``e`` inside a key only costs a marked row or a second read, never a wrong
    answer. The buffer is scanned in blocks so the temporaries stay a few MB.
    """
    n = len(buf)
    block = 1 << 22
    longest = 0
    marked: list[npt.NDArray[np.int64]] = []
    none = np.zeros(0, dtype=np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        chunk = buf[lo:hi]
        e = np.flatnonzero((chunk == ord("e")) | (chunk == ord("E"))) + lo
        if e.size:
            before = buf[np.maximum(e - 1, 0)]
            if np.any((before >= ord("0")) & (before <= ord("9"))):
                return False, 0, none
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
        else:
            return False, 0, none
        numeric = digits > 0  # a dot not followed by a digit is not inside a number
        marked.append(dots[numeric & zeros_only])
        real = numeric & ~zeros_only
        if real.any():
            longest = max(longest, int(digits[real].max()))
    return True, longest, np.concatenate(marked) if marked else none


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
    keys = sorted({k for p in parts for k in p.values})
    n = sum(p.n for p in parts)
    sources = [p.source for p in parts]
    unique_sources = list(dict.fromkeys(sources))
    source_codes = (
        np.concatenate(
            [np.full(p.n, unique_sources.index(p.source), dtype=np.int32) for p in parts]
        )
        if parts
        else np.zeros(0, np.int32)
    )
    lines = np.concatenate([p.lines for p in parts]) if parts else np.zeros(0, np.int64)
    status = np.concatenate([p.status for p in parts]) if parts else np.zeros(0, np.uint8)
    values: dict[str, npt.NDArray[np.float64]] = {}
    kinds: dict[str, npt.NDArray[np.uint8]] = {}
    for key in keys:
        if len(parts) == 1:
            values[key] = parts[0].values[key]
            kinds[key] = parts[0].kinds[key]
        else:
            values[key] = np.concatenate(
                [p.values.get(key, np.zeros(p.n, np.float64)) for p in parts]
            )
            kinds[key] = np.concatenate([p.kinds.get(key, np.zeros(p.n, np.uint8)) for p in parts])
    assert len(lines) == n
    return keys, {
        "sources": unique_sources,
        "source_codes": source_codes,
        "lines": lines,
        "status": status,
        "values": values,
        "kinds": kinds,
    }


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
            f"({', '.join(META_COLUMNS)}, {KIND_PREFIX}<key>); rename the key"
        )


def to_frame(parts: list[Parsed], *, backend: Backend = "pandas") -> Any:
    """Turn parsed sources into one DataFrame of the chosen backend."""
    keys, cols = _merge(parts)
    _check_names(keys, parts)
    if backend == "polars":
        return _to_polars(keys, cols)
    return _to_pandas(keys, cols)


def _to_pandas(keys: list[str], cols: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    data: dict[str, Any] = {
        "_source": pd.Categorical.from_codes(
            cols["source_codes"], categories=pd.Index(cols["sources"])
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

    return pl.Series(codes.astype(np.uint32, copy=False)).replace_strict(
        list(range(len(categories))), list(categories), return_dtype=pl.Enum(categories)
    )


def _to_polars(keys: list[str], cols: dict[str, Any]) -> pl.DataFrame:
    import polars as pl

    series = [
        _polars_enum(cols["source_codes"], cols["sources"]).alias("_source")
        if cols["sources"]
        else pl.Series("_source", [], dtype=pl.Enum([])),
        pl.Series("_line", cols["lines"], dtype=pl.Int64),
        _polars_enum(cols["status"], STATUSES).alias("_status"),
    ]
    series += [pl.Series(key, cols["values"][key], dtype=pl.Float64) for key in keys]
    series += [_polars_enum(cols["kinds"][key], KINDS).alias(KIND_PREFIX + key) for key in keys]
    # a dict keeps an empty-string key as a column name (a list of Series renames it)
    return pl.DataFrame({s.name: s for s in series})
