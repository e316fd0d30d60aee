"""Every code block in README.md and the documentation pages runs as written.

The pages are README.md and every Markdown file under docs/ (the guides in docs/guides/,
the reference pages; not the notebooks, which tests/test_notebooks.py runs).

Python blocks: each runs as its own script in a fresh interpreter whose working directory
is an empty temporary folder, with ``MPLBACKEND=Agg``. That is how a reader uses them: a
block is copied into a new notebook or file, anywhere on disk, without the blocks before
it. So each block carries its own imports and reaches data through ``mk.examples``; a
block that leaned on an earlier block's variables or on the repository as working
directory fails here.

A block that cannot run here (it needs a cluster, the reader's own data or a browser) has
the HTML comment ``<!-- not run: <reason> -->`` on the line right before its fence (it
does not show on the rendered page). It is still compiled (a bash block is still parsed),
it is reported as skipped with its reason, and :data:`NOT_RUN_REASONS` lists the only
reasons allowed, so the count cannot creep up unnoticed. docs/guides/development.md
documents the convention.

bash blocks: a line starting with ``metrickit`` is run with this venv's ``metrickit``
from a temporary folder where ``data/`` links to the repository's ``data/`` (so the
pages' paths are the ones that work from the repository root, and files the commands
write land in the temporary folder). A trailing ``# exits 1`` states the expected exit
status. Other lines are checked, not run: ``make <target>`` names a target of the
Makefile, ``python <script>`` a file that exists, ``pip install`` is left alone; any
other command fails the test until it is taught here.

The blocks are independent, so they run a few at a time (``METRICKIT_DOC_WORKERS``, by
default the number of CPUs): each test waits for its own block's result.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
GUIDES = DOCS / "guides"
METRICKIT = Path(sys.executable).with_name("metrickit")


def _pages() -> list[Path]:
    # docs/notebooks links to ../notebooks: notebooks are not pages of Markdown.
    docs = sorted(p for p in DOCS.rglob("*.md") if "notebooks" not in p.relative_to(DOCS).parts)
    return [README, *docs]


PAGES = _pages()

# The only reasons a block may give for not running here. docs/guides/development.md
# names them; a new one needs a good reason, not a convenient one.
NOT_RUN_REASONS = {
    "needs a Dask cluster",
    "needs your own runs",
    "needs a browser",
    "a scorer file, loaded by mk.load_scorer",
}
MAX_NOT_RUN = 5

TIMEOUT = 300

# Project-internal words a reader cannot know; the glossary or plain words replace them.
UNEXPLAINED = (
    r"the seed page",
    r"German scorer page",
    r"the issue's targets",
    r"\bissue[- ]?#?\d+",
    r"issue #",
)

NOT_RUN_MARK = re.compile(r"^\s*<!--\s*not run:\s*(.+?)\s*-->\s*$")
FENCE = re.compile(r"^(`{3,})(\S*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository root
    lang: str
    line: int  # 1-based line of the first code line in the page
    section: str
    code: str
    not_run: str | None  # the reason of a <!-- not run: ... --> marker

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} (section {self.section!r})"


@dataclass(frozen=True)
class Page:
    path: Path
    text: str
    blocks: tuple[Block, ...]
    headings: tuple[str, ...]  # outside code blocks

    @property
    def rel(self) -> str:
        return self.path.relative_to(ROOT).as_posix()

    def prose(self) -> str:
        """The text without its code blocks (links and names in prose only)."""
        lines = self.text.splitlines()
        for block in self.blocks:
            n = block.code.count("\n")
            for i in range(block.line - 1, block.line - 1 + n):
                lines[i] = ""
        return "\n".join(lines)


def _parse(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT).as_posix()
    blocks: list[Block] = []
    headings: list[str] = []
    section = ""
    lines = text.splitlines()
    i = 0
    previous = ""  # the last non-blank line before this one
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"^#{1,6} (.+)$", line)
        if heading:
            headings.append(heading.group(1))
            section = heading.group(1).strip()
        fence = FENCE.match(line)
        if fence:
            marker, lang = fence.groups()
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != marker:
                j += 1
            assert j < len(lines), f"{rel}:{i + 1}: fence never closed"
            mark = NOT_RUN_MARK.match(previous)
            blocks.append(Block(rel, lang, start + 1, section,
                                "\n".join(lines[start:j]) + "\n",
                                mark.group(1) if mark else None))
            previous = lines[j]
            i = j + 1
            continue
        if line.strip():
            previous = line
        i += 1
    return Page(path, text, tuple(blocks), tuple(headings))


PARSED = [_parse(p) for p in PAGES]
BLOCKS = [b for page in PARSED for b in page.blocks]
PYTHON = [b for b in BLOCKS if b.lang == "python"]
BASH = [b for b in BLOCKS if b.lang == "bash"]
README_PAGE = PARSED[0]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONPATH", None)
    return env


def _tail(text: str, n: int = 3000) -> str:
    return text if len(text) <= n else "…" + text[-n:]


# --- running the blocks, a few at a time -------------------------------------------------

def _commands(block: Block) -> list[tuple[int, str, str]]:
    """(page line, command, trailing comment) for each command line of a bash block."""
    out = []
    for offset, raw in enumerate(block.code.splitlines()):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        command, _, comment = text.partition(" #")
        out.append((block.line + offset, command.strip(), comment.strip()))
    return out


def _run_python(block: Block, folder: Path) -> subprocess.CompletedProcess[str]:
    # Blank lines keep the script's line numbers equal to the page's in tracebacks.
    script = folder / "doc_block.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], cwd=folder, env=_env(), capture_output=True,
        text=True, timeout=TIMEOUT,
    )


Ran = list[tuple[int, str, "subprocess.CompletedProcess[str]"]]


def _run_bash(block: Block, folder: Path) -> Ran:
    (folder / "data").symlink_to(ROOT / "data", target_is_directory=True)
    done = []
    for line, command, _ in _commands(block):
        argv = shlex.split(command)
        if argv[0] == "metrickit":
            done.append((line, command, subprocess.run(
                [str(METRICKIT), *argv[1:]], cwd=folder, env=_env(), capture_output=True,
                text=True, timeout=TIMEOUT,
            )))
    return done


def _run(block: Block, folder: Path) -> Any:
    return _run_python(block, folder) if block.lang == "python" else _run_bash(block, folder)


@pytest.fixture(scope="module")
def results(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """One future per block that a selected test of this module runs, started together."""
    wanted: dict[str, Block] = {}
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        block = callspec.params.get("block") if callspec else None
        if (getattr(item, "module", None) is sys.modules[__name__] and isinstance(block, Block)
                and block.not_run is None and block.lang in ("python", "bash")):
            wanted[block.id] = block
    workers = max(1, int(os.environ.get("METRICKIT_DOC_WORKERS", os.cpu_count() or 2)))
    pool = ThreadPoolExecutor(max_workers=workers)
    # bash blocks first: they hold several commands each and would otherwise finish last.
    order = sorted(wanted.values(), key=lambda b: (b.lang != "bash", b.id))
    futures: dict[str, Future[Any]] = {
        b.id: pool.submit(_run, b, tmp_path_factory.mktemp("block")) for b in order
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


# --- what the pages must hold ------------------------------------------------------------

def test_the_pages_have_code_to_run() -> None:
    runnable = [b for b in PYTHON if b.not_run is None]
    assert len(runnable) >= 20, [b.id for b in runnable]
    assert any(b.page == "README.md" for b in runnable), "the README needs a runnable example"
    assert any("metrickit " in b.code for b in BASH)
    guides = {p.rel for p in PARSED if p.path.parent == GUIDES}
    with_code = {b.page for b in BLOCKS}
    bare = sorted(guides - with_code - {"docs/guides/glossary.md"})
    assert not bare, f"guides without an example to run: {bare}"


def test_the_first_screen_starts_with_make_demo_and_make_test() -> None:
    # .ci/run and the Makefile call `make test` "the README's test command".
    first = README_PAGE.blocks[0]
    commands = [line.split("#")[0].strip() for line in first.code.splitlines()]
    commands = [c for c in commands if c]
    assert first.lang == "bash" and commands[:2] == ["make demo", "make test"], commands
    assert "make lab" in commands


def test_the_readme_is_a_front_page() -> None:
    assert len(README_PAGE.text.splitlines()) <= 200
    linked = set(re.findall(r"\]\((docs/guides/[\w-]+\.md)", README_PAGE.text))
    guides = {p.relative_to(ROOT).as_posix() for p in GUIDES.glob("*.md")}
    assert guides <= linked, f"guides the README does not link to: {sorted(guides - linked)}"


def test_not_run_blocks_are_few_and_say_why() -> None:
    found = {b.id: b.not_run for b in BLOCKS if b.not_run}
    unknown = {where: reason for where, reason in found.items() if reason not in NOT_RUN_REASONS}
    assert not unknown, f"blocks marked not run for an unlisted reason: {unknown}"
    assert len(found) <= MAX_NOT_RUN, found
    # The old marker, a first line '# not run: ...', is not read any more.
    old = [b.id for b in PYTHON if re.match(r"\s*#\s*not run:", b.code)]
    assert not old, f"use <!-- not run: reason --> before the fence: {old}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.not_run], ids=lambda b: b.id)
def test_a_not_run_block_still_compiles(block: Block) -> None:
    if block.lang == "python":
        compile(block.code, block.id, "exec")
    else:
        for _, command, _ in _commands(block):
            shlex.split(command)
    pytest.skip(f"{block.where}: not run: {block.not_run}")


@pytest.mark.parametrize("block", [b for b in PYTHON if not b.not_run], ids=lambda b: b.id)
def test_python_block_runs_as_written(block: Block, results: dict[str, Future[Any]]) -> None:
    done = results[block.id].result()
    assert done.returncode == 0, (
        f"{block.where} failed with exit status {done.returncode}; the traceback's line "
        f"numbers are the page's:\n{_tail(done.stderr)}"
    )
    # An example that uses an API on its way out teaches readers the wrong call.
    stale = re.findall(r"^.*(?:Deprecation|Future)Warning.*$", done.stderr, flags=re.M)
    assert not stale, f"{block.where}: {stale}"


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.M))


@pytest.mark.parametrize("block", [b for b in BASH if not b.not_run], ids=lambda b: b.id)
def test_bash_block_runs_or_names_what_exists(block: Block,
                                              results: dict[str, Future[Any]]) -> None:
    ran = {line: done for line, _, done in results[block.id].result()}
    for line, command, comment in _commands(block):
        argv = shlex.split(command)
        where = f"{block.page}:{line}: {command}"
        if argv[0] == "metrickit":
            done = ran[line]
            expected = re.search(r"\bexits (\d+)", comment)
            want = int(expected.group(1)) if expected else 0
            assert done.returncode == want, (
                f"{where}\nexit status {done.returncode}, expected {want}\n"
                f"{_tail(done.stdout)}\n{_tail(done.stderr)}"
            )
        elif argv[0] == "make":
            targets = [a for a in argv[1:] if "=" not in a]
            assert set(targets) <= _makefile_targets(), f"{where}: no such Makefile target"
        elif argv[0] in ("python", ".venv/bin/python"):
            assert (ROOT / argv[1]).is_file(), f"{where}: no such script"
        elif argv[:2] == ["pip", "install"]:
            continue
        else:
            pytest.fail(f"{where}: a command this test neither runs nor checks")


# --- links, anchors, names ---------------------------------------------------------------

def _slug(heading: str) -> str:
    # GitHub's and MkDocs' (toc) anchors agree on the headings these pages use.
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


ANCHORS = {page.path: {_slug(h) for h in page.headings} for page in PARSED}


def _links(page: Page) -> list[tuple[str, str]]:
    """(target, anchor) of each relative link in the page's prose."""
    return [
        (target, anchor)
        for target, anchor in re.findall(r"\]\(([^)#:\s]*)(?:#([^)\s]*))?\)", page.prose())
    ]


@pytest.mark.parametrize("page", PARSED, ids=lambda p: p.rel)
def test_links_to_files_in_the_repository_exist(page: Page) -> None:
    missing = [t for t, _ in _links(page) if t and not (page.path.parent / t).exists()]
    assert not missing, f"{page.rel}: {missing}"


@pytest.mark.parametrize("page", [p for p in PARSED if p.path != README], ids=lambda p: p.rel)
def test_the_site_links_only_to_its_own_pages(page: Page) -> None:
    # The site has no page for a file outside docs/: name such a file in a code span.
    outside = [
        t for t, _ in _links(page)
        if t and not (page.path.parent / t).resolve().is_relative_to(DOCS.resolve())
        and not (page.path.parent / t).resolve().is_relative_to((ROOT / "notebooks").resolve())
    ]
    assert not outside, f"{page.rel}: write these as `code`, not links: {outside}"


@pytest.mark.parametrize("page", PARSED, ids=lambda p: p.rel)
def test_anchors_of_links_exist(page: Page) -> None:
    wrong = []
    for target, anchor in _links(page):
        if not anchor:
            continue
        path = (page.path.parent / target).resolve() if target else page.path
        if path.suffix == ".md" and anchor not in ANCHORS.get(path, set()):
            wrong.append(f"{target}#{anchor}")
    assert not wrong, f"{page.rel}: {wrong}"


@pytest.mark.parametrize("page", PARSED, ids=lambda p: p.rel)
def test_no_unexplained_project_jargon(page: Page) -> None:
    found = [word for word in UNEXPLAINED if re.search(word, page.text, flags=re.I)]
    assert not found, f"{page.rel}: {found}"


@pytest.mark.parametrize("page", PARSED, ids=lambda p: p.rel)
def test_files_the_pages_name_exist(page: Page) -> None:
    # Benchmarks quoted for a figure, notebooks and tests pointed to, sample files.
    named = set(re.findall(
        r"(?<![\w/.])((?:benchmarks|tests|notebooks|docs|data|metrickit)/[\w./-]*\w)",
        page.text))
    named.discard("benchmarks/_data")  # written by the benchmarks, not committed
    missing = sorted(p for p in named if "*" not in p and not (ROOT / p).exists())
    assert not missing, f"{page.rel}: {missing}"
