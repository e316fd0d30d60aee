"""A second process for :func:`metrickit.read_harbor_job`, so a big job folder is read on
two cores.

Reading a trial is mostly ``json.loads`` and Python validation, which hold the GIL, so
threads do not help; a process does. The worker is started as
``python -P .../metrickit/_harbor_worker.py DIR`` (never by re-importing the user's
``__main__``, as ``multiprocessing``'s spawn would, running a script's top-level code
again), early, so it is ready when the caller has listed the trial folders. It imports
only :mod:`metrickit._trials` (no numpy, no data frames): it starts in ~50 ms.

The two processes share nothing but a temporary directory ``DIR``, and no thread of the
caller waits on the worker (a thread reading a pipe measured to slow the caller's own
reading by 60-100 %, through the GIL):

* ``chunks.pkl``: the caller's list of chunks (lists of trial folders);
* ``control``: three little-endian int64, mapped into both processes: the lowest chunk
  index the worker has claimed, a stop flag the caller sets, and how many trials the
  worker has finished (for the progress bar);
* ``<index>.pkl``: the trials of each chunk the worker has read.

The caller reads chunks from the start, the worker from the end; the caller stops at
the first chunk the worker has claimed, sets the stop flag, waits for the worker to
finish its current chunk, and loads the worker's chunks. Any chunk the worker did not
deliver (it failed to start, crashed or hung) is read by the caller, so the result
never depends on the worker; only the speed does.
"""

from __future__ import annotations

import mmap
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_CONTROL = struct.Struct("<qqq")  # claimed, stop, trials done
_CLAIMED, _STOP, _DONE = 0, 8, 16
# How long the caller waits for a stopped worker to finish its current chunk.
_STOP_TIMEOUT = 30.0
# How long a worker waits for its chunk list before giving up.
_WAIT_FOR_CHUNKS = 600.0


def _mapped(path: Path) -> mmap.mmap:
    with open(path, "r+b") as fh:
        return mmap.mmap(fh.fileno(), _CONTROL.size)


def _get(control: mmap.mmap, at: int) -> int:
    return int(struct.unpack_from("<q", control, at)[0])


def _set(control: mmap.mmap, at: int, value: int) -> None:
    struct.pack_into("<q", control, at, value)


def main(directory: str) -> None:
    folder = Path(directory)
    control = _mapped(folder / "control")
    from metrickit._trials import _read_trial  # meanwhile the caller lists the folders

    chunks_file = folder / "chunks.pkl"
    parent = os.getppid()
    waited = 0.0
    while not chunks_file.exists():
        if _get(control, _STOP) or waited > _WAIT_FOR_CHUNKS or os.getppid() != parent:
            return
        time.sleep(0.002)
        waited += 0.002
    chunks: list[list[str]] = pickle.loads(chunks_file.read_bytes())
    done = 0
    for index in reversed(range(len(chunks))):
        if _get(control, _STOP) or os.getppid() != parent:
            return  # the caller has read everything before this chunk, or is gone
        _set(control, _CLAIMED, index)
        trials = [_read_trial(Path(f)) for f in chunks[index]]
        part = folder / f"{index}.tmp"
        part.write_bytes(pickle.dumps(trials, protocol=5))
        part.rename(folder / f"{index}.pkl")  # whole files only
        done += len(trials)
        _set(control, _DONE, done)


def _command(directory: str) -> list[str]:
    # The file run as a script (-P: its folder is not put on sys.path), not `-m`, which
    # would run metrickit/__init__ and its numpy import: ~0.2 s before the first trial.
    # The caller's limits go along, so a trial reads the same in either process.
    return [
        sys.executable,
        "-P",
        "-X",
        f"int_max_str_digits={sys.get_int_max_str_digits()}",
        str(Path(__file__).resolve()),
        directory,
        str(sys.getrecursionlimit()),
    ]


@dataclass
class Worker:
    """A started worker process and its shared directory."""

    proc: subprocess.Popen[bytes]
    directory: Path
    control: mmap.mmap

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.control.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def start() -> Worker | None:
    """Start a worker: it imports metrickit while the caller lists the trial folders.

    None (this process reads everything) where a worker cannot run: a frozen app (its
    executable is the app, not Python) or a package imported from a zip file.
    """
    if getattr(sys, "frozen", False) or not sys.executable or not Path(__file__).is_file():
        return None
    directory = Path(tempfile.mkdtemp(prefix="metrickit-harbor-"))
    (directory / "control").write_bytes(_CONTROL.pack(2**62, 0, 0))
    try:
        with open(directory / "stderr", "wb") as err:
            proc = subprocess.Popen(
                _command(str(directory)),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
    except (OSError, ValueError, TypeError) as exc:
        shutil.rmtree(directory, ignore_errors=True)
        warnings.warn(
            f"read_harbor_job: could not start a second reader process ({exc}); "
            "reading on one core",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    return Worker(proc, directory, _mapped(directory / "control"))


def cancel(worker: Worker | None) -> None:
    """Stop a worker that turned out not to be needed."""
    if worker is not None:
        worker.close()


def read_shared(
    chunks: list[list[Path]],
    read_chunk: Callable[[list[Path]], list[Any]],
    on_progress: Callable[[int], None] | None = None,
    worker: Worker | None = None,
) -> list[list[Any]]:
    """Read ``chunks`` here from the start and in a worker process from the end.

    ``worker`` comes from :func:`start`; with None, this process reads every chunk.
    Returns one result list per chunk, in chunk order. ``on_progress(n)`` is called with
    the number of trials newly read (by either process) as the caller goes.
    """
    if worker is None:
        results = []
        for chunk in chunks:
            results.append(read_chunk(chunk))
            if on_progress:
                on_progress(len(chunk))
        return results
    try:
        return _share(chunks, read_chunk, on_progress, worker)
    finally:
        worker.close()


def _share(
    chunks: list[list[Path]],
    read_chunk: Callable[[list[Path]], list[Any]],
    on_progress: Callable[[int], None] | None,
    worker: Worker,
) -> list[list[Any]]:
    listing = worker.directory / "chunks.tmp"
    listing.write_bytes(pickle.dumps([[str(f) for f in c] for c in chunks], protocol=5))
    listing.rename(worker.directory / "chunks.pkl")
    control = worker.control
    results: list[list[Any] | None] = [None] * len(chunks)
    reported = 0  # trials shown on the progress bar, by either process

    everything = sum(len(c) for c in chunks)

    def report(total: int) -> None:
        nonlocal reported
        total = min(total, everything)  # a chunk both processes read counts once
        if on_progress and total > reported:
            on_progress(total - reported)
            reported = total

    mine = 0
    for index, chunk in enumerate(chunks):
        if index >= _get(control, _CLAIMED):
            break  # the worker has this one and everything after it
        results[index] = read_chunk(chunk)
        mine += len(chunk)
        report(mine + _get(control, _DONE))
    _set(control, _STOP, 1)
    _stop(worker, started=_get(control, _CLAIMED) < len(chunks))
    for index, chunk in enumerate(chunks):
        if results[index] is not None:
            continue
        part = worker.directory / f"{index}.pkl"
        if part.exists():
            results[index] = pickle.loads(part.read_bytes())
        else:  # the worker did not deliver it
            results[index] = read_chunk(chunk)
    report(everything)
    return [r for r in results if r is not None]


def _stop(worker: Worker, *, started: bool) -> None:
    """Let the worker finish its current chunk (kill it if it never began one)."""
    proc = worker.proc
    code = proc.poll()
    if code is None and not started:
        proc.kill()  # this process read everything before the worker was even up
        proc.wait()
        return
    if code is None:
        try:
            code = proc.wait(timeout=_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            warnings.warn(
                "read_harbor_job: the second reader process did not stop within "
                f"{_STOP_TIMEOUT:.0f} s; killed it and read its chunks here",
                RuntimeWarning,
                stacklevel=5,
            )
            return
    if code != 0:
        lines = (worker.directory / "stderr").read_text("utf-8", "replace").strip().splitlines()
        warnings.warn(
            f"read_harbor_job: the second reader process failed (exit code {code}: "
            f"{lines[-1] if lines else 'no message'}); read its chunks here",
            RuntimeWarning,
            stacklevel=5,
        )


def _bootstrap() -> None:
    """Make ``metrickit`` importable without running its ``__init__`` (and numpy)."""
    import types

    package = types.ModuleType("metrickit")
    package.__path__ = [str(Path(__file__).resolve().parent)]
    sys.modules.setdefault("metrickit", package)


if __name__ == "__main__":
    _bootstrap()
    sys.setrecursionlimit(int(sys.argv[2]))
    main(sys.argv[1])
