from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def demo_report_argv() -> Callable[[Path], list[str]]:
    """The `metrickit report` command of `make demo`, read from the Makefile, writing to
    the given path instead of out/report.html (paths made absolute)."""
    lines = [line for line in (ROOT / "Makefile").read_text().splitlines()
             if "/metrickit report " in line]
    assert len(lines) == 1, lines
    words = shlex.split(lines[0])[1:]  # drop $(BIN)/metrickit
    assert words[0] == "report" and "-o" in words

    def argv(out: Path) -> list[str]:
        args = list(words)
        args[args.index("-o") + 1] = str(out)
        return [w if w.startswith("-") or w == "report" or w == str(out) else str(ROOT / w)
                for w in args]

    return argv
