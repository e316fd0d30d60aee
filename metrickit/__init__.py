"""metrickit: load, aggregate, compare and tune evaluation rewards.

The public names are listed once, in ``metrickit/__init__.pyi``: type checkers read its
imports, and this module reads the same imports to load each name on first use
(PEP 562) and to build ``__all__``. So ``import metrickit`` imports no numpy, pandas,
polars or matplotlib, and a process that needs one module (the CLI) imports only that
module's dependencies. Submodules (``metrickit.reporting.plots``, ``metrickit.widgets``) load on
first use too.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_PACKAGES = {"compute", "io", "reporting", "scoring"}
_exports: dict[str, str] = {}  # public name -> the module that defines it, from the stub
_submodules: dict[str, str] = {}  # submodules the stub names (mk.plots) -> their full name


def _public() -> dict[str, str]:
    """The ``from <module> import (<name> as <name>, ...)`` statements of ``__init__.pyi``.

    Parsed on the first lookup of a public name rather than at import, because ``ast``
    alone takes longer to import than the rest of ``import metrickit``.
    """
    if not _exports:
        import ast
        import os

        stub = os.path.join(os.path.dirname(__file__), "__init__.pyi")
        tree = ast.parse(__spec__.loader.get_data(stub))  # type: ignore[union-attr]
        for node in tree.body:
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            package = node.module == __name__ or (
                node.module.count(".") == 1
                and os.path.isdir(os.path.join(os.path.dirname(__file__), node.module[10:]))
            )
            for alias in node.names:
                if package:  # `from metrickit.reporting import plots as plots`: a submodule
                    _submodules[alias.name] = f"{node.module}.{alias.name}"
                else:
                    _exports[alias.name] = node.module
    return _exports


def __getattr__(name: str) -> object:
    if name == "__all__":
        return sorted([*_public(), "__version__"])
    module = _public().get(name)
    if name in _submodules or (name in _PACKAGES and module is None):
        value = importlib.import_module(_submodules.get(name, f"{__name__}.{name}"))
        globals()[name] = value
        return value
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'metrickit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public()) | set(_submodules) | _PACKAGES)
