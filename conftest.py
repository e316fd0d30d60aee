"""pytest setup shared by tests/ and the doctests in metrickit/ (``--doctest-modules``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parent

# A script that writes tests/data/harbor_sum_golden.json when run: never import it.
collect_ignore_glob = ["tests/data/*.py"]


@pytest.fixture(autouse=True)
def _doctests_run_from_the_repository_root(request: pytest.FixtureRequest) -> None:
    # Examples name sample files as "data/...", as a user in a checkout would.
    if isinstance(request.node, DoctestItem):
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.chdir(ROOT)
