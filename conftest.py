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


# Test modules slow as a whole (a JupyterLab, kernels, a Dask cluster, hypothesis fuzzing,
# coverage simulations): marked `slow`, so `make test-fast` (-m "not slow") skips them.
# Single slow tests elsewhere carry @pytest.mark.slow themselves.
SLOW_MODULES = frozenset(
    {
        "test_browser.py",
        "test_coverage.py",
        "test_dask.py",
        "test_fuzz_harbor_spec.py",
        "test_fuzz_rewards.py",
        "test_notebooks.py",
        "test_widgets_ipympl.py",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _doctests_run_from_the_repository_root(request: pytest.FixtureRequest) -> None:
    # Examples name sample files as "data/...", as a user in a checkout would.
    if isinstance(request.node, DoctestItem):
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.chdir(ROOT)
