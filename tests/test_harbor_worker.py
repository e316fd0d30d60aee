"""read_harbor_job on two cores: the second reader process and what happens when it fails."""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest
from harbor_jobs_helpers import write_trial

import metrickit as mk
from metrickit import _harbor_worker as worker
from metrickit import harbor


def _job(root: Path, n: int = 60) -> Path:
    job = root / "2025-01-01__00-00-00"
    for i in range(n):
        started = f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}Z"
        if i % 17 == 5:
            (job / f"t{i:03d}").mkdir(parents=True)  # running: no result.json yet
        elif i % 13 == 7:
            write_trial(job, f"t{i:03d}", task=f"task{i % 9}", rewards=None, started=started)
        else:
            rewards = {"correctness": i % 2, "style": (i % 5) / 4}
            write_trial(job, f"t{i:03d}", task=f"task{i % 9}", rewards=rewards, started=started)
    (job / "t999").mkdir()
    (job / "t999" / "result.json").write_text('{"truncated": ')  # a bad trial file
    return job


def test_two_processes_give_the_same_frame_and_problems(tmp_path, monkeypatch):
    job = _job(tmp_path)
    monkeypatch.setattr(harbor, "_SHARED_CHUNK", 4)
    one, problems_one = mk.read_harbor_job(job, errors="report", workers=1, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the worker must not fail here
        two, problems_two = mk.read_harbor_job(job, errors="report", workers=2, progress=False)
    pd.testing.assert_frame_equal(one, two)
    assert [str(p) for p in problems_one] == [str(p) for p in problems_two]
    assert len(problems_one) == 1 and "t999" in str(problems_one[0])


def test_the_worker_really_reads_chunks(tmp_path):
    # The caller's first chunk waits until the worker has delivered one, so the worker's
    # share is exercised whatever the machine's speed; then every chunk must be there,
    # in order, each read exactly as this process would read it.
    job = _job(tmp_path, n=40)
    folders = sorted(p for p in job.iterdir() if p.is_dir())
    chunks = [folders[i : i + 3] for i in range(0, len(folders), 3)]
    helper = worker.start()
    assert helper is not None
    mine: list[int] = []
    progress: list[int] = []

    def read_chunk(chunk: list[Path]) -> list[object]:
        deadline = time.monotonic() + 120
        while worker._get(helper.control, worker._DONE) == 0:
            assert time.monotonic() < deadline, "the worker delivered nothing in 120 s"
            time.sleep(0.01)
        mine.append(len(chunk))
        return [harbor._read_trial(f) for f in chunk]

    parts = worker.read_shared(chunks, read_chunk, progress.append, helper)
    assert len(mine) < len(chunks)  # the worker delivered the others
    assert [[t.folder for t in part] for part in parts] == chunks
    expected = [[harbor._read_trial(f) for f in chunk] for chunk in chunks]
    assert [[(t.row, t.rewards, t.status) for t in part] for part in parts] == [
        [(t.row, t.rewards, t.status) for t in part] for part in expected
    ]
    assert sum(progress) == len(folders)
    assert not helper.directory.exists()  # the shared folder is cleaned up


def test_a_crashing_worker_costs_speed_not_results(tmp_path, monkeypatch):
    job = _job(tmp_path, n=30)
    monkeypatch.setattr(harbor, "_SHARED_CHUNK", 2)
    crash = [sys.executable, "-c", "import sys; sys.exit('worker broke')"]
    monkeypatch.setattr(worker, "_command", lambda directory: crash)
    expected = mk.read_harbor_job(job, errors="report", workers=1, progress=False)[0]
    read = harbor._read_trial

    def slow_read(folder):  # so the worker has crashed before this process is done
        time.sleep(0.05)
        return read(folder)

    monkeypatch.setattr(harbor, "_read_trial", slow_read)
    with pytest.warns(RuntimeWarning, match="second reader process failed.*worker broke"):
        got = mk.read_harbor_job(job, errors="report", workers=2, progress=False)[0]
    pd.testing.assert_frame_equal(expected, got)


def test_a_worker_that_never_starts_is_stopped_without_waiting(tmp_path, monkeypatch):
    job = _job(tmp_path, n=20)
    hang = [sys.executable, "-c", "import time; time.sleep(600)"]
    monkeypatch.setattr(worker, "_command", lambda directory: hang)
    expected = mk.read_harbor_job(job, errors="report", workers=1, progress=False)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mk.read_harbor_job(job, errors="report", workers=2, progress=False)[0]
    pd.testing.assert_frame_equal(expected, got)


def test_workers_argument_is_checked(tmp_path):
    job = _job(tmp_path, n=3)
    with pytest.raises(ValueError, match="workers=3"):
        mk.read_harbor_job(job, workers=3)


def test_an_error_while_listing_leaves_no_worker_behind(tmp_path, monkeypatch):
    job = _job(tmp_path, n=5)
    started = []
    real_start = worker.start

    def spy_start():
        helper = real_start()
        started.append(helper)
        return helper

    def interrupted(folder):
        raise KeyboardInterrupt

    monkeypatch.setattr(worker, "start", spy_start)
    monkeypatch.setattr(harbor, "_subdirs", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mk.read_harbor_job(job, workers=2, progress=False)
    assert len(started) == 1 and started[0] is not None
    assert started[0].proc.poll() is not None  # stopped
    assert not started[0].directory.exists()  # its folder removed


def test_the_worker_reads_with_the_callers_int_digit_limit(tmp_path, monkeypatch):
    # A 5,000-digit reward reads the same way in both processes, whatever limit the
    # caller has set (the worker gets it on its command line).
    job = _job(tmp_path, n=8)
    monkeypatch.setattr(harbor, "_SHARED_CHUNK", 1)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        write_trial(job, "zz_huge", task="t", rewards={"reward": 10**4999})
        one = mk.read_harbor_job(job, errors="report", workers=1, progress=False)[1]
        read, here = harbor._read_trial, []

        def slow_read(folder):  # so the worker reads some trials, the huge one included
            here.append(folder.name)
            time.sleep(0.3)
            return read(folder)

        monkeypatch.setattr(harbor, "_read_trial", slow_read)
        two = mk.read_harbor_job(job, errors="report", workers=2, progress=False)[1]
    finally:
        sys.set_int_max_str_digits(old)
    assert "zz_huge" not in here  # read by the worker (it starts from the end)
    assert [str(p) for p in one] == [str(p) for p in two]
    assert any("huge" in str(p) for p in one)


def test_deeply_nested_trials_read_the_same_from_any_stack_depth(tmp_path):
    # How deep json may nest depends on the caller's stack; near the limit a trial could
    # read in one call and fail in another (or in the worker). Such a trial is retried on
    # an empty stack, so only the file and the recursion limit decide (review finding).
    job = tmp_path / "job"
    folder = write_trial(job, "deep", task="t", rewards={"reward": 1})
    obj = json.loads((folder / "result.json").read_text())
    depth = sys.getrecursionlimit() - 80
    text = json.dumps(obj)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    (folder / "result.json").write_text(text)

    def nested(n):
        if n:
            return nested(n - 1)
        return mk.read_harbor_job(job, errors="report", workers=1, progress=False)[1]

    assert nested(0) == nested(150) == []
    too_deep = tmp_path / "job2"
    folder = write_trial(too_deep, "deeper", task="t", rewards={"reward": 1})
    depth = sys.getrecursionlimit() + 10
    text = json.dumps(obj)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    (folder / "result.json").write_text(text)
    problems = mk.read_harbor_job(too_deep, errors="report", progress=False)[1]
    assert len(problems) == 1 and "nested too deeply" in problems[0].message


def test_no_worker_where_none_can_run(tmp_path, monkeypatch):
    # A frozen app's executable is the app itself: read in this process, quietly.
    job = _job(tmp_path, n=10)
    expected = mk.read_harbor_job(job, errors="report", workers=1, progress=False)[0]
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert worker.start() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = mk.read_harbor_job(job, errors="report", workers=2, progress=False)[0]
    pd.testing.assert_frame_equal(expected, got)
