"""Every code block in README.md runs as written.

Python blocks: each runs as its own script in a fresh interpreter whose working directory
is an empty temporary folder, with ``MPLBACKEND=Agg``. That is how a reader uses them: a
block is copied into a new notebook or file, anywhere on disk, without the blocks before
it. So each block carries its own imports and reaches data through ``mk.examples``; a
block that leaned on an earlier block's variables or on the repository as working
directory fails here.

A block that cannot run here (it needs a cluster or the network) starts with a marker
line ``# not run: <reason>``; it is still compiled, and :data:`NOT_RUN_REASONS` lists the
only ones allowed, so the count cannot creep up unnoticed.

bash blocks: a line starting with ``metrickit`` is run with this venv's ``metrickit``
from a temporary folder where ``data/`` links to the repository's ``data/`` (so the
README's paths are the ones that work from the repository root, and files the commands
write land in the temporary folder). A trailing ``# exits 1`` states the expected exit
status. Other lines are checked, not run: ``make <target>`` names a target of the
Makefile, ``python <script>`` a file that exists, ``pip install`` is left alone; any
other command fails the test until it is taught here.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
METRICKIT = Path(sys.executable).with_name("metrickit")

# The only blocks allowed to skip running: (marker reason, why it cannot run here).
NOT_RUN_REASONS = {
    "needs a Dask cluster",
}

TIMEOUT = 300

# Project-internal words a reader of the README cannot know; the glossary or plain words
# replace them.
UNEXPLAINED = (
    "the seed page",
    "German scorer page",
    "the issue's targets",
    "issue #",
)


@dataclass(frozen=True)
class Block:
    lang: str
    line: int  # 1-based line of the first code line in README.md
    section: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.lang}-line{self.line}"


def _blocks(text: str) -> list[Block]:
    blocks: list[Block] = []
    section = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("## "):
            section = line[3:].strip()
        fence = re.match(r"^(`{3,})(\S*)\s*$", line)
        if fence:
            marker, lang = fence.groups()
            start = i + 1
            j = start
            while j < len(lines) and lines[j].strip() != marker:
                j += 1
            assert j < len(lines), f"README.md:{i + 1}: fence never closed"
            blocks.append(Block(lang, start + 1, section, "\n".join(lines[start:j]) + "\n"))
            i = j + 1
            continue
        i += 1
    return blocks


BLOCKS = _blocks(README.read_text(encoding="utf-8"))
PYTHON = [b for b in BLOCKS if b.lang == "python"]
BASH = [b for b in BLOCKS if b.lang == "bash"]


def _not_run_reason(block: Block) -> str | None:
    first = block.code.lstrip("\n").splitlines()[0]
    match = re.match(r"#\s*not run:\s*(.+?)\s*$", first)
    return match.group(1) if match else None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    env.pop("PYTHONPATH", None)
    return env


def _tail(text: str, n: int = 3000) -> str:
    return text if len(text) <= n else "…" + text[-n:]


def test_the_readme_has_code_to_run() -> None:
    assert len(PYTHON) >= 8, [b.id for b in PYTHON]
    assert any("metrickit " in b.code for b in BASH)


def test_the_first_screen_starts_with_make_demo_and_make_test() -> None:
    first = BLOCKS[0]
    commands = [line.split("#")[0].strip() for line in first.code.splitlines()]
    commands = [c for c in commands if c]
    assert first.lang == "bash" and commands[:2] == ["make demo", "make test"], commands
    assert "make lab" in commands


def test_not_run_blocks_are_few_and_say_why() -> None:
    found = {b.line: _not_run_reason(b) for b in PYTHON if _not_run_reason(b)}
    unknown = {line: reason for line, reason in found.items() if reason not in NOT_RUN_REASONS}
    assert not unknown, f"README blocks marked not run for an unlisted reason: {unknown}"
    assert len(found) <= len(NOT_RUN_REASONS), found


@pytest.mark.parametrize("block", [b for b in PYTHON if _not_run_reason(b)], ids=lambda b: b.id)
def test_a_not_run_block_still_compiles(block: Block) -> None:
    compile(block.code, f"README.md:{block.line}", "exec")


@pytest.mark.parametrize("block", [b for b in PYTHON if not _not_run_reason(b)],
                         ids=lambda b: b.id)
def test_python_block_runs_as_written(block: Block, tmp_path: Path) -> None:
    # Blank lines keep the script's line numbers equal to README.md's in tracebacks.
    script = tmp_path / "readme_block.py"
    script.write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True,
        text=True, timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"README.md:{block.line} (section {block.section!r}) failed with exit status "
        f"{done.returncode}; the traceback's line numbers are README.md's:\n"
        f"{_tail(done.stderr)}"
    )
    # An example that uses an API on its way out teaches readers the wrong call.
    stale = re.findall(r"^.*(?:Deprecation|Future)Warning.*$", done.stderr, flags=re.M)
    assert not stale, f"README.md:{block.line} (section {block.section!r}): {stale}"


def _commands(block: Block) -> list[tuple[int, str, str]]:
    """(README line, command, trailing comment) for each command line of a bash block."""
    out = []
    for offset, raw in enumerate(block.code.splitlines()):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        command, _, comment = text.partition(" #")
        out.append((block.line + offset, command.strip(), comment.strip()))
    return out


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.M))


@pytest.mark.parametrize("block", BASH, ids=lambda b: b.id)
def test_bash_block_runs_or_names_what_exists(block: Block, tmp_path: Path) -> None:
    (tmp_path / "data").symlink_to(ROOT / "data", target_is_directory=True)
    for line, command, comment in _commands(block):
        argv = shlex.split(command)
        where = f"README.md:{line}: {command}"
        if argv[0] == "metrickit":
            expected = re.search(r"\bexits (\d+)", comment)
            done = subprocess.run(
                [str(METRICKIT), *argv[1:]], cwd=tmp_path, env=_env(), capture_output=True,
                text=True, timeout=TIMEOUT,
            )
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


def test_links_to_files_in_the_repository_exist() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [
        target for target in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", text)
        if not (ROOT / target).exists()
    ]
    assert not missing, missing


def test_anchors_of_in_page_links_exist() -> None:
    text = README.read_text(encoding="utf-8")
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.M)

    def slug(heading: str) -> str:
        s = heading.strip().lower()
        s = re.sub(r"[^\w\- ]", "", s)
        return s.replace(" ", "-")

    anchors = {slug(h) for h in headings}
    wanted = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert wanted <= anchors, sorted(wanted - anchors)


def test_no_unexplained_project_jargon() -> None:
    text = README.read_text(encoding="utf-8")
    found = [word for word in UNEXPLAINED if word.lower() in text.lower()]
    assert not found, found


def test_files_the_readme_names_exist() -> None:
    # Benchmarks quoted for a figure, notebooks and tests pointed to, sample files.
    text = README.read_text(encoding="utf-8")
    named = set(re.findall(
        r"\b((?:benchmarks|tests|notebooks|docs|data|metrickit)/[\w./-]*\w)", text))
    named.discard("benchmarks/_data")  # written by the benchmarks, not committed
    missing = sorted(p for p in named if "*" not in p and not (ROOT / p).exists())
    assert named and not missing, missing
