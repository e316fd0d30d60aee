"""Helpers shared by the benchmark scripts (not a benchmark itself: run.py skips it).

Every ``bench_*.py`` prints a human table and, with ``--json``, one JSON object per line
that ``run.py`` collects::

    {"operation": str, "metrickit_s": float, "baseline": str, "baseline_s": float,
     "peak_mb": float | None, "baseline_peak_mb": float | None, "note": str}

``ratio`` is always ``baseline_s / metrickit_s``: above 1 metrickit is faster.
"""

from __future__ import annotations

import json
import platform
import resource
import subprocess
import sys
from typing import Any


def peak_rss_mb() -> float:
    """This process's peak resident set size so far (ru_maxrss), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``python <args>`` in a fresh process (``env``: its environment, default this
    one's); its last stdout line is a JSON object."""
    out = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False, env=env
    )
    if out.returncode != 0:
        raise RuntimeError(f"benchmark child {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(
    operation: str,
    metrickit_s: float,
    baseline: str,
    baseline_s: float,
    *,
    peak_mb: float | None = None,
    baseline_peak_mb: float | None = None,
    note: str = "",
) -> dict[str, Any]:
    return {
        "operation": operation,
        "metrickit_s": metrickit_s,
        "baseline": baseline,
        "baseline_s": baseline_s,
        "ratio": baseline_s / metrickit_s if metrickit_s else None,
        "peak_mb": peak_mb,
        "baseline_peak_mb": baseline_peak_mb,
        "note": note,
    }


def emit(rows: list[dict[str, Any]]) -> None:
    """Print rows as JSON lines (for run.py)."""
    for r in rows:
        print(json.dumps(r), flush=True)


def machine() -> str:
    """A one-line description of this machine."""
    import os

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
            mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores{mem}, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )
