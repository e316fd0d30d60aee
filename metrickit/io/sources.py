"""Where reward JSONL comes from: paths, globs, text, bytes, rows, open files; and files read in
blocks cut at newlines."""

from __future__ import annotations

import glob
import gzip
import json
import os
import zlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from metrickit._core.frame import is_frame
from metrickit.errors import RewardFileError

BOM = b"\xef\xbb\xbf"



#: Bytes parsed at a time. Blocks keep the temporaries small (and in cache): peak memory
#: is the result plus a small multiple of this, and numpy scans run faster than on one
#: file-sized array.
BLOCK_BYTES = 4 << 20



# Lines longer than this take the exact path (json.loads holds a line as text and values,
# about twice the line; polars' reader needs several times that) and are not copied there.
LONG_LINE = 1 << 20



def looks_like_text(s: str) -> bool:
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
    if block_bytes is None and not gz:
        # A file of up to two blocks is one block: merging two parts into the frame costs
        # more than the smaller temporaries save (a 5 MB file of 200 sparse keys: 0.72 ->
        # 0.61 s, benchmarks/bench_load.py --shapes sparse).
        try:
            length = os.fstat(fh.fileno()).st_size
        except OSError:
            length = 0
        if size < length <= 2 * size:
            size = length

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



def expand_paths(item: str | os.PathLike[str]) -> list[Path]:
    text = os.fspath(item)
    path = Path(text)
    if path.exists() or not any(ch in text for ch in "*?["):
        return [path]
    matches = sorted(glob.glob(text, recursive=True))
    if not matches:
        raise RewardFileError(f"{text}: no files match this pattern")
    return [Path(m) for m in matches]



def iter_sources(source: Any) -> Iterable[tuple[str, Path | bytes | Iterable[Any]]]:
    if isinstance(source, bytes | bytearray | memoryview):
        yield "<bytes>", bytes(source)
    elif isinstance(source, str) and not source.strip() and "\n" not in source:
        raise RewardFileError(
            f"source is {source!r}: a blank string is neither a path nor JSONL text (an "
            "unset variable?); pass a reward file's path, or JSONL text with its lines"
        )
    elif isinstance(source, str) and looks_like_text(source) and not _is_file(source):
        if "\n" not in source and not _json_text(source):
            # '{run}/rewards.jsonl' that does not exist: a missing file, not bad JSON
            try:
                found = expand_paths(source)
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
        for path in expand_paths(source):
            yield str(path), path
    elif hasattr(source, "read"):
        data = source.read()
        name = str(getattr(source, "name", "<file>"))
        yield name, data.encode("utf-8") if isinstance(data, str) else bytes(data)
    elif isinstance(source, Mapping):
        raise RewardFileError(
            "read_rewards got a single dict; pass a list of dicts/None (one per trial)"
        )
    elif is_frame(source):
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
                for path in expand_paths(item):
                    yield str(path), path
        else:
            yield "<rows>", rows
    else:
        raise RewardFileError(
            f"read_rewards cannot read a {type(source).__name__}; expected a path, JSONL "
            "text, an open file, or a list of dicts/None"
        )
