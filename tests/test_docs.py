"""The documentation site: every public name is in the API reference, and the site builds
with ``--strict`` (a broken link, a missing reference or a docstring griffe cannot read
fails). ``make docs`` builds it with the notebooks executed; here they are not, to keep the
suite short (the notebooks run in tests/test_notebooks.py)."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _public_names() -> list[str]:
    tree = ast.parse((ROOT / "metrickit" / "__init__.pyi").read_text())
    names = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            names += [alias.asname or alias.name for alias in node.names]
    return names


def test_every_public_name_is_in_the_api_reference():
    text = (ROOT / "docs" / "api.md").read_text()
    documented = set(re.findall(r"^::: metrickit\.(\w+)", text, flags=re.M))
    missing = [n for n in _public_names() if n not in documented]
    assert not missing, f"add these to docs/api.md: {missing}"
    unknown = sorted(documented - set(_public_names()))
    assert not unknown, f"docs/api.md names what metrickit does not export: {unknown}"


def test_every_guide_and_notebook_is_in_the_navigation():
    # mkdocs --strict fails on a page left out of nav too; this says so without a build.
    nav = set(re.findall(r"^\s+- [^:]+: (\S+\.(?:md|ipynb))\s*$",
                         (ROOT / "mkdocs.yml").read_text(), flags=re.M))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").glob("*.md")}
    pages |= {f"guides/{p.name}" for p in (ROOT / "docs" / "guides").glob("*.md")}
    pages |= {f"notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*.ipynb")}
    pages |= {"index.md"}
    missing = sorted(pages - nav)
    assert not missing, f"add these to the nav of mkdocs.yml: {missing}"
    gone = sorted(p for p in nav if not (ROOT / "docs" / p).exists())
    assert not gone, f"mkdocs.yml names pages that do not exist: {gone}"


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists() and shutil.which("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    env = {**os.environ, "METRICKIT_DOCS_EXECUTE": "false", "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(
        [str(mkdocs if mkdocs.exists() else "mkdocs"), "build", "--strict", "-d",
         str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, env=env, timeout=600,
    )
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line]
    assert proc.returncode == 0, "\n".join(warnings) or proc.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").exists()
