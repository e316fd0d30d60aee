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



def _saved_tables(data_dir, tmp_path):
    """Two jobs' trial tables saved as CSV, as a user saves them to share."""
    import metrickit as mk

    paths = []
    for job in ("2025-06-02__10-00-00", "2025-06-03__14-30-00"):
        trials = mk.read_harbor_job(data_dir / "harbor_jobs" / job, progress=False)
        paths.append(tmp_path / f"{job}.csv")
        trials.to_csv(paths[-1], index=False)
    return paths


def test_summarize_several_paths(data_dir, tmp_path):
    a, b = _saved_tables(data_dir, tmp_path)
    proc = run("summarize", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"trial table {a} {b}: 44 trial(s)")
    assert "terminus-2__claude-sonnet-4-5__terminal-bench-mini" in proc.stdout
    assert "codex__gpt-5__webapp-tasks" in proc.stdout
    jobs = [str(data_dir / "harbor_jobs" / j) for j in ("2025-06-02__10-00-00",
                                                       "2025-06-03__14-30-00")]
    proc = run("summarize", *jobs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Harbor job {' '.join(jobs)}: 44 trial(s)")
    rewards = [str(data_dir / "rewards" / f) for f in ("single_dim.jsonl", "multi_dim.jsonl")]
    proc = run("summarize", *rewards)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(rewards[0]) and f"\n\n{rewards[1]}\n" in proc.stdout
    proc = run("summarize", rewards[0], jobs[0])  # a reward frame and a trial table: refused
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "load them separately" in proc.stderr


def test_report_two_saved_tables(data_dir, tmp_path):
    a, b = _saved_tables(data_dir, tmp_path)
    out = tmp_path / "x.html"
    proc = run("report", str(a), str(b), "-o", str(out))  # was an AttributeError traceback
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "gpt-5" in page and "claude-sonnet-4-5" in page  # both jobs' candidates


def test_a_path_of_no_format_is_one_error_per_format(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    for command in (["summarize"], ["report", "-o", str(tmp_path / "x.html")]):
        proc = run(*command, str(tmp_path / "notes.txt"))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        lines = proc.stderr.splitlines()
        assert lines[0].endswith(f"{tmp_path / 'notes.txt'}: not a source metrickit reads; "
                                 "it is not")
        assert len(lines) == 7 and all(line.startswith("  - ") for line in lines[1:])
    rewards = tmp_path / "r.jsonl"
    rewards.write_text('{"reward": 1}\n')
    proc = run("report", str(rewards), "-o", str(tmp_path / "y.html"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "reward JSONL" in proc.stderr and "not a trial source the report can rank" in proc.stderr


def test_a_warning_reads_as_one_line_for_a_person_at_a_terminal(tmp_path):
    import subprocess
    import sys

    import pandas as pd

    # total_ms given in nanoseconds: the median trial would take years, and a warning says so
    table = tmp_path / "trials.csv"
    pd.DataFrame({"task_name": ["a", "b", "c"], "reward": [1, 0, 1],
                  "total_ms": [4e14, 5e14, 6e14]}).to_csv(table, index=False)
    done = subprocess.run([sys.executable, "-m", "metrickit.cli", "summarize", str(table)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "metrickit summarize: warning:" in done.stderr and "years" in done.stderr
    assert "return fn(" not in done.stderr and ".py:" not in done.stderr


def test_the_command_skips_the_collectors_passes_at_exit(monkeypatch, tmp_path, data_dir):
    # `metrickit` is cli.console: main, then gc.freeze() so Python's shutdown does not walk
    # every imported object again (0.35 s after a report); main itself leaves gc alone
    import gc
    import tomllib

    from metrickit import cli

    scripts = tomllib.loads((data_dir.parent / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["metrickit"] == "metrickit.cli:console"
    monkeypatch.setattr(sys, "argv", ["metrickit", "aggregate", "-i",
                                      str(data_dir / "rewards" / "multi_dim.jsonl"),
                                      "-o", str(tmp_path / "m.json")])
    gc.unfreeze()
    assert cli.main(sys.argv[1:]) == 0 and gc.get_freeze_count() == 0
    try:
        assert cli.console() == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()  # the test session's own objects go back to the collector
    assert json.loads((tmp_path / "m.json").read_text())
