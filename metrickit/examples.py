"""Example data that ships with metrickit, reachable from any working directory.

>>> import metrickit as mk
>>> mk.examples.path("harbor_jobs").is_dir()
True
>>> {"harbor_jobs", "multi_dim", "tickets"} <= set(mk.examples.names())
True
>>> mk.examples.load("tickets").shape
(300, 8)

The files are the ones documented in the repository's ``data/README.md``: Harbor reward
files, two Harbor job folders, a scored case table and example scorer and metric scripts.
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
    "harbor_jobs": ("harbor_jobs", "trial table (read_harbor_job) of two Harbor job folders"),
    "runs": ("rewards/runs", "reward frame (read_rewards) of three runs of 400 tasks"),
    "sample_3000": ("rewards/sample_3000.jsonl", "reward frame of 3,000 generated lines"),
    "single_dim": ("rewards/single_dim.jsonl", "Harbor's single-dimension example"),
    "multi_dim": ("rewards/multi_dim.jsonl", "Harbor's multi-dimensional example"),
    "missing_dims": ("rewards/missing_dims.jsonl", "Harbor's missing-dimensions example"),
    "tickets": ("cases/tickets.jsonl", "case table: 100 tickets x 3 candidates, scored"),
    "extraction": ("cases/extraction.jsonl", "case table of a field-extraction task"),
}


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

    ``"harbor_jobs"`` gives a trial table, the reward files a reward frame, and the case
    tables (``"tickets"``, ``"extraction"``) one row per case.
    """
    if name not in _DATASETS:
        raise FileNotFoundError(f"no example data set {name!r}; expected one of {names()}")
    target = path(name)
    if name == "harbor_jobs":
        from metrickit.io.harbor import read_harbor_job

        return read_harbor_job(target, backend=backend)
    if target.is_dir() or name in ("sample_3000", "single_dim", "multi_dim", "missing_dims"):
        from metrickit.io.rewards import read_rewards

        source = str(target / "*.jsonl") if target.is_dir() else target
        return read_rewards(source, backend=backend)
    import pandas as pd

    frame = pd.read_json(target, lines=True)
    if backend == "polars":
        import polars as pl

        return pl.from_pandas(frame)
    return frame
