"""Ending a user's process and everything it started, and reading its pipes in bounded memory.

User code (a scorer file, a metric script) runs in its own session. When it is done, or past
its timeout, the whole process group is killed: a ``subprocess.run(["sleep", "60"])`` it
started, or a background process it left behind, goes too. The process is reaped only after
the group is killed, so the group's id cannot have been reused by an unrelated process.

Pipes are read by daemon threads in chunks, keeping a bounded amount (a tail, or nothing):
megabytes written without a newline cost one chunk of memory. A descendant that left the
group (``setsid``) can hold a pipe open for ever; it is not waited for beyond a short grace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import IO, Any

__all__ = ["READER_GRACE", "READ_CHUNK", "TailReader", "end_group", "join_readers",
           "wait_unreaped"]

READ_CHUNK = 1 << 16
# How long to wait for a pipe reader once the process group is gone.
READER_GRACE = 1.0


def wait_unreaped(proc: subprocess.Popen[Any], timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``proc`` to exit, leaving it a zombie (not reaped).

    True when it has exited.
    """
    if proc.returncode is not None:
        return True
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
        except ChildProcessError:  # reaped elsewhere
            return True
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)


def end_group(proc: subprocess.Popen[Any], grace: float) -> bool:
    """Let ``proc`` (a session leader) exit within ``grace`` s, then kill its whole group.

    The group is killed even when the process exited by itself: whatever it left running
    goes too. Returns True when the process had exited by itself.
    """
    exited = True
    if proc.returncode is None:  # not reaped yet: the group id is still its own
        exited = wait_unreaped(proc, grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()
    return exited


class TailReader(threading.Thread):
    """Drain a binary pipe in a daemon thread, keeping only its last ``keep`` bytes.

    The thread owns the stream and closes it at end of file, so nothing closes it under a
    blocked read.
    """

    def __init__(self, stream: IO[bytes], keep: int) -> None:
        super().__init__(daemon=True, name="metrickit-pipe")
        self._stream = stream
        self._keep = keep
        self._tail = bytearray()
        self._lock = threading.Lock()
        self.start()

    def run(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                try:
                    chunk = os.read(fd, READ_CHUNK)
                except OSError:
                    break
                if not chunk:
                    break
                if self._keep:
                    with self._lock:
                        self._tail += chunk
                        if len(self._tail) > self._keep:
                            del self._tail[: len(self._tail) - self._keep]
        finally:
            self._stream.close()

    def tail(self) -> bytes:
        with self._lock:
            return bytes(self._tail)


def join_readers(readers: list[Any], deadline: float | None = None) -> None:
    """Join pipe readers until ``deadline`` (default: :data:`READER_GRACE` from now)."""
    if deadline is None:
        deadline = time.monotonic() + READER_GRACE
    for reader in readers:
        reader.join(timeout=max(0.0, deadline - time.monotonic()))
