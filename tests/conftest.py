from __future__ import annotations

import functools
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
NOTEBOOKS = ROOT / "notebooks"

# Session fixtures that tests in several files share. Under pytest-xdist (`make test` runs
# `-n 2 --dist loadgroup`) the files whose tests use one of them run in one worker, so the
# fixture is computed once, not once per worker; every other file is a group of its own, so
# its module-scoped fixtures are computed once too (as `--dist loadfile` would). The groups
# are made by the scheduler below: pytest 9 keeps a node's id where pytest-xdist 3.8's
# `xdist_group` marks can no longer rename it, so the marks alone would group nothing.
SHARED_SESSION_FIXTURES = ("executed_notebooks", "demo_report")
# The longest groups are handed out first, so no worker is left with one at the end.
LONGEST_FIRST = ("executed_notebooks", "tests/io/test_identity_readers.py", "tests/test_readme.py")


@functools.cache
def _group(path: str) -> str:
    """The xdist group of a test file (a path relative to the repository)."""
    try:
        text = (ROOT / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return path
    for name in SHARED_SESSION_FIXTURES:
        if re.search(rf"\b{name}\b", text):
            return name
    return path


def _group_of(nodeid: str) -> str:
    return _group(nodeid.split("::", 1)[0])


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadgroup":
        return None  # xdist's own scheduler
    from xdist.scheduler import LoadScopeScheduling

    class Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group_of(nodeid)

    return Groups(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not hasattr(config, "workerinput"):
        return  # not an xdist worker: the order stays as collected
    rank = {g: i for i, g in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(_group_of(item.nodeid), len(rank)))  # stable


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        plt.close("all")


# -- folders made once a session, shared by the xdist workers ---------------------------------


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str,
              make: Any) -> Path:
    """``make(folder)`` run once per test session, whichever xdist worker asks first; the
    others wait for it and get the same folder (pytest-xdist's documented recipe: a file
    lock in the base temporary folder the workers share). Callers must not change it."""
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' folders sit side by side in the session's
    folder = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            (folder / ".made").touch()
    return folder


@pytest.fixture(scope="session")
def inspect_fixture_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The logs ``tests/io/inspect_fixture.py`` writes (a real, offline Inspect run: eval,
    json, partial), made once a session in a child process (Inspect's event loop leaves
    anyio streams for the garbage collector, which ``filterwarnings = error`` would turn
    into errors of whichever test collects them). Read-only: copy before changing."""
    pytest.importorskip("inspect_ai")
    import subprocess

    def make(folder: Path) -> None:
        subprocess.run([sys.executable, str(ROOT / "tests" / "io" / "inspect_fixture.py"),
                        str(folder)], check=True, capture_output=True, timeout=300)

    return made_once(tmp_path_factory, "inspect_fixture_logs", make)


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``made_once`` bound to this session: ``shared_tmp(name, make)``."""
    return functools.partial(made_once, tmp_path_factory)


# -- the notebooks, executed once a session ---------------------------------------------------


@dataclass
class ExecutedNotebook:
    """One notebook as a kernel ran it: the executed copy (outputs in it), the error
    outputs, and the exception that stopped it (None: it ran to the end)."""

    name: str
    path: Path
    errors: list[dict[str, Any]]
    failure: str | None = None


@dataclass
class ExecutedNotebooks:
    """Every notebook of notebooks/, each executed on first request and kept for the
    session: tests/test_notebooks.py checks that each ran (and what it shows), and
    tests/test_browser.py opens the executed copies in JupyterLab, so no notebook runs
    twice in a kernel of nbclient's.

    The copies live in ``folder`` (a copy of notebooks/ in a temporary folder, with no
    data/ beside it) and run with that folder as the kernel's working directory, as
    JupyterLab's file browser runs them: a notebook that reached its data through a path
    relative to the working directory or to the repository would fail here.
    """

    folder: Path
    out: Path
    done: dict[str, ExecutedNotebook] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [p.name for p in sorted(NOTEBOOKS.glob("*.ipynb"))]

    def get(self, name: str) -> ExecutedNotebook:
        if name not in self.done:
            self.done[name] = self._execute(name)
        return self.done[name]

    def all(self) -> list[ExecutedNotebook]:
        return [self.get(name) for name in self.names]

    def _execute(self, name: str) -> ExecutedNotebook:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError

        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        checks = _notebook_checks().get(name)
        if checks:  # the checks see the notebook's variables; the saved copy drops them
            nb.cells.append(nbformat.v4.new_code_cell(checks))
        client = NotebookClient(nb, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(self.folder)}})
        failure = None
        # Inline plots must render in the kernel, so it does not inherit the Agg backend.
        env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
        out = self.out / name.removesuffix(".ipynb")
        out.mkdir(parents=True, exist_ok=True)
        env["METRICKIT_OUT"] = str(out)
        try:
            client.execute(env=env)
        except CellExecutionError as exc:
            failure = str(exc)
        errors = [out for cell in nb.cells if cell.cell_type == "code"
                  for out in cell.get("outputs", []) if out.get("output_type") == "error"]
        if checks:
            nb.cells.pop()
        path = self.folder / name
        nbformat.write(nb, path)
        return ExecutedNotebook(name, path, errors, failure)


def _notebook_checks() -> dict[str, str]:
    """What each notebook must show (tests/notebook_checks.py), appended to the copy run."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from notebook_checks import CHECKS
    finally:
        sys.path.remove(str(ROOT / "tests"))
    return dict(CHECKS)


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory: pytest.TempPathFactory) -> ExecutedNotebooks:
    base = tmp_path_factory.mktemp("notebooks")
    folder = base / "lab" / "notebooks"
    # the copy holds the notebooks and nothing else: no data/ beside it
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return ExecutedNotebooks(folder, base / "out")

