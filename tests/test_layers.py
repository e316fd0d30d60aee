"""The package's layout holds: data flows one way, no module imports another in a cycle,
and no private name crosses a module boundary."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "metrickit"


def test_the_layers_contract_is_kept():
    # the contract is in pyproject.toml ([tool.importlinter])
    lint = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(lint)], cwd=PACKAGE.parent, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_another_in_a_cycle():
    # function-level imports count: a cycle held together by a late import is still one
    assert _cycles(grimp.build_graph("metrickit")) == []


def test_a_cycle_would_be_found():
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    assert _cycles(graph) == []
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_private_name_is_imported_from_another_module():
    crossings = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("metrickit"):
                crossings += [
                    f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert crossings == []
