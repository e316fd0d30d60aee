from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from report_page import Page
from report_page import parse as _parse

from metrickit.reporting.painter import NO_FORK

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


@contextlib.contextmanager
def spy(name: str) -> Iterator[list[Any]]:
    """Record the Axes every call of ``plots.<name>`` returns (the report and the demo
    look the function up at call time)."""
    from metrickit.reporting import plots

    drawn: list[Any] = []
    original: Callable[..., Any] = getattr(plots, name)

    def record(*args: Any, **kwargs: Any) -> Any:
        ax = original(*args, **kwargs)
        drawn.append(ax)
        return ax

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plots, name, record)
        mp.setenv(NO_FORK, "1")  # drawn in this process, where the spy sees it
        yield drawn


@dataclass
class DemoReport:
    """`make demo`'s report, written once for the session: its path, the command that
    wrote it, the page read back and the Axes of its trade-off plot."""

    path: Path
    argv: list[str]
    page: Page
    tradeoff: Any

    def __iter__(self) -> Iterator[Any]:  # (path, page, tradeoff)
        return iter((self.path, self.page, self.tradeoff))


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory: pytest.TempPathFactory,
                demo_report_argv: Callable[[Path], list[str]]) -> DemoReport:
    """`make demo`'s `metrickit report`, run once: every test that reads that report reads
    this one (it takes seconds to write)."""
    from metrickit.cli import main as cli

    out = tmp_path_factory.mktemp("demo") / "report.html"
    argv = demo_report_argv(out)
    with spy("tradeoff") as drawn:
        assert cli(argv) == 0
    assert len(drawn) == 1
    return DemoReport(out, argv, _parse(out), drawn[0])
