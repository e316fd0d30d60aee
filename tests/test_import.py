"""``import metrickit``: what it loads, and the public API listed once in ``__init__.pyi``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import metrickit as mk

HEAVY = ("numpy", "pandas", "polars", "matplotlib", "scipy", "ipywidgets")
STUB = Path(mk.__file__).with_name("__init__.pyi")


def test_import_loads_no_array_frame_or_plotting_library():
    # -X importtime lists every module the import loads, one per stderr line:
    # "import time: self [us] | cumulative | <indent>name".
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import metrickit"],
        capture_output=True, text=True, check=True,
    )
    loaded = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "metrickit" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []


def test_every_public_name_resolves_in_a_fresh_process():
    code = (
        "import metrickit as mk\n"
        "missing = [n for n in mk.__all__ if getattr(mk, n, None) is None]\n"
        "print(missing, callable(mk.aggregate), mk.plots.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[] True metrickit.reporting.plots"


def test_all_is_the_stubs_imports():
    tree = ast.parse(STUB.read_text())
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    # `name as name` is what makes a stub import a re-export for type checkers
    assert all(alias.asname == alias.name for node in imports for alias in node.names)
    packages = {"metrickit", "metrickit.compute", "metrickit.reporting"}
    names = [alias.name for node in imports if node.module not in packages
             for alias in node.names]
    submodules = {alias.name: f"{node.module}.{alias.name}" for node in imports
                  if node.module in packages for alias in node.names}
    assert len(set(names)) == len(names)
    assert mk.__all__ == sorted([*names, "__version__"])
    assert set(mk.__all__) | set(submodules) <= set(dir(mk))
    for name, module in submodules.items():
        assert getattr(mk, name).__name__ == module


def test_aggregate_is_the_function_after_its_module_is_imported():
    # The implementation module has another name, so importing it cannot rebind mk.aggregate.
    code = (
        "import metrickit.compute.aggregate, metrickit.compute.metrics, metrickit as mk\n"
        "print(callable(mk.aggregate), mk.aggregate.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True metrickit.compute.aggregate"


def test_star_import_gives_the_public_names():
    namespace: dict[str, object] = {}
    exec("from metrickit import *", namespace)
    assert {"read_rewards", "aggregate", "RewardFileError", "__version__"} <= namespace.keys()


def test_no_public_name_is_also_a_subpackage_or_module():
    # Importing metrickit.<x> binds the module to mk.<x>, so a public function named like a
    # subpackage (mk.report vs a package metrickit/report/) would turn into the module after
    # any `import metrickit.report.plots`.
    root = Path(mk.__file__).parent
    modules = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
    assert not set(mk.__all__) & modules
    code = (
        "import metrickit.reporting.plots, metrickit.reporting.html, metrickit as mk\n"
        "print(callable(mk.report), mk.report.__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True metrickit.reporting.html"
