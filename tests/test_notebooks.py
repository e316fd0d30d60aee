"""Every notebook in notebooks/ runs top to bottom; a failing cell fails the build.

Notebooks are committed without outputs (checked here too) and executed in a fresh kernel
with an unrelated folder as the working directory (a copy opened elsewhere): they find their
data through ``mk.examples``, never through a path relative to the working directory. The
way most users run them, opened from JupyterLab's file browser on ``notebooks/``, is
``tests/test_browser.py``: it runs every notebook there in a real JupyterLab and Chromium and
allows no error output, so this module does not run them a second time from ``notebooks/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks without outputs"
    # Inline plots must render in the kernel, so do not force the Agg backend there.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("METRICKIT_OUT", str(tmp_path))
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    client.execute()
    errors = [
        out for cell in nb.cells if cell.cell_type == "code"
        for out in cell.get("outputs", []) if out.get("output_type") == "error"
    ]
    assert not errors, errors


def test_there_are_notebooks():
    assert NOTEBOOKS, "notebooks/ should hold runnable examples"
    assert os.path.isdir(ROOT / "data")
