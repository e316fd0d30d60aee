"""The run store: every reader's trial table round-trips exactly, re-adding is a no-op, a
changed run is refused, two processes writing at once lose nothing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from polars.testing import assert_frame_equal as assert_polars_equal

import metrickit as mk

SOURCES = ("harbor_jobs", "inspect_logs", "lm_eval_output", "terminal_bench_run")


def _tidy(backend: str = "pandas", run: str = "nightly-1", shift: float = 0.0) -> object:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({
        "task": [f"q{i}" for i in range(20)] * 2,
        "model": ["a"] * 20 + ["b"] * 20,
        "ok": (rng.random(40) < 0.6 + shift).astype(int),
        "ms": rng.uniform(100, 900, 40),
    })
    t = mk.trials_from_frame(df, task="task", reward="ok", model="model", latency_ms="ms")
    t = t.assign(run=pd.array([run] * len(t), dtype="string"))
    t = mk.concat_trials([t])  # labels recomputed for the new run id
    return pl.from_pandas(t) if backend == "polars" else t


@pytest.mark.parametrize("name", SOURCES)
def test_every_reader_round_trips_exactly(tmp_path, name):
    store = mk.RunStore(tmp_path / "runs.duckdb")
    trials = mk.examples.load(name)
    added = store.add(trials)
    assert added == list(dict.fromkeys(trials["run"].tolist()))
    pd.testing.assert_frame_equal(store.trials(), trials)
    polars_trials = mk.examples.load(name, backend="polars")
    assert store.add(polars_trials) == []  # the same runs, from the other backend
    assert_polars_equal(store.trials(backend="polars"), polars_trials)


def test_adding_again_changes_nothing(tmp_path):
    path = tmp_path / "runs.duckdb"
    store = mk.RunStore(path)
    trials = mk.examples.load("harbor_jobs")
    store.add(trials)
    size = len(store.trials())
    assert store.add(trials) == []
    assert len(store.trials()) == size == len(trials)
    assert store.runs()["run"].tolist() == list(dict.fromkeys(trials["run"].tolist()))


def test_a_changed_run_is_refused_and_nothing_of_the_call_is_stored(tmp_path):
    store = mk.RunStore(tmp_path / "runs.duckdb")
    store.add(_tidy(run="nightly-1"))
    changed = _tidy(run="nightly-1", shift=0.3)
    other = _tidy(run="nightly-2")
    with pytest.raises(mk.StoreError, match=r"nightly-1.*different trials"):
        store.add(mk.concat_trials([other, changed]))
    assert store.runs()["run"].tolist() == ["nightly-1"]


def test_runs_resolve_select_and_history(tmp_path):
    store = mk.RunStore(tmp_path / "runs.duckdb")
    for i in range(3):
        store.add(_tidy(run=f"nightly-{i}", shift=0.1 * i))
    assert store.resolve("latest") == "nightly-2" and store.resolve("previous") == "nightly-1"
    with pytest.raises(mk.StoreError, match="no run 'nightly-9'"):
        store.resolve("nightly-9")
    one = store.trials("latest", candidate="a")
    assert set(one["run"]) == {"nightly-2"} and set(one["candidate"]) == {"a"}
    history = store.history(value="ok")
    assert history["run"].tolist() == [f"nightly-{i}" for i in range(3) for _ in range(2)]
    assert (history["ci_low"] <= history["mean"]).all()
    assert (history["mean"] <= history["ci_high"]).all()


def test_two_processes_adding_at_once_lose_nothing(tmp_path):
    path = tmp_path / "runs.duckdb"
    mk.RunStore(path)
    script = textwrap.dedent(f"""
        import sys, numpy as np, pandas as pd, metrickit as mk
        run = sys.argv[1]
        df = pd.DataFrame({{"task": [f"q{{i}}" for i in range(5000)], "ok": 1}})
        t = mk.trials_from_frame(df, task="task", reward="ok")
        t = mk.concat_trials([t.assign(run=pd.array([run] * len(t), dtype="string"))])
        store = mk.RunStore({str(path)!r}, wait=60)
        for i in range(5):
            store.add(t.assign(run=pd.array([f"{{run}}-{{i}}"] * len(t), dtype="string")))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, name], stderr=subprocess.PIPE)
             for name in ("a", "b")]
    errors = [p.communicate(timeout=240)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    runs = mk.RunStore(path).runs()
    assert sorted(runs["run"]) == sorted(f"{n}-{i}" for n in "ab" for i in range(5))
    assert runs["n_trials"].tolist() == [5000] * 10


def test_a_held_store_fails_with_a_message_after_the_wait(tmp_path):
    path = tmp_path / "runs.duckdb"
    mk.RunStore(path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('held', flush=True); "
         "time.sleep(30)"],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(mk.StoreError, match="another process holds the run store"):
            mk.RunStore(path, wait=0.5).runs()
    finally:
        holder.kill()
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()


# dask's own read_parquet calls reset_index(inplace=True), which pandas 3 deprecates
@pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index")
def test_the_trials_are_readable_as_parquet_by_dask(tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    store = mk.RunStore(tmp_path / "runs.duckdb")
    trials = mk.examples.load("harbor_jobs")
    store.add(trials)
    out = store.to_parquet(tmp_path / "trials.parquet")
    frame = dd.read_parquet(str(out)).compute()
    assert len(frame) == len(trials)
    assert frame["reward"].sum() == pytest.approx(trials["reward"].sum())


def test_a_file_that_is_not_a_store_is_refused(tmp_path):
    bad = tmp_path / "notes.duckdb"
    bad.write_text("not a database")
    with pytest.raises(mk.StoreError, match="cannot be opened as a run store"):
        mk.RunStore(bad)
    with pytest.raises(mk.StoreError, match="does not exist"):
        mk.RunStore(Path(tmp_path / "missing" / "runs.duckdb"))
