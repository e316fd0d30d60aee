"""Dask: read_rewards(backend="dask"), aggregate and compare_metrics on a LocalCluster."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

import metrickit as mk

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

pytestmark = [
    pytest.mark.timeout(120),
    # narwhals 2.x announces that its Dask support moves to the narwhals-dask package
    # (not yet published); metrics written with narwhals still run unchanged here.
    pytest.mark.filterwarnings("ignore:Dask support is moving out of Narwhals:FutureWarning"),
]

METRICS = ["mean", "sum", "min", "max"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        host="127.0.0.1",
        processes=True,
        dashboard_address=":0",  # a free port: never collide with another process
        silence_logs=40,
    )
    with cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> list[Path]:
    """Three runs: null lines, blank lines, keys that first appear late, int/float mixes."""
    root = tmp_path_factory.mktemp("runs")
    out = []
    for run in range(3):
        lines = []
        for i in range(400):
            if i % 9 == 4:
                lines.append("null")
            elif i % 50 == 7:
                lines.append("")
            elif run == 1 and i > 300:
                lines.append(json.dumps({"correctness": (i % 3) / 3, "style": i % 2}))
            else:
                lines.append(json.dumps({"correctness": i % 2 if i % 4 else 0.125 * (i % 8)}))
        path = root / f"run{run}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        out.append(path)
    return out


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    return math.isclose(a, b, rel_tol=0, abs_tol=1e-12)  # type: ignore[arg-type]


def test_dask_frame_equals_pandas(client, files) -> None:
    ddf = mk.read_rewards(files, backend="dask")
    assert isinstance(ddf, dd.DataFrame)
    assert ddf.npartitions == len(files)
    eager = mk.read_rewards(files)
    pd.testing.assert_frame_equal(ddf.compute().reset_index(drop=True), eager)
    glob = str(files[0].parent / "*.jsonl")
    pd.testing.assert_frame_equal(
        mk.read_rewards(glob, backend="dask").compute().reset_index(drop=True), eager
    )


def test_large_files_are_split_at_line_boundaries(client, files) -> None:
    from metrickit.io.dask import read_rewards_dask

    ddf = read_rewards_dask(files, block_bytes=1000)
    assert ddf.npartitions > 3 * len(files)
    eager = mk.read_rewards(files)
    pd.testing.assert_frame_equal(ddf.compute().reset_index(drop=True), eager)
    for metric in METRICS:
        assert mk.aggregate(ddf, metric) == mk.aggregate(eager, metric)


@pytest.mark.parametrize("metric", METRICS)
def test_aggregate_on_dask_equals_pandas(client, files, metric) -> None:
    ddf = mk.read_rewards(files, backend="dask")
    eager = mk.read_rewards(files)
    assert _close(mk.aggregate(ddf, metric), mk.aggregate(eager, metric))
    # in fact the same bits: partitions are fed to Harbor's sum in row order
    assert mk.aggregate(ddf, metric) == mk.aggregate(eager, metric)
    assert mk.aggregate(ddf, metric, by="_source") == mk.aggregate(eager, metric, by="_source")


def test_compare_metrics_on_dask_equals_pandas(client, files) -> None:
    import narwhals as nw

    ddf = mk.read_rewards(files, backend="dask")
    eager = mk.read_rewards(files)
    metrics = {
        "mean": "mean",
        "lenient": nw.col("correctness") >= 0.5,
        "pass": mk.pass_rate(1.0),
        "max": mk.harbor_metric("max"),
    }
    got = mk.compare_metrics(ddf, metrics, by="_source", n_resamples=200).table
    want = mk.compare_metrics(eager, metrics, by="_source", n_resamples=200).table
    pd.testing.assert_frame_equal(got, want, check_exact=False, atol=1e-12, rtol=0)
    lenient = mk.metric("lenient", nw.col("correctness") >= 0.5)
    assert _close(lenient(ddf), lenient(eager))


def test_dask_errors_name_file_and_line(client, tmp_path) -> None:
    from metrickit.io.dask import read_rewards_dask

    good = tmp_path / "good.jsonl"
    good.write_text('{"a": 1}\n' * 300)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n' * 250 + '{"a": NaN}\n' + '{"a": 0}\n' * 20)
    with pytest.raises(mk.RewardFileError, match=r"bad\.jsonl:251: value of 'a' is NaN"):
        read_rewards_dask([good, bad], block_bytes=500)
    with pytest.raises(ValueError, match="errors='raise' only"):
        mk.read_rewards([good], backend="dask", errors="report")


def test_in_memory_rows_become_one_partition(client) -> None:
    rows = [{"a": 1}, None, {"a": 0.5, "b": 2}]
    ddf = mk.read_rewards(rows, backend="dask")
    assert ddf.npartitions == 1
    assert mk.aggregate(ddf) == mk.aggregate(rows)


# Pickled by value so that the worker processes need not import this test module.
def _scorer(input, output, expected=None):
    if output == "boom":
        raise RuntimeError("scorer exploded")
    if output == "bad":
        return 0.5  # no side information: breaks the contract
    ok = output == expected
    return (1.0 if ok else 0.0), {"feedback": "Correct." if ok else "Wrong."}


def test_score_cases_on_the_cluster(client) -> None:
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    try:
        cases = [
            {"id": f"c{i}", "question": f"q{i}", "output": out, "expected": "yes"}
            for i, out in enumerate(["yes", "no", "boom", "bad", "yes", "no"])
        ]
        result = mk.score_cases(
            _scorer, cases, executor=client.get_executor(), keys=["id"], progress=False
        )
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
    assert result["id"].tolist() == [c["id"] for c in cases]
    assert result["score"].tolist() == [1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    errors = result["error"].tolist()
    assert [pd.isna(e) for e in errors] == [True, True, False, False, True, True]
    assert "scorer exploded" in errors[2]
