"""The CLI through a real subprocess, as Harbor would call a metric.py."""

from __future__ import annotations

import json
import subprocess
import sys


def run(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "metrickit.cli", *args], capture_output=True, text=True, **kw
    )


def test_aggregate_round_trip(data_dir, tmp_path):
    out = tmp_path / "metrics.json"
    proc = run("aggregate", "-i", str(data_dir / "rewards" / "multi_dim.jsonl"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == {"correctness": 0.5, "style": 0.5}
    proc = run(
        "aggregate",
        "--input-path",
        str(data_dir / "rewards" / "single_dim.jsonl"),
        "--output-path",
        str(out),
        "--metric",
        "max",
    )
    assert proc.returncode == 0
    assert json.loads(out.read_text()) == {"max": 1}


def test_aggregate_bad_input_one_line_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"reward": 1}\n{"reward": "high"}\n')
    out = tmp_path / "metrics.json"
    proc = run("aggregate", "-i", str(bad), "-o", str(out))
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert f"{bad}:2: value of 'reward' is 'high'" in proc.stderr
    assert not out.exists()


def test_summarize(data_dir):
    proc = run("summarize", str(data_dir / "rewards" / "missing_dims.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert "rows: 4" in proc.stdout
    assert "null rows: 1" in proc.stdout
    assert "rows missing a key: 2" in proc.stdout
    assert "correctness" in proc.stdout and "0.2500" in proc.stdout

