"""Every notebook in notebooks/ runs top to bottom; a failing cell fails the build.

Notebooks are committed without outputs (checked here too). Each is executed once a
session (the ``executed_notebooks`` fixture of tests/conftest.py) in a fresh kernel whose
working directory is a copy of notebooks/ in a temporary folder with no data/ beside it,
as JupyterLab's file browser runs a copy opened anywhere: they find their data through
``mk.examples``, never through a path relative to the working directory or the
repository. Each notebook's checks (tests/notebook_checks.py) run as one more cell of that
copy, so a notebook that stops showing what its text says fails here; the teaching
notebooks themselves hold no asserts.
tests/test_browser.py opens the same executed copies in JupyterLab (it does not run them
a second time) and runs the tuning notebook live to drive its sliders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_without_outputs(path):
    import nbformat  # here, not at collection: its jsonschema import takes seconds

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs"), f"{path.name}: commit notebooks without outputs"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, executed_notebooks):
    run = executed_notebooks.get(path.name)
    assert run.failure is None, run.failure
    assert not run.errors, run.errors
    import nbformat

    executed = nbformat.read(run.path, as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    # every code cell ran (none skipped after a silent stop), and the copy holds its outputs
    assert code and all(c.get("execution_count") is not None for c in code), path.name
    assert any(c.get("outputs") for c in code), f"{path.name}: no cell printed or drew anything"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_teaches_and_its_checks_live_in_the_tests(path):
    import nbformat  # here, not at collection: its jsonschema import takes seconds
    from notebook_checks import CHECKS

    nb = nbformat.read(path, as_version=4)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "assert " not in code, f"{path.name}: move its checks to tests/notebook_checks.py"
    assert CHECKS.get(path.name, "").count("assert ") >= 2, f"{path.name}: add its checks"
    assert nb.cells[-1].cell_type == "code", f"{path.name}: end on a result, not on prose"


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 4, "notebooks/ should hold runnable examples"
    assert (ROOT / "data").is_dir()
