"""Without polars (``pip install metrickit``, no ``polars`` extra): every reader gives the
same frames, aggregates and errors through the exact path, ``backend="polars"`` says how to
install it, a large read says once how to get the fast path, and the demo and the CLI run.

Each check runs in a subprocess whose import system refuses polars (as an environment
without it does: ``ModuleNotFoundError``) and is compared with this process, which has it.
"""

from __future__ import annotations

import gzip
import json
import pickle
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import metrickit as mk

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
DATA = ROOT / "data"
INSTALL = "pip install 'metrickit[polars]'"

# Prepended to the code of every subprocess, before anything can import polars.
NO_POLARS = '''
import sys

class _NoPolars:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "polars":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, _NoPolars())
'''


def run(code: str, *args: str, polars: bool = False, cwd: Path | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh Python, polars refused unless ``polars``."""
    prelude = "import sys\n" if polars else NO_POLARS
    return subprocess.run([sys.executable, "-c", prelude + code, *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


# ---------------------------------------------------------------------------
# Inputs: every file in data/, plus generated ones the exact path must match on
# ---------------------------------------------------------------------------

#: Bad or unusual reward JSONL: each must give the same frame or the same error.
ODD_INPUTS = {
    "string_value": b'{"reward": 1}\n{"reward": "high"}\n',
    "duplicate_key": b'{"a": 1}\n{"a": 1, "a": 2}\n',
    "nan": b'{"a": 1}\n{"a": NaN}\n',
    "array_line": b'{"a": 1}\n[1, 2]\n',
    "cut_line": b'{"a": 1}\n{"a": \n',
    "huge_int": b'{"a": 9007199254740993}\n',
    "null_value": b'{"a": 1}\n{"a": null}\n',
    "bom_crlf_blank": b'\xef\xbb\xbf{"a": 1}\r\n\r\n  {"a": 0.5, "b": 2}\r\nnull\r\n{}\r\n',
    "float_tokens": b'{"a": 1.0}\n{"a": 1}\n{"a": 2.5e-3, "b": -0.0}\n{"a": 1E2}\n',
    "surrogate_key": b'{"\\ud800": 1}\n',
    "bool": b'{"ok": true}\n{"ok": false, "x": 1}\n',
}


def _many_blocks(path: Path, lines: int = 200_000) -> None:
    """A seeded file of several 4 MB blocks: ints, floats, integral floats ("1.0"),
    exponents, missing keys, ``{}``, ``null`` lines and a key that first appears late."""
    rng = np.random.default_rng(26)
    out = []
    for i in range(lines):
        u = rng.random()
        if u < 0.08:
            out.append("null")
            continue
        if u < 0.12:
            out.append("{}")
            continue
        cells = []
        if rng.random() < 0.9:
            cells.append(f'"correctness": {int(rng.random() < 0.6)}')
        if rng.random() < 0.8:
            cells.append(f'"style": {rng.random():.4f}')
        if rng.random() < 0.7:
            ms = rng.integers(100, 5000)
            cells.append(f'"speed_ms": {ms}.0' if rng.random() < 0.1 else f'"speed_ms": {ms}')
        if rng.random() < 0.3:
            cells.append(f'"cost_usd": {rng.random() * 1e-3:.3e}')
        if i > lines * 3 // 4 and rng.random() < 0.01:
            cells.append('"late": 1')
        out.append("{" + ", ".join(cells) + "}")
    path.write_text("\n".join(out) + "\n")


def make_inputs(folder: Path) -> Path:
    """The generated inputs, written once and read by both processes."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in ODD_INPUTS.items():
        (folder / f"{name}.jsonl").write_bytes(data)
    with gzip.open(folder / "multi_dim.jsonl.gz", "wb") as fh:
        fh.write((DATA / "rewards" / "multi_dim.jsonl").read_bytes())
    _many_blocks(folder / "many_blocks.jsonl")
    mk.examples.load("harbor_jobs").to_csv(folder / "saved_trials.csv", index=False)
    return folder


def _outcome(fn: Callable[[], Any]) -> Any:
    """What ``fn`` returns, or the error it raises as ``("error", type, message)``."""
    try:
        return fn()
    except Exception as exc:
        return ("error", type(exc).__name__, str(exc))


def _reward_files(inputs: Path) -> list[Path]:
    return sorted((DATA / "rewards").rglob("*.jsonl")) + sorted(inputs.glob("*.jsonl*"))


def collect(inputs: Path) -> dict[str, Any]:
    """Every reader and aggregate on every input, by name."""
    out: dict[str, Any] = {}
    for name in mk.examples.names():
        out[f"examples.load({name})"] = _outcome(lambda n=name: mk.examples.load(n))
    for path in [DATA / "rewards", DATA / "rewards" / "runs", inputs / "saved_trials.csv"]:
        out[f"load({path.name})"] = _outcome(lambda p=path: mk.load(p, progress=False))
    for path in _reward_files(inputs):
        out[f"read_rewards({path.name})"] = _outcome(lambda p=path: mk.read_rewards(p))
        # the large file once more (the exact path takes seconds), the others every way
        metrics = ["sum"] if path.name == "many_blocks.jsonl" else ["mean", "sum", "min", "max"]
        for metric in metrics:
            out[f"aggregate({path.name}, {metric})"] = _outcome(
                lambda p=path, m=metric: mk.aggregate(p, m))
        if path.name == "many_blocks.jsonl":
            continue
        out[f"read_rewards({path.name}, report)"] = _outcome(
            lambda p=path: mk.read_rewards(p, errors="report"))
        if path.parent == inputs:
            out[f"read_rewards(bytes of {path.name})"] = _outcome(
                lambda p=path: mk.read_rewards(p.read_bytes()))
    job = DATA / "harbor_jobs" / "2025-07-14__09-00-00"
    out["read_harbor_job(report)"] = _outcome(
        lambda: mk.read_harbor_job(job, errors="report", progress=False))
    return out


def _compare(got: Any, want: Any, where: str) -> None:
    if isinstance(want, pd.DataFrame):
        assert isinstance(got, pd.DataFrame), f"{where}: {got!r}"
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=where)
    elif isinstance(want, tuple) and want and isinstance(want[0], pd.DataFrame):
        assert isinstance(got, tuple) and len(got) == len(want), where
        _compare(got[0], want[0], where)
        for a, b in zip(got[1:], want[1:], strict=True):
            assert a == b, where
    else:
        assert got == want, where


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_inputs(tmp_path_factory.mktemp("no_polars") / "inputs")


@pytest.fixture(scope="module")
def without_polars(inputs: Path) -> dict[str, Any]:
    out = inputs.parent / "without.pickle"
    code = (
        f"sys.path.insert(0, {str(HERE.parent)!r})\n"
        "import pickle, test_without_polars as t\n"
        "from pathlib import Path\n"
        "got = t.collect(Path(sys.argv[1]))\n"
        "assert 'polars' not in sys.modules, 'polars was imported'\n"
        "Path(sys.argv[2]).write_bytes(pickle.dumps(got))\n"
    )
    done = run(code, str(inputs), str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: dict[str, Any] = pickle.loads(out.read_bytes())
    return loaded


@pytest.mark.slow
def test_with_polars_the_large_inputs_take_the_fast_path(inputs):
    # so the comparison below sets polars' read against the exact path, not the exact
    # path against itself
    from metrickit.io.jsonl import fast_blocks
    from metrickit.io.sources import iter_blocks

    for path in [inputs / "many_blocks.jsonl", inputs / "float_tokens.jsonl",
                 DATA / "rewards" / "sample_3000.jsonl"]:
        taken = [parsed is not None for _, parsed, _ in fast_blocks(path.name, iter_blocks(path))]
        assert taken and all(taken), path.name
    assert len(taken) == 1 and sum(1 for _ in iter_blocks(inputs / "many_blocks.jsonl")) == 3


@pytest.mark.slow
def test_the_subprocess_cannot_import_polars():
    done = run("import polars")
    assert done.returncode == 1 and "ModuleNotFoundError: No module named 'polars'" in done.stderr


@pytest.mark.slow
def test_every_reader_gives_the_same_frames_and_errors(inputs, without_polars):
    with_polars = collect(inputs)
    assert sorted(without_polars) == sorted(with_polars)
    assert len(with_polars) > 100
    for where, want in with_polars.items():
        _compare(without_polars[where], want, where)
    # the inputs are what they claim: frames, Harbor aggregates and each kind of error
    assert isinstance(with_polars["read_rewards(many_blocks.jsonl)"], pd.DataFrame)
    assert len(with_polars["read_rewards(many_blocks.jsonl)"]) == 200_000
    assert "late" in with_polars["read_rewards(many_blocks.jsonl)"].columns
    assert isinstance(with_polars["examples.load(harbor_jobs)"], pd.DataFrame)
    errors = {k for k, v in with_polars.items()
              if isinstance(v, tuple) and isinstance(v[0], str) and v[0] == "error"}
    assert {"read_rewards(string_value.jsonl)", "read_rewards(duplicate_key.jsonl)",
            "read_rewards(nan.jsonl)", "read_rewards(cut_line.jsonl)",
            "aggregate(huge_int.jsonl, mean)"} <= errors


@pytest.mark.slow
def test_backend_polars_names_the_install_command():
    job = DATA / "harbor_jobs" / "2025-06-02__10-00-00"
    calls = {
        "read_rewards": "mk.read_rewards('{\"a\": 1}\\n', backend='polars')",
        "load": f"mk.load({str(job)!r}, backend='polars')",
        "read_harbor_job": f"mk.read_harbor_job({str(job)!r}, backend='polars')",
        "examples.load": "mk.examples.load('tickets', backend='polars')",
        "trials_from_frame": "mk.trials_from_frame(pd.DataFrame({'t': ['a'], 'r': [1]}), "
                             "task='t', reward='r', backend='polars')",
        "scan_rewards": f"mk.scan_rewards({str(DATA / 'rewards' / 'multi_dim.jsonl')!r})",
        "score_cases": "mk.score_cases(lambda input, output: 1.0, pd.DataFrame({'x': [1]}), "
                       "backend='polars')",
    }
    code = "import json, pandas as pd, metrickit as mk\nout = {}\n"
    for name, call in calls.items():
        code += (f"try:\n    {call}\n    out[{name!r}] = None\n"
                 f"except ImportError as exc:\n"
                 f"    out[{name!r}] = [type(exc).__name__, str(exc)]\n")
    code += "print(json.dumps(out))\n"
    done = run(code)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    for name, raised in got.items():
        assert raised is not None, f"{name} did not raise"
        kind, message = raised
        assert kind == "ModuleNotFoundError", name
        assert "needs polars, which is not installed" in message, name
        assert INSTALL in message, name
    assert got["scan_rewards"][1].startswith("scan_rewards")
    # an unknown backend is still refused as a bad value, polars or not
    done = run("import metrickit as mk\nmk.read_rewards('{}', backend='arrow')")
    assert "ValueError: backend='arrow'; expected 'pandas', 'polars' or 'dask'" in done.stderr


@pytest.mark.slow
def test_a_large_read_says_once_how_to_get_the_fast_path(inputs):
    code = (
        "import json, warnings, metrickit as mk, metrickit.io.jsonl as jsonl\n"
        "jsonl.SLOW_READ_BYTES = 64\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    mk.read_rewards(sys.argv[1])\n"
        "    mk.aggregate(sys.argv[1])\n"
        "    mk.read_rewards(sys.argv[2])\n"
        "print(json.dumps([[w.category.__name__, str(w.message)] for w in seen]))\n"
    )
    small = str(DATA / "rewards" / "sample_3000.jsonl")
    done = run(code, small, str(DATA / "rewards" / "multi_dim.jsonl"))
    assert done.returncode == 0, done.stderr[-3000:]
    (seen,) = json.loads(done.stdout)
    assert seen[0] == "MetrickitWarning"
    assert seen[1].startswith(f"{small}: a large file")
    assert "polars is not installed" in seen[1] and INSTALL in seen[1]
    # with polars the same reads take the fast path and say nothing
    done = run(code, small, str(DATA / "rewards" / "multi_dim.jsonl"), polars=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == []


@pytest.mark.slow
def test_the_cli_gives_the_same_output(tmp_path):
    job = DATA / "harbor_jobs" / "2025-07-14__09-00-00"
    cli = "from metrickit.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    outputs = {}
    for polars in (True, False):
        folder = tmp_path / ("with" if polars else "without")
        folder.mkdir()
        summary = run(cli, "summarize", str(DATA / "rewards" / "missing_dims.jsonl"),
                      polars=polars, cwd=folder)
        metrics = run(cli, "aggregate", "-i", str(DATA / "rewards" / "multi_dim.jsonl"),
                      "-o", "metrics.json", polars=polars, cwd=folder)
        report = run(cli, "report", str(job), "--spec", str(DATA / "harbor_jobs_spec.py"),
                     "-o", "report.html", polars=polars, cwd=folder)
        for done in (summary, metrics, report):
            assert done.returncode == 0, done.stderr[-3000:]
        html = (folder / "report.html").read_text()
        outputs[polars] = (
            summary.stdout, (folder / "metrics.json").read_text(),
            re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", html),
        )
    assert outputs[False] == outputs[True]
    assert json.loads(outputs[False][1]) == {"correctness": 0.5, "style": 0.5}
    assert "960 trials" in outputs[False][2]


@pytest.mark.slow
def test_the_demo_runs_without_polars(tmp_path):
    code = ("import runpy\nsys.argv = ['metrickit._demo', *sys.argv[1:]]\n"
            "runpy.run_module('metrickit._demo', run_name='__main__')\n")
    done = run(code, str(DATA), str(tmp_path), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "polars" not in done.stderr
    assert {p.name for p in tmp_path.glob("*.png")} == {
        "harbor_job.png", "compare_metrics.png", "tradeoff.png"}
