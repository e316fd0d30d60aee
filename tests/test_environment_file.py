"""environment.yml (for conda users) lists every runtime dependency pyproject.toml declares,
and the extras it says it mirrors, with the same version bounds."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# conda-forge spells a few packages differently from PyPI
CONDA_NAMES = {"duckdb": "python-duckdb"}
# the extras a conda user gets too (inspect-ai is not on conda-forge; dev, browser and docs
# are tools)
MIRRORED_EXTRAS = ("polars", "widgets", "dask", "store")


def _split(requirement: str) -> tuple[str, str]:
    """A requirement's name (lower case, conda's spelling) and its version bounds."""
    found = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(\[[^\]]*\])?\s*([^;]*)", requirement)
    assert found, requirement
    name = found.group(1).lower()
    return CONDA_NAMES.get(name, name), found.group(3).replace(" ", "")


def _listed() -> dict[str, str]:
    return dict(
        _split(line.strip()[2:])
        for line in (ROOT / "environment.yml").read_text().splitlines()
        if line.strip().startswith("- ") and not line.strip().startswith("- -")
    )


def _wanted() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = [*project["dependencies"], *(r for e in MIRRORED_EXTRAS for r in extras[e])]
    return dict(map(_split, wanted))


def test_environment_yml_mirrors_the_runtime_dependencies_and_extras():
    listed = _listed()
    missing = sorted(set(_wanted()) - set(listed))
    assert not missing, f"environment.yml lacks {missing}"


def test_environment_yml_has_the_same_version_bounds():
    listed = _listed()
    differ = {name: (bounds, listed[name]) for name, bounds in _wanted().items()
              if name in listed and listed[name] != bounds}
    assert not differ, f"pyproject.toml and environment.yml bound these differently: {differ}"


def test_polars_is_an_extra_not_a_runtime_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "polars" not in {_split(r)[0] for r in project["dependencies"]}
    assert project["optional-dependencies"]["polars"] == ["polars>=1.30,<3"]
    assert any("polars" in r for r in project["optional-dependencies"]["all"])
