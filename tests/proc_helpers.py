"""Helpers for tests of user processes: has a process ended?"""

from __future__ import annotations

import os
import time
from pathlib import Path


def gone(pid: int) -> bool:
    """The process has ended (a zombie waiting for its new parent to reap it counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def wait_gone(pid: int) -> bool:
    """Whether the process ends within 10 s (the time for the kernel to deliver a kill)."""
    for _ in range(200):
        if gone(pid):
            return True
        time.sleep(0.05)
    return False
