"""Reward files as a Dask DataFrame: ``read_rewards(..., backend="dask")``.

Each file is cut into blocks of about ``block_bytes`` at line boundaries (a gzip file is
one block), and every block becomes one partition, parsed on the workers by the same
strict parser as the eager path (:func:`metrickit.io.scan.parse_piece`). A first, parallel
pass over the blocks finds the reward keys (a Dask frame needs its columns up front),
counts each block's lines (so ``_line`` is numbered per file, as in the eager frame) and
collects problems, which are raised with the file's own line numbers.

Nothing here schedules work itself: ``dask.compute`` runs on the active scheduler,
a ``distributed.Client`` if one is set up (``Client("tcp://scheduler:8786")``).
"""

from __future__ import annotations

import gzip
import itertools
import os
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from metrickit._core.schema import Parsed, check_names, piece_columns, reward_frame
from metrickit.errors import Problem, RewardFileError
from metrickit.io.jsonl import raise_message
from metrickit.io.sources import expand_paths, looks_like_text

__all__ = ["DEFAULT_BLOCK_BYTES", "iter_partitions", "read_rewards_dask"]

#: Target size of one partition's slice of a file.
DEFAULT_BLOCK_BYTES = 64 << 20

# (file name, start byte, end byte or -1 for the whole file)
Block = tuple[str, int, int]


def _import_dask() -> Any:
    try:
        import dask
        import dask.dataframe
    except ImportError:
        raise ImportError(
            "backend='dask' needs Dask: pip install 'metrickit[dask]' "
            "(dask[dataframe] and distributed)"
        ) from None
    return dask


def one_partition(frame: Any) -> Any:
    """A pandas frame as a one-partition Dask DataFrame."""
    _import_dask()
    import dask.dataframe as dd

    return dd.from_pandas(frame, npartitions=1, sort=False)


def source_paths(source: Any) -> list[Path] | None:
    """The files a source names, or None when it is not a path/glob/list of paths."""
    if isinstance(source, str):
        if looks_like_text(source) and not Path(source).is_file():
            return None
        return expand_paths(source)
    if isinstance(source, os.PathLike):
        return expand_paths(source)
    if isinstance(source, Sequence) and not isinstance(source, bytes | bytearray):
        items = list(source)
        if items and all(isinstance(i, str | os.PathLike) for i in items):
            return [path for item in items for path in expand_paths(item)]
    return None


def _blocks(path: Path, block_bytes: int) -> list[Block]:
    """Byte ranges of a file, each ending just after a newline (or at the end)."""
    if not path.exists():
        raise RewardFileError(f"{path}: no such file")
    if path.is_dir():
        raise RewardFileError(f"{path}: is a directory; pass reward .jsonl files")
    name = str(path)
    size = path.stat().st_size
    if path.suffix == ".gz" or size <= block_bytes:
        return [(name, 0, -1)]
    cuts = [0]
    with open(path, "rb") as fh:
        target = block_bytes
        while target < size:
            fh.seek(max(target - 1, cuts[-1]))
            rest = b""
            while True:  # find the end of the line that crosses `target`
                piece = fh.read(1 << 16)
                if not piece:
                    break
                at = piece.find(b"\n")
                if at >= 0:
                    rest += piece[: at + 1]
                    break
                rest += piece
            cut = max(target - 1, cuts[-1]) + len(rest)
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
            target = cut + block_bytes
    cuts.append(size)
    return [(name, a, b) for a, b in itertools.pairwise(cuts)]


def _read_block(block: Block) -> bytes:
    name, start, end = block
    if end < 0:
        path = Path(name)
        if path.suffix == ".gz":
            try:
                with gzip.open(path, "rb") as fh:
                    return fh.read()
            except (OSError, EOFError) as exc:
                raise RewardFileError(f"{path}: not a readable gzip file ({exc})") from None
        return path.read_bytes()
    with open(name, "rb") as fh:
        fh.seek(start)
        return fh.read(end - start)


def _survey(block: Block) -> tuple[list[str], int, list[Problem]]:
    """Keys, newline count and problems (block-local lines) of one block."""
    from metrickit.io.scan import parse_piece

    data = _read_block(block)
    parsed, problems = parse_piece(block[0], data, first=block[1] == 0)
    return sorted(parsed.values), data.count(b"\n"), problems


def _pandas_frame(parsed: Parsed, keys: list[str], sources: list[str]) -> Any:
    return reward_frame(keys, piece_columns(parsed, keys, sources), "pandas")


def _load_block(job: tuple[Block, int], keys: list[str], sources: list[str]) -> Any:
    from metrickit.io.scan import parse_chunk

    block, offset = job
    parsed = parse_chunk(block[0], _read_block(block), offset, first=block[1] == 0)
    return _pandas_frame(parsed, keys, sources)


def read_rewards_dask(source: Any, *, block_bytes: int = DEFAULT_BLOCK_BYTES) -> Any:
    """A Dask DataFrame of reward files, with the columns of ``read_rewards``.

    Parameters
    ----------
    source
        A path, a glob, or a list of paths/globs.
    block_bytes
        Target bytes per partition; larger files are split at line boundaries.

    Returns
    -------
    dask.dataframe.DataFrame
        One partition per block; ``compute()`` equals ``read_rewards(source)`` apart from
        the index (each partition is numbered from 0).

    Raises
    ------
    RewardFileError
        The first problem over all files, with the file's own line number.
    """
    dask = _import_dask()
    import dask.dataframe as dd

    paths = source_paths(source)
    if paths is None:
        raise TypeError(
            f"read_rewards_dask reads files: pass a path, a glob or a list of them, not "
            f"{type(source).__name__}; read_rewards(..., backend='dask') also takes text and rows"
        )
    blocks = [block for path in paths for block in _blocks(path, block_bytes)]
    sources = list(dict.fromkeys(block[0] for block in blocks))
    surveys = dask.compute(*[dask.delayed(_survey)(block) for block in blocks])
    keys: set[str] = set()
    jobs: list[tuple[Block, int]] = []
    offset = 0
    for block, (block_keys, newlines, problems) in zip(blocks, surveys, strict=True):
        if block[1] == 0:
            offset = 0
        if problems:
            shifted = [replace(p, line=p.line + offset) for p in problems]
            raise RewardFileError(raise_message(shifted))
        keys.update(block_keys)
        jobs.append((block, offset))
        offset += newlines
    ordered = sorted(keys)
    check_names(ordered)
    empty = Parsed(sources[0] if sources else "", np.zeros(0, np.int64), np.zeros(0, np.uint8))
    meta = _pandas_frame(empty, ordered, sources)
    return dd.from_map(_load_block, jobs, keys=ordered, sources=sources, meta=meta)


def iter_partitions(frame: Any, *, columns: list[str] | None = None) -> Iterator[Any]:
    """The partitions of a Dask frame as pandas frames, in order.

    A few partitions are computed at a time (in parallel on the active scheduler), so
    the client holds only a window of them.
    """
    dask = _import_dask()
    if columns is not None:
        frame = frame[columns]
    parts = frame.to_delayed()
    window = max(2, 2 * (os.cpu_count() or 1))
    try:
        from distributed import default_client

        window = max(window, 2 * sum(default_client().nthreads().values()))
    except (ImportError, ValueError):
        pass
    for start in range(0, len(parts), window):
        yield from dask.compute(*parts[start : start + window])
