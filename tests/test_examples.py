"""mk.examples: the example data from any working directory, and inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import metrickit as mk

ROOT = Path(__file__).resolve().parent.parent


def test_examples_load_from_any_folder(tmp_path):
    code = (
        "import metrickit as mk; t = mk.examples.load('harbor_jobs'); "
        "c = mk.examples.load('tickets'); r = mk.examples.load('runs'); "
        "print(len(t), len(c), len(r), mk.examples.path('cases/exact_match.py').is_file())"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["44", "300", "1200", "True"]


def test_every_named_data_set_loads_in_both_backends():
    for name in mk.examples.names():
        pandas = mk.examples.load(name)
        polars = mk.examples.load(name, backend="polars")
        assert len(pandas) == len(polars) > 0, name
        assert type(polars).__module__.startswith("polars")


def test_unknown_example_lists_what_exists():
    with pytest.raises(FileNotFoundError, match="data sets are"):
        mk.examples.path("nope")
    with pytest.raises(FileNotFoundError, match="expected one of"):
        mk.examples.load("cases/exact_match.py")


@pytest.mark.slow
def test_wheel_carries_the_example_data(tmp_path):
    # What a `pip install metrickit` user gets: the data inside the package.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = tmp_path.glob("metrickit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for expected in ("metrickit/examples.py", "metrickit/_examples/cases/tickets.jsonl",
                     "metrickit/_examples/rewards/runs/steady.jsonl",
                     "metrickit/_examples/metric_scripts/strict_pass_rate.py"):
        assert expected in names, expected
    assert any(n.startswith("metrickit/_examples/harbor_jobs/2025-06-02__10-00-00/") for n in names)
