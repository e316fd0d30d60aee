"""Example data that ships with metrickit, reachable from any working directory.

>>> import metrickit as mk
>>> mk.examples.path("harbor_jobs").is_dir()
True
>>> {"harbor_jobs", "multi_dim", "tickets"} <= set(mk.examples.names())
True
>>> mk.examples.load("tickets").shape
(1200, 8)

The files are the ones documented in the repository's ``data/README.md``: Harbor reward
files, three Harbor job folders, a scored case table and example scorer and metric scripts.
A wheel carries them inside the package (``metrickit/_examples``); a source checkout
(an editable install) reads them from the checkout's ``data/`` folder. Either way the
path does not depend on where Python was started, so a notebook opened from
``notebooks/`` or anywhere else finds them.

In a wheel the Harbor job folders (5,087 small files) are one archive,
``_examples/harbor_jobs.tar.xz``; the first :func:`path` or :func:`load` of a Harbor example
unpacks it into the user's cache (``$METRICKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/metrickit``, else ``~/.cache/metrickit``; under a folder named by the
archive's hash, so an upgrade gets its own) and every later call reads the folders there.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Literal

__all__ = ["load", "names", "path", "root"]

#: the folders a wheel carries as one archive (``<name>.tar.xz`` in the examples root)
_ARCHIVED = ("harbor_jobs",)

# name -> (path under the examples root, what load() returns)
_DATASETS: dict[str, tuple[str, str]] = {
    "harbor_jobs": ("harbor_jobs", "trial table (read_harbor_job) of three Harbor job folders"),
    "runs": ("rewards/runs", "reward frame (read_rewards) of three runs of 400 tasks"),
    "sample_3000": ("rewards/sample_3000.jsonl", "reward frame of 3,000 generated lines"),
    "single_dim": ("rewards/single_dim.jsonl", "Harbor's single-dimension example"),
    "multi_dim": ("rewards/multi_dim.jsonl", "Harbor's multi-dimensional example"),
    "missing_dims": ("rewards/missing_dims.jsonl", "Harbor's missing-dimensions example"),
    "tickets": ("cases/tickets.jsonl", "case table: 200 tickets x 6 candidates, scored"),
    "extraction": ("cases/extraction.jsonl", "case table of a field-extraction task"),
    "inspect_logs": ("other_formats/inspect_logs",
                     "trial table (read_inspect_log) of two Inspect AI logs"),
    "lm_eval_output": ("other_formats/lm_eval_output",
                       "trial table (read_lm_eval_samples) of an lm-evaluation-harness run"),
    "terminal_bench_run": ("other_formats/terminal_bench_run/2025-08-15__19-28-24",
                           "trial table (read_terminal_bench) of a Terminal-Bench 1 run"),
}

#: the data sets that are case tables (one row per case): read as JSON lines, not a format
#: :func:`metrickit.load` knows
_CASE_TABLES = ("tickets", "extraction")


def root() -> Path:
    """The folder that holds the example files."""
    package = Path(__file__).resolve().parent
    installed = package / "_examples"
    if installed.is_dir():
        return installed
    checkout = package.parent / "data"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        f"metrickit's example data is neither in {installed} (a wheel) nor in {checkout} "
        "(a source checkout); reinstall metrickit"
    )


def _cache_home() -> Path:
    """Where unpacked example archives live: ``$METRICKIT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/metrickit``, else ``~/.cache/metrickit``."""
    if os.environ.get("METRICKIT_CACHE_DIR"):
        return Path(os.environ["METRICKIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "metrickit"


@functools.cache
def _unpacked(archive: Path) -> Path:
    """The folder holding ``archive``'s contents, unpacked on first use.

    The target is named by the archive's SHA-256, unpacked beside it under a temporary name
    and renamed into place, so a reader never sees half a folder and two processes that
    unpack at once both end with the same complete copy. Where the cache cannot be written,
    a temporary folder of this process is used.
    """
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    try:
        home = _cache_home()
        target = home / f"examples-{digest}"
        if target.is_dir():
            return target
        home.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=home))
    except OSError:
        target = staging = Path(tempfile.mkdtemp(prefix=f"metrickit-examples-{digest}-"))
    with tarfile.open(archive, "r:xz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(staging, filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tar.extractall(staging)  # the package's own archive
    if staging != target:
        try:
            staging.rename(target)
        except OSError:  # another process finished first: its copy is the same
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _base(relative: str) -> Path:
    """The folder ``relative`` is under: the examples root, or for a folder the wheel
    carries as an archive, where that archive is unpacked."""
    top = Path(relative).parts[0] if relative else ""
    base = root()
    if top in _ARCHIVED and not (base / top).exists():
        archive = base / f"{top}.tar.xz"
        if archive.is_file():
            return _unpacked(archive)
    return base


def names() -> list[str]:
    """The data sets :func:`load` knows."""
    return list(_DATASETS)


def path(name: str) -> Path:
    """Path of an example file or folder: a data set name (``"harbor_jobs"``,
    ``"tickets"``) or a path under the examples root (``"cases/exact_match.py"``).

    Raises
    ------
    FileNotFoundError
        No such example; the message lists the names.
    """
    relative = _DATASETS[name][0] if name in _DATASETS else name
    found = _base(relative) / relative
    if not found.exists():
        raise FileNotFoundError(
            f"no example {name!r}; data sets are {names()}, and files live under "
            f"{root()} (e.g. 'cases/exact_match.py')"
        )
    return found


def load(name: str, *, backend: Literal["pandas", "polars"] = "pandas") -> Any:
    """An example data set as a DataFrame (``backend="polars"`` for polars).

    ``"harbor_jobs"`` and the other evaluation formats (``"inspect_logs"``,
    ``"lm_eval_output"``, ``"terminal_bench_run"``) give a trial table, the reward files a
    reward frame, and the case tables (``"tickets"``, ``"extraction"``) one row per case.
    """
    if name not in _DATASETS:
        raise FileNotFoundError(f"no example data set {name!r}; expected one of {names()}")
    from metrickit._core.schema import check_backend

    check_backend(backend)
    target = path(name)
    if name not in _CASE_TABLES:  # a trial source or reward files: the reader registry
        from metrickit.io.registry import load as load_path

        return load_path(target, backend=backend)
    import pandas as pd

    frame = pd.read_json(target, lines=True)
    if backend == "polars":
        import polars as pl

        return pl.from_pandas(frame)
    return frame
