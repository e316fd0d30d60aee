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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

__all__ = ["load", "names", "path", "root"]

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
    found = root() / relative
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
