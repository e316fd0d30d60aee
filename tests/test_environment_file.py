"""environment.yml (for conda users) lists every runtime dependency pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# conda-forge spells a few packages differently from PyPI
CONDA_NAMES = {"adjusttext": "adjusttext", "duckdb": "python-duckdb"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].strip().lower()


def test_environment_yml_mirrors_the_runtime_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    listed = {
        _name(line.strip()[2:])
        for line in (ROOT / "environment.yml").read_text().splitlines()
        if line.strip().startswith("- ") and not line.strip().startswith("- -")
    }
    wanted = [*project["dependencies"], *project["optional-dependencies"]["store"]]
    missing = sorted(n for n in map(_name, wanted) if CONDA_NAMES.get(n, n) not in listed)
    assert not missing, f"environment.yml lacks {missing}"
