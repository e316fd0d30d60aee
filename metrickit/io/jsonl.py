"""The strict reward-JSONL parse engine: bytes in, column arrays (``Parsed``) out, with every
broken line reported by number. polars reads the well-formed majority at full speed; numpy
checks what polars cannot (int vs float tokens, late keys); ``json`` takes the rest. How it
works is described in ``docs/internals.md``."""

from __future__ import annotations

import functools
import json
import re
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from metrickit._core.schema import (
    POLARS_INSTALL,
    Parsed,
    check_filled,
    merge_parts,
    polars_installed,
)
from metrickit._core.values import (
    EMPTY,
    FLOAT,
    INT,
    INVALID,
    MAX_EXACT_INT,
    NULL,
    OK,
    NonFinite,
    check_value,
    is_utf8,
    short_repr,
)
from metrickit.errors import MetrickitWarning, Problem
from metrickit.io.sources import BOM, LONG_LINE, split_blocks

if TYPE_CHECKING:
    import polars as pl


_JSON_WS = b" \t\r\n"

#: Without polars every block takes the exact path (``json``, line by line): the same
#: result, about 25 times slower (``benchmarks/bench_load.py``, method ``metrickit-exact``:
#: 4.8 MB/s against 124 MB/s with polars on a 42 MB file). Past 16 MB of one source the
#: wait passes 3 s (0.15 s with polars), so from there on the reader says once per process
#: how to get the fast path: in the first seconds of a long read, never for a short one
#: (the test and example files are all far smaller).
SLOW_READ_BYTES = 16 << 20
_told_slow = False



_SAMPLE_LINES = 200



#: Blocks whose polars read is under way while this thread checks the block before them:
#: two keep polars' pool busy between one read's end and the next one's start (one: 12 %
#: slower on a 42 MB file, three: no faster; ``docs/guides/performance.md``).
_READS_AHEAD = 2



# A block parsed into dense columns holds at most this many cells, or 4x its own cells.
_DENSE_BLOCK_CELLS = 1 << 20



# ... or, for the frame readers, MAX_FILLED_CELLS when it has at most this many keys.
_DENSE_KEYS = 1000



# Rows with a "1.0"-style token are re-read with json; past this many, a second polars
# read (Int64 schema) is cheaper.
_MAX_MARKED = 20_000



# A \uD800-\uDFFF escape: half of a UTF-16 surrogate pair. Python's json decodes a lone one
# into a str that cannot be encoded as UTF-8 (so it cannot name a polars column), and
# polars' reader renames such keys; lines with one always take the exact path.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")



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
    for parsed, found in iter_parsed(name, blocks, dense_cells=dense_cells):
        parts.append(parsed)
        problems.extend(found)
    if not parts:
        parts.append(Parsed(name, np.zeros(0, np.int64), np.zeros(0, np.uint8)))
    return parts, problems



def iter_parsed(
    name: str, blocks: Iterable[bytes], *, dense_cells: int = 0
) -> Iterator[tuple[Parsed, list[Problem]]]:
    """Each block of one source parsed, fast path or exact, with its problems; lines
    numbered across the blocks."""
    for block, parsed, offset in fast_blocks(name, blocks, dense_cells=dense_cells):
        found: list[Problem] = []
        if parsed is None:
            # A block read line by line is built densely, so it is checked on its own:
            # the message says it is one block, not the whole source.
            last = offset + block.count(b"\n") + (not block.endswith(b"\n"))
            where = f"lines {offset + 1:,}-{last:,} (one block): "
            parsed, found = parse_slow(name, block, where)
        if offset:
            parsed.lines += offset
            found = [replace(p, line=p.line + offset) for p in found]
        yield parsed, found



def fast_blocks(
    name: str, blocks: Iterable[bytes], *, dense_cells: int = 0
) -> Iterator[tuple[bytes, Parsed | None, int]]:
    """Each block of one source (a byte-order mark at the start of the file removed) with
    its fast-path parse, or None where the caller must take the exact path, and the number
    of lines before it (its parsed lines still count from 1).

    The fast path's thirds overlap: this thread prepares each block's bytes
    (:func:`prepare_fast`) and hands it to a pool that runs polars' read
    (:func:`read_fast`), then checks the oldest block read (:func:`check_fast`) while the
    reads of the :data:`_READS_AHEAD` blocks after it go on, so polars always has a block
    to read. polars and numpy both release the GIL, so they share the cores (polars' read
    alone can keep two busy). A source of one block runs in the caller's thread alone.
    """
    if not polars_installed():
        yield from _exact_blocks(name, blocks)
        return
    # the keys of the blocks polars read so far, for the schema of the next read (a block
    # the exact path parses adds none: a key missing from the schema costs the fast path a
    # second read, never a wrong answer)
    keys: set[str] = set()
    pool: ThreadPoolExecutor | None = None
    pending: deque[tuple[bytes, _Reading]] = deque()  # oldest first
    offset = 0

    def settle() -> tuple[bytes, Parsed | None, int]:
        """The oldest block's read awaited (or done here, for a block not begun) and
        checked, with the number of lines before it."""
        nonlocal offset
        before, state = pending.popleft()
        if isinstance(state, Future):
            got: FastRead | Parsed | None = state.result()
        elif isinstance(state, FastBlock):
            got = read_fast(state, set(keys), dense_cells)
        else:
            got = state
        if isinstance(got, FastRead):
            if got.frame is not None:
                keys.update(got.frame.columns)
            got = check_fast(got)
        start = offset
        offset += got.newlines if got is not None else before.count(b"\n")
        return before, got, start

    with ExitStack() as stack:
        for index, (raw, more) in enumerate(_ahead(blocks)):
            block = raw[len(BOM) :] if index == 0 and raw.startswith(BOM) else raw
            # A byte-order mark only counts at the start of the file; elsewhere it is part
            # of a (then invalid) line, and the exact path says so.
            here = None if BOM in block[:3] else prepare_fast(name, block, first=index == 0)
            state: _Reading = here
            if isinstance(here, FastBlock) and (more or pending):
                if pool is None:
                    pool = stack.enter_context(
                        ThreadPoolExecutor(_READS_AHEAD, thread_name_prefix="metrickit-read")
                    )
                state = pool.submit(read_fast, here, set(keys), dense_cells)
            pending.append((block, state))
            del block, here, state
            while len(pending) > _READS_AHEAD:
                yield settle()
        while pending:
            yield settle()



def _ahead(blocks: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Each block with whether another follows it (the next one's bytes read first)."""
    it = iter(blocks)
    here = next(it, None)
    while here is not None:
        after = next(it, None)
        yield here, after is not None
        here = after



def _exact_blocks(name: str, blocks: Iterable[bytes]) -> Iterator[tuple[bytes, None, int]]:
    """:func:`fast_blocks` without polars: every block for the exact path, which gives the
    same result more slowly; a source past :data:`SLOW_READ_BYTES` says so, once."""
    global _told_slow
    offset = read = 0
    for index, raw in enumerate(blocks):
        block = raw[len(BOM) :] if index == 0 and raw.startswith(BOM) else raw
        read += len(block)
        if read >= SLOW_READ_BYTES and not _told_slow:
            _told_slow = True
            warnings.warn(
                f"{name}: a large file, read with metrickit's exact JSONL parser because "
                "polars is not installed: the result is the same, but it takes about 25 "
                f"times as long as the fast path, which needs polars ({POLARS_INSTALL}); "
                "this note is shown once",
                MetrickitWarning,
                stacklevel=3,
            )
        yield block, None, offset
        offset += block.count(b"\n")



def _concat(name: str, parts: list[Parsed]) -> Parsed:
    if len(parts) == 1:
        return parts[0]
    newlines = sum(p.newlines for p in parts)
    _, cols = merge_parts(parts)
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
    return json.loads(text, parse_constant=NonFinite, object_pairs_hook=_pairs_hook)






@dataclass
class RowBuilder:
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
                f"line is {kind} ({short_repr(obj)}); expected a JSON object of named numbers "
                "or null",
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
            if not key.isascii() and not is_utf8(key):
                self.bad(
                    line,
                    f"key {key!r} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape "
                    "without its pair), which is not valid Unicode and cannot name a column; "
                    "expected a key of UTF-8 text",
                    key=key,
                )
                return
            result = check_value(key, value)
            if isinstance(result, str):
                self.bad(line, result, key=key, value=short_repr(value, 200))  # its repr
                return
            checked[key] = result
        row = len(self.lines)
        self.lines.append(line)
        self.status.append(OK if checked else EMPTY)
        for key, cell in checked.items():
            self.cells.setdefault(key, {})[row] = cell

    def build(self, where: str = "") -> Parsed:
        """The rows as dense columns; refused first if they would be mostly zero-filled
        (``where`` names the part of the source they are, when they are not all of it)."""
        n = len(self.lines)
        check_filled(self.source, n, len(self.cells), sum(len(c) for c in self.cells.values()),
                     where)
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



def parse_slow(name: str, data: bytes, where: str = "") -> tuple[Parsed, list[Problem]]:
    builder, newlines = slow_rows(name, data)
    parsed = builder.build(where)
    parsed.newlines = newlines
    return parsed, builder.problems



def slow_rows(name: str, data: bytes) -> tuple[RowBuilder, int]:
    """Every line of ``data`` through json, into a builder (sparse cells); and the number
    of newlines in ``data``."""
    builder = RowBuilder(name)
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
                f"invalid JSON ({exc.msg} at column {exc.colno}): {short_repr(text)}; expected a "
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
    :data:`LONG_LINE` as a view into ``data``, so it is not copied before it is decoded."""
    if len(data) <= LONG_LINE:
        for raw in data.split(b"\n"):
            yield raw.strip(_JSON_WS)
        return
    view = memoryview(data)
    lo = 0
    while lo <= len(data):
        hi = data.find(b"\n", lo)
        if hi < 0:
            hi = len(data)
        if hi - lo <= LONG_LINE:
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
    builder = RowBuilder(name)
    for number, obj in enumerate(rows, start=1):
        if isinstance(obj, Mapping) and not isinstance(obj, dict):
            obj = dict(obj)
        builder.add(number, obj)
    return builder.build(), builder.problems



def _sample_keys(
    body: bytes | memoryview, lines_wanted: int = _SAMPLE_LINES, head_bytes: int = 1 << 16
) -> list[str] | None:
    """Keys of the first lines, or None when the sample is not clean.

    The sample only steers: polars' read and the checks after it decide each block, so a
    key the sample misses costs time, never a wrong answer.
    """
    keys: set[str] = set()
    head = bytes(body[:head_bytes])
    lines = head.split(b"\n")
    if len(head) < len(body):
        lines = lines[:-1]  # the last one may be cut in the middle
    sample = [line for raw in lines[:lines_wanted] if (line := raw.strip(_JSON_WS))]
    try:
        # One json call for the whole sample, as an array. The lines parse as one value each
        # exactly when each is a JSON value on its own, so a failure or another count means
        # a line that is not. Decode strictly first: json.loads(bytes) lets UTF-8-encoded
        # surrogates through ('surrogatepass'), and such a key crashes polars' schema.
        values = json.loads("[" + b",".join(sample).decode("utf-8") + "]")
    except (ValueError, RecursionError):
        return None
    if len(values) != len(sample):
        return None
    for obj in values:
        if isinstance(obj, dict):
            keys.update(obj)
        elif obj is not None:
            return None
    return sorted(keys)



def parse_fast(
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
    if not polars_installed():
        return None
    keys_hint = set(keys_hint)
    block = prepare_fast(name, data, first=not keys_hint)
    if not isinstance(block, FastBlock):
        return block
    read = read_fast(block, keys_hint, dense_cells)
    return check_fast(read) if read is not None else None



@dataclass
class FastBlock:
    """A block's bytes as the fast path's later halves need them: line bounds, counts, and
    the payload polars reads (null lines overwritten with ``{}``)."""

    name: str
    body: memoryview
    buf: npt.NDArray[np.uint8]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    #: the number of ``\n`` in the block, trailing ones included
    newlines: int
    colons: int
    letters: int
    null_rows: npt.NDArray[np.bool_]
    has_backslash: bool
    #: the keys of the first lines
    sampled: list[str]
    payload: bytes



@dataclass
class FastRead:
    """A block as polars read it (see :func:`read_fast`)."""

    block: FastBlock
    #: the schema polars read with
    keys: list[str]
    #: polars' columns; :func:`check_fast` takes them (and drops them once copied out)
    frame: pl.DataFrame | None



#: A block on its way through :func:`fast_blocks`: polars reading it in the reading pool,
#: prepared and waiting, or already done (whitespace only; None for the exact path).
_Reading = Future[FastRead | None] | FastBlock | Parsed | None



def prepare_fast(name: str, data: bytes, *, first: bool = True) -> Parsed | FastBlock | None:
    """The first third of :func:`parse_fast`, bytes only: where the lines are, the ``null``
    lines overwritten, the keys of the first lines (more of them in the ``first`` block of a
    source, which has no keys of earlier blocks to go by). A :class:`Parsed` for a block of
    only whitespace, None for the exact path."""
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
    newlines, colons, letters = _census(buf)
    starts = np.empty(len(newlines) + 1, dtype=np.int64)
    starts[0] = 0
    starts[1:] = newlines + 1
    ends = np.empty_like(starts)
    ends[:-1] = newlines
    ends[-1] = len(buf)
    if data.find(b"\r", 0, end) >= 0:
        ends -= buf[np.maximum(ends - 1, 0)] == 13
    lengths = ends - starts
    if int(lengths.max()) > LONG_LINE:
        return None
    head = buf[np.minimum(starts, len(buf) - 1)]
    if np.any(lengths == 0) or np.any((head == 32) | (head == 9) | (head == 13)):
        return None  # blank or indented lines: the exact path numbers them
    n = len(starts)
    has_backslash = data.find(b"\\", 0, end) >= 0
    if has_backslash and _SURROGATE_ESCAPE.search(body) is not None:
        return None
    # the whole block: so it knows where the sample is cut; after the first block the keys
    # of the blocks before it are known, and a key they lack costs one schema inference
    if first:  # a key missing from the sample costs a second read
        sampled = _sample_keys(body, 10 * _SAMPLE_LINES, 1 << 18)
    else:
        sampled = _sample_keys(body, _SAMPLE_LINES // 10)
    if sampled is None:
        return None
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
    return FastBlock(
        name, body, buf, starts, ends, len(newlines) + trailing_newlines, colons, letters,
        null_rows, has_backslash, sampled, payload,
    )



def read_fast(
    block: FastBlock, keys_hint: Iterable[str] = (), dense_cells: int = 0
) -> FastRead | None:
    """The second third of :func:`parse_fast`: polars reads the block with the keys sampled
    and ``keys_hint`` as its schema (and again for keys the sample missed); None for the
    exact path."""
    import polars as pl

    n, colons, payload = len(block.starts), block.colons, block.payload
    keys = sorted(set(block.sampled).union(keys_hint))

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

    def read(columns: list[str]) -> pl.DataFrame:
        schema = {k: pl.Float64 for k in columns} or {"\x00": pl.Float64}
        return pl.read_ndjson(payload, schema=schema)

    def cells(frame: pl.DataFrame) -> int:
        return frame.height * frame.width - sum(frame.null_count().row(0))

    try:
        frame = read(keys)
        if cells(frame) != colons:
            # A key the sample did not show (or a duplicate, or a null value): json reads
            # the rows with more ":" than cells for their keys, unless they are many (keys
            # that change from line to line: the exact path keeps such a block sparse).
            unseen = _unseen_keys(block.buf, block.starts, block.ends, frame, n // 4 + 1000)
            new = sorted(unseen.difference(keys)) if unseen is not None else []
            if not new or too_sparse(len(keys) + len(new)):
                return None
            more = read(new)  # only the new columns: the others are read
            if more.height != frame.height or cells(frame) + cells(more) != colons:
                return None
            frame = pl.concat([frame, more], how="horizontal")
            keys = list(frame.columns)
    except pl.exceptions.PolarsError:
        return None
    return FastRead(block, keys, frame)



def check_fast(read: FastRead) -> Parsed | None:
    """The second half of :func:`parse_fast`: polars' columns checked against the
    block's bytes, or None for the exact path."""
    import polars as pl

    block, keys, frame = read.block, read.keys, read.frame
    name, body, buf, starts, ends = block.name, block.body, block.buf, block.starts, block.ends
    letters, null_rows, sampled = block.letters, block.null_rows, block.sampled
    has_backslash = block.has_backslash
    read.frame = None  # so ``del frame`` below frees it
    n = len(starts)
    if frame is None or frame.height != n:
        return None
    null_counts: tuple[int, ...] = frame.null_count().row(0)
    # a key of an earlier block that this block does not have gets no column here
    kept = [i for i, key in enumerate(frame.columns) if null_counts[i] < n or key in sampled]
    if len(kept) < frame.width:
        frame = frame.select(pl.nth(kept))  # by position: a key may look like a regex
        null_counts = tuple(null_counts[i] for i in kept)
    names: list[str] = frame.columns
    n_keys = len(names)
    if 2 * sum(null_counts) > n * n_keys:  # mostly missing: only the present cells
        columns = _sparse_columns(frame, null_counts)
    elif n_keys:  # polars gives NaN for null
        matrix = np.asfortranarray(frame.to_numpy(writable=True), dtype=np.float64)
        columns = _dense_columns(matrix, sum(null_counts))
    else:
        columns = _dense_columns(np.zeros((n, 0), dtype=np.float64, order="F"), 0)
    del frame
    if columns is None:
        return None
    values, kinds, has_cell, ints, largest = columns
    key_cells = {key: n - nulls for key, nulls in zip(names, null_counts, strict=True)}
    column = {key: j for j, key in enumerate(names)}
    integral: npt.NDArray[np.bool_] = np.logical_or.reduce(ints, axis=0)
    if integral.any():
        # a JSON -0 is the int 0: only a block with a "-" can hold one (one byte: memchr)
        signed = block.payload.find(b"-") >= 0
        # Without escapes a key's bytes are its UTF-8 name, each key's bytes occur once per
        # cell, and the rest of the block is numbers and punctuation: so when the keys hold
        # every "e"/"E" of the block, no number has an exponent, and the scan for one can go.
        exponents = True
        if not has_backslash:
            in_keys = sum(
                count * (key.count("e") + key.count("E")) for key, count in key_cells.items()
            )
            exponents = letters != in_keys
        limit, marked = _integral_means_int(buf, exponents=exponents)
        by_value = limit == np.inf or float(largest[integral].max()) < limit
        floats = None
        if by_value and not has_backslash:
            floats = _float_token_cells(buf, marked, starts, keys)
        if floats is not None:
            # Outside the float-token cells found, an integral cell is an int.
            float_rows, float_keys = floats
            where = np.array([column.get(key, -1) for key in keys], dtype=np.int64)[float_keys]
            if np.any(where < 0):
                return None  # a float token of a key without cells: cannot happen
            ints[float_rows, where] = False
            _mark_ints(kinds, values, ints, integral, signed)
        else:
            # Rows holding a "1.0"-style token are few in practice: read just those with json.
            rows = np.unique(np.searchsorted(starts, marked, side="right") - 1)
            if by_value and len(rows) <= _MAX_MARKED:
                # Outside the marked rows no float token can hold an integral value, so an
                # integral cell there is an int; in the marked rows json.loads says which.
                ints[rows, :] = False
                _mark_ints(kinds, values, ints, integral, signed)
                for row in rows.tolist():
                    obj = json.loads(bytes(body[int(starts[row]) : int(ends[row])]))
                    for key, value in obj.items():
                        j = column.get(key)
                        if j is not None and type(value) is int:
                            kinds[row, j] = INT
                            values[row, j] += 0.0
            else:
                integral_keys = [key for key, j in column.items() if integral[j]]
                try:
                    read_ints = pl.read_ndjson(
                        block.payload,
                        schema={key: pl.Int64 for key in integral_keys},
                        ignore_errors=True,
                    )
                except pl.exceptions.PolarsError:
                    return None
                if read_ints.height != n:
                    return None
                for key in integral_keys:
                    j = column[key]
                    is_int = read_ints.get_column(key).alias("value").is_not_null().to_numpy()
                    _mark_int(kinds[:, j], values[:, j], is_int)
    parsed = Parsed(
        name,
        np.arange(1, n + 1, dtype=np.int64),
        np.full(n, EMPTY, dtype=np.uint8),
        newlines=block.newlines,
    )
    # Views, not copies: the arrays are in Fortran order, so a column is contiguous, and
    # merge_parts copies a block's columns into the frame's arrays all at once.
    for key, j in column.items():
        parsed.values[key] = values[:, j]
        parsed.kinds[key] = kinds[:, j]
    if has_cell is None:
        parsed.status[:] = OK if names else EMPTY
    else:
        parsed.status[has_cell] = OK
    parsed.status[null_rows] = NULL
    return parsed



def _column_groups(rows: int, columns: int) -> list[slice]:
    step = max(1, _GROUP_CELLS // max(rows, 1))
    return [slice(lo, min(lo + step, columns)) for lo in range(0, columns, step)]



#: A block's cells as rows x keys arrays (Fortran order: a column is contiguous): values
#: (0 where missing), kinds (FLOAT where present), whether each row has a cell (None: every
#: row has every key), the present cells with an integral value, each column's largest
#: magnitude.
_Columns = tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8], npt.NDArray[np.bool_] | None,
                 npt.NDArray[np.bool_], npt.NDArray[np.float64]]



def _dense_columns(values: npt.NDArray[np.float64], nulls: int) -> _Columns | None:
    """The block's cells as :data:`_Columns`, the missing ones among them NaN; None when a
    value is not finite or reaches 2**53.

    ``values`` comes from polars with NaN for its ``nulls`` null cells: the NaN cells are
    the missing ones, which saves polars a validity frame (a pass and a conversion of its
    own). That holds only if no parsed value is NaN, so the NaN cells must number exactly
    ``nulls``; else None (the exact path decides).

    One conversion for all columns and numpy on groups of columns: a key costs no
    Python-level step of its own, which a file of 200 keys would pay per block.
    """
    n, width = values.shape
    present = np.empty((n, width), dtype=np.bool_, order="F") if nulls else None
    ints = np.empty((n, width), dtype=np.bool_, order="F")
    largest = np.zeros(width, dtype=np.float64)
    scratch = _scratch.f64
    missing = 0
    for group in _column_groups(n, width):
        part = values[:, group]
        if present is not None:
            absent = ints[:, group]  # borrowed until the integral cells are computed
            np.isnan(part, out=absent)
            missing += int(np.count_nonzero(absent))
            np.copyto(part, 0.0, where=absent)
            np.logical_not(absent, out=present[:, group])
        if part.size <= len(scratch):
            temp = scratch[: part.size].reshape(part.shape, order="F")
        else:  # a column of more rows than a group's cells
            temp = np.empty(part.shape, dtype=np.float64, order="F")
        magnitude = np.abs(part, out=temp).max(axis=0) if n else np.zeros(part.shape[1])
        # >=, not >: the integers 2**53 + 1 (which the exact path rejects) and 2**53 both
        # parse to the float 2**53 here, so only the exact path can tell them apart. NaN
        # and infinities fail the comparison too (a filled 0 is finite).
        if not np.all(magnitude < MAX_EXACT_INT):
            return None
        largest[group] = magnitude
        np.equal(part, np.trunc(part, out=temp), out=ints[:, group])
        if present is not None:
            ints[:, group] &= present[:, group]
    if missing != nulls:
        return None
    if present is not None:
        kinds = present.view(np.uint8) * np.uint8(FLOAT)
        has_cell: npt.NDArray[np.bool_] = np.logical_or.reduce(present, axis=1)
        return values, kinds, has_cell, ints, largest
    kinds = np.full((n, width), FLOAT, dtype=np.uint8, order="F")
    return values, kinds, None, ints, largest



def _sparse_columns(frame: pl.DataFrame, null_counts: Sequence[int]) -> _Columns | None:
    """:func:`_dense_columns` for a block whose cells are mostly missing (3 of 200 keys a
    line, say): polars lists each column's present cells (row numbers and values, on all
    cores) and numpy scatters them into zeroed arrays, so the missing majority costs no
    conversion or check of its own."""
    import polars as pl

    n, width = frame.shape
    lists = frame.select(
        pl.concat_list(
            [pl.nth(j).is_not_null().arg_true().cast(pl.Int64).implode() for j in range(width)]
        ).alias("rows"),
        pl.concat_list([pl.nth(j).drop_nulls().implode() for j in range(width)]).alias("values"),
    )
    rows = lists.get_column("rows").explode().to_numpy()
    cells = lists.get_column("values").explode().to_numpy()
    del lists
    counts = n - np.asarray(null_counts, dtype=np.int64)
    if rows.dtype != np.int64 or cells.dtype != np.float64 or len(cells) != int(counts.sum()):
        return None
    magnitude = np.abs(cells)
    # >=, not >: see _dense_columns (NaN and infinities fail the comparison too)
    if not np.all(magnitude < MAX_EXACT_INT):
        return None
    largest = np.zeros(width, dtype=np.float64)
    some = counts > 0
    if cells.size:  # column j's cells follow column j - 1's
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        largest[some] = np.maximum.reduceat(magnitude, offsets[some])
    at = np.repeat(np.arange(width, dtype=np.int64) * n, counts) + rows
    values = np.zeros(n * width, dtype=np.float64)
    values[at] = cells
    kinds = np.zeros(n * width, dtype=np.uint8)
    kinds[at] = FLOAT
    ints = np.zeros(n * width, dtype=np.bool_)
    ints[at] = cells == np.trunc(cells)
    has_cell = np.zeros(n, dtype=np.bool_)
    has_cell[rows] = True
    shape = (n, width)
    return (values.reshape(shape, order="F"), kinds.reshape(shape, order="F"), has_cell,
            ints.reshape(shape, order="F"), largest)



def _mark_ints(
    kinds: npt.NDArray[np.uint8],
    values: npt.NDArray[np.float64],
    ints: npt.NDArray[np.bool_],
    columns: npt.NDArray[np.bool_],
    signed: bool = True,
) -> None:
    """:func:`_mark_int` on the rows x keys arrays, for the groups holding a ``columns`` key
    (``signed=False``: the block holds no ``-0``, so no value needs its sign cleared)."""
    for group in _column_groups(*kinds.shape):
        if columns[group].any():
            _mark_int(kinds[:, group], values[:, group], ints[:, group], signed)



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
    kinds: npt.NDArray[np.uint8], values: npt.NDArray[np.float64], is_int: npt.NDArray[np.bool_],
    signed: bool = True,
) -> None:
    """Mark cells as JSON integers (they were FLOAT): one pass each, no fancy indexing;
    ``signed=False`` when no cell can hold -0 (its block has no ``-0``)."""
    np.subtract(kinds, is_int.view(np.uint8), out=kinds)  # FLOAT - INT == 1
    if signed:
        np.add(values, 0.0, out=values, where=is_int)  # JSON -0 is the int 0



# The numpy checks of a block run on groups of columns of about this many cells, so their
# temporaries stay in cache.
_GROUP_CELLS = 1 << 17



# Scans run on pieces of this many bytes: the same scans run ~3x faster than on 8 MB.
_SCAN_BYTES = 1 << 20



class _Scratch(threading.local):
    """Per-thread buffers for the byte scans' intermediate results.

    A fresh temporary of a megabyte is fresh memory from the system: its first use
    faults in every page, which costs the scans ~10x their arithmetic. The scans write
    into these instead (``out=``), one piece of the block at a time.
    """

    def __init__(self) -> None:
        size = _SCAN_BYTES + 64
        self.u8 = np.empty(size, dtype=np.uint8)
        self.mask = np.empty(size, dtype=np.bool_)
        self.other = np.empty(size, dtype=np.bool_)
        self.f64 = np.empty(_GROUP_CELLS, dtype=np.float64)



_scratch = _Scratch()



def _census(buf: npt.NDArray[np.uint8]) -> tuple[npt.NDArray[np.int64], int, int]:
    """The positions of the newlines of ``buf``, its number of ``:`` and of ``e``/``E``."""
    s = _scratch
    newlines: list[npt.NDArray[np.int64]] = []
    colons = letters = 0
    for lo in range(0, len(buf), _SCAN_BYTES):
        piece = buf[lo : lo + _SCAN_BYTES]
        m = len(piece)
        mask, u8 = s.mask[:m], s.u8[:m]
        np.equal(piece, 10, out=mask)
        newlines.append(np.flatnonzero(mask) + lo)
        np.equal(piece, ord(":"), out=mask)
        colons += int(np.count_nonzero(mask))
        np.bitwise_or(piece, 32, out=u8)  # folds "E" onto "e" (and nothing else onto it)
        np.equal(u8, ord("e"), out=mask)
        letters += int(np.count_nonzero(mask))
    if not newlines:
        return np.zeros(0, dtype=np.int64), colons, letters
    return np.concatenate(newlines), colons, letters



def _integral_means_int(
    buf: npt.NDArray[np.uint8], *, exponents: bool = True
) -> tuple[float, npt.NDArray[np.int64]]:
    """Where a number token with an integral value could be a JSON float.

    Returns ``(limit, marked)``. ``marked`` holds the positions of the ``.`` of fractions
    of only zeros (``1262.0``) or of 18 digits or more, and of the ``e``/``E`` of
    exponents (a digit before it): the tokens that can hold an integral value, which the
    caller classifies one by one. Every other float token keeps a non-zero fraction in
    its float64, so an integral cell there is an int token, provided the cells' values
    are below ``limit``.

    A token of at most 15 digits keeps its fraction (15 significant digits survive the
    round trip to float64): when no run of 17 digit-or-dot bytes exists, no token has more
    (a fraction has its ``.``), the limit is infinite, and only the ``.`` followed by
    ``0`` need a look. Otherwise each ``.`` is followed digit by digit: with fractions of
    at most ``d`` digits elsewhere, a value below ``10**(15 - d)`` has at most 15.

    A ``.`` or ``e`` inside a key only marks a position the caller drops (it is not
    reached from a ``:`` over number bytes) or costs a slower classification, never a
    wrong answer. The buffer is scanned in blocks so the temporaries stay a few MB.
    """
    marked = _short_tokens(buf, exponents)
    if marked is not None:
        return np.inf, marked
    return _any_tokens(buf, exponents)



def _exponents(buf: npt.NDArray[np.uint8], lo: int, hi: int) -> npt.NDArray[np.int64]:
    """The positions in ``[lo, hi)`` of an ``e``/``E`` after a digit (the pair may
    straddle pieces; ``| 32`` folds ``E`` onto ``e``)."""
    pair = buf[max(lo - 1, 0) : hi]
    m = len(pair) - 1
    u8, exponent, digit = _scratch.u8[:m], _scratch.mask[:m], _scratch.other[:m]
    np.bitwise_or(pair[1:], 32, out=u8)
    np.equal(u8, ord("e"), out=exponent)
    np.subtract(pair[:-1], ord("0"), out=u8)
    np.less(u8, 10, out=digit)
    exponent &= digit
    return np.flatnonzero(exponent) + max(lo, 1)



def _short_tokens(buf: npt.NDArray[np.uint8], exponents: bool) -> npt.NDArray[np.int64] | None:
    """The marked positions of :func:`_integral_means_int` when no run of 17 digit or
    ``.`` bytes exists in ``buf``; else None."""
    n = len(buf)
    marked: list[npt.NDArray[np.int64]] = []
    for lo in range(0, n, _SCAN_BYTES):
        hi = min(lo + _SCAN_BYTES, n)
        # runs starting in [lo, hi): the piece reaches 16 bytes further
        if _has_long_run(buf[lo : min(hi + 16, n)]):
            return None
        if exponents:
            marked.append(_exponents(buf, lo, hi))
        dots = _dot_zero(buf, lo, hi)
        if not dots.size:
            continue
        # a "." then "0": the start of a fraction that may be all zeros (at most 15 digits)
        zeros_only = np.ones(dots.size, dtype=np.bool_)
        alive = np.ones(dots.size, dtype=np.bool_)
        for k in range(2, 17):
            at = np.minimum(dots + k, n - 1)
            c = buf[at]
            digit = alive & (dots + k < n) & ((c - ord("0")) < 10)
            zeros_only &= ~digit | (c == ord("0"))
            alive = digit
            if not alive.any():
                break
        marked.append(dots[zeros_only])
    return np.concatenate(marked) if marked else np.zeros(0, dtype=np.int64)



_EIGHT_ONES = np.uint64(0x0101010101010101)



def _has_long_run(piece: npt.NDArray[np.uint8]) -> bool:
    """Whether 17 consecutive bytes of ``piece`` are digits or ``.``.

    Such a run holds an aligned 8-byte word of them, so the words come first (an eighth
    of the comparisons); only a piece with such a word (a long number, digits in keys)
    is searched byte by byte.
    """
    m = len(piece)
    whole = m // 8 * 8
    u8, near, words = _scratch.u8[:m], _scratch.mask[:m], _scratch.other[: whole // 8]
    np.subtract(piece, ord("."), out=u8)
    np.less(u8, 12, out=near)  # "." "/" and the digits: a superset, for the words
    np.equal(near[:whole].view(np.uint64), _EIGHT_ONES, out=words)
    if not words.any():
        return False
    run = ((piece - ord("0")) < 10) | (piece == ord("."))
    run = run[:-1] & run[1:]  # run[i]: bytes i..i+1 all digits or "."
    run = run[:-2] & run[2:]  # i..i+3
    run = run[:-4] & run[4:]  # i..i+7
    run = run[:-8] & run[8:]  # i..i+15
    return bool(np.any(run[:-1] & run[1:]))  # i..i+16



_DOT_ZERO = int.from_bytes(b".0", "little")



def _dot_zero(buf: npt.NDArray[np.uint8], lo: int, hi: int) -> npt.NDArray[np.int64]:
    """The positions in ``[lo, hi)`` of a ``.`` followed by ``0``: the byte pairs read as
    16-bit words, at even and at odd offsets (half the comparisons of byte by byte)."""
    found = []
    for shift in (0, 1):
        start = lo + shift
        pairs = (min(hi + 1, len(buf)) - start) // 2
        if pairs <= 0:
            continue
        words = buf[start : start + 2 * pairs].view("<u2")
        hit = _scratch.mask[:pairs]
        np.equal(words, _DOT_ZERO, out=hit)
        found.append(np.flatnonzero(hit) * 2 + start)
    if not found:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate(found))



def _any_tokens(
    buf: npt.NDArray[np.uint8], exponents: bool
) -> tuple[float, npt.NDArray[np.int64]]:
    """:func:`_integral_means_int` for any token length: every ``.`` followed digit by
    digit."""
    n = len(buf)
    longest = 0
    marked: list[npt.NDArray[np.int64]] = []
    for lo in range(0, n, _SCAN_BYTES):
        hi = min(lo + _SCAN_BYTES, n)
        if exponents:
            marked.append(_exponents(buf, lo, hi))
        dots = np.flatnonzero(buf[lo:hi] == ord(".")) + lo
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
    limit = 10.0 ** (15 - longest)
    return limit, np.concatenate(marked) if marked else np.zeros(0, dtype=np.int64)



# The bytes a JSON number token (and the whitespace around it) is made of.
NUMBER_BYTES = np.zeros(256, dtype=np.bool_)
NUMBER_BYTES[list(b"0123456789.eE+- \t\r")] = True



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
    back = _look_back(buf, marked, NUMBER_BYTES)
    if back is None:
        return None
    colon = back[buf[np.maximum(back, 0)] == ord(":")]
    if colon.size == 0:
        return empty, empty
    close = _look_back(buf, colon, WHITESPACE)  # the key's closing quote
    if close is None or np.any(buf[np.maximum(close, 0)] != ord('"')):
        return None
    table = _key_table(tuple(keys))
    if table is None:
        return None  # two keys alike in length and first and last bytes
    key_fp, order, sorted_fp, longest = table
    open_ = _look_back(buf, close, NOT_QUOTE, longest + 2)
    if open_ is None or np.any(buf[np.maximum(open_, 0)] != ord('"')):
        return None
    fp = _fingerprint(buf, open_ + 1, close - open_ - 1)
    key_index = order[np.minimum(np.searchsorted(sorted_fp, fp[0]), len(order) - 1)]
    if not all(np.array_equal(k[key_index], f) for k, f in zip(key_fp, fp, strict=True)):
        return None
    rows = np.searchsorted(starts, colon, side="right") - 1
    return rows, key_index.astype(np.int64)



WHITESPACE = np.zeros(256, dtype=np.bool_)
WHITESPACE[list(b" \t\r")] = True



NOT_QUOTE = np.ones(256, dtype=np.bool_)
NOT_QUOTE[ord('"')] = False



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



def raise_message(problems: list[Problem]) -> str:
    first = str(problems[0])
    if len(problems) > 1:
        first += (
            f" (and {len(problems) - 1} more problem(s) in this input; "
            "read_rewards(..., errors='report') lists them all)"
        )
    return first
