"""scan_rewards and streaming aggregation: same rows, same bits, same errors as eager."""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit._core.harbor_math import HarborAccumulator, harbor_sum

sys.path.insert(0, str(Path(__file__).parents[1]))
from harbor_reference import harbor_sum_py

METRICS = ["mean", "sum", "min", "max"]


def _same(a: object, b: object) -> bool:
    """Equal with the same type (int vs float) and, for floats, the same sign and bits."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)  # type: ignore[arg-type]
    return a == b


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


@pytest.fixture
def tricky(tmp_path: Path) -> Path:
    """Null and blank lines, a key that first appears after 300 rows, and values whose
    Harbor sum depends on int/float and on order (1e16 + 1.0 - 1e16)."""
    lines = []
    for i in range(300):
        lines.append("null" if i % 7 == 3 else json.dumps({"correctness": i % 2}))
        if i % 50 == 10:
            lines.append("")
    lines += ['{"correctness": 1e16}', '{"correctness": 1.0, "late": 0.1}', "null"]
    lines += ['{"correctness": -1e16, "late": 2}', "{}", '{"late": 0.7, "correctness": 0.3}']
    return _write(tmp_path / "tricky.jsonl", lines)


@pytest.mark.parametrize("chunk_bytes", [24, 100, 1 << 20])
def test_scan_collects_to_the_eager_frame(tricky: Path, chunk_bytes: int) -> None:
    scan = mk.scan_rewards(tricky, chunk_bytes=chunk_bytes)
    eager = mk.read_rewards(tricky, backend="polars")
    assert isinstance(scan, pl.LazyFrame)
    assert scan.collect_schema() == eager.schema
    assert scan.collect().equals(eager)
    late = scan.filter(pl.col("_kind_late") != "missing").collect()
    assert late["late"].to_list() == [0.1, 2.0, 0.7]


@pytest.mark.parametrize("chunk_bytes", [24, 1 << 20])
@pytest.mark.parametrize("metric", METRICS)
def test_aggregate_of_a_scan_is_bit_identical(tricky: Path, chunk_bytes: int, metric: str) -> None:
    expected = mk.aggregate(mk.read_rewards(tricky), metric)
    scan = mk.scan_rewards(tricky, chunk_bytes=chunk_bytes)
    assert _same(mk.aggregate(scan, metric), expected)
    if chunk_bytes > 24:
        # the generic LazyFrame path (a frame derived from the scan) agrees too
        assert _same(mk.aggregate(scan.filter(pl.col("_line") > 0), metric), expected)
        assert _same(mk.aggregate(scan.collect().lazy(), metric), expected)


def test_single_key_and_all_null_files_follow_harbor_naming(tmp_path: Path) -> None:
    single = _write(tmp_path / "single.jsonl", ['{"reward": 1}', "null", '{"reward": 0}'])
    nulls = _write(tmp_path / "nulls.jsonl", ["null", "null"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert _same(mk.aggregate(mk.scan_rewards(single)), {"mean": 1 / 3})
    assert _same(mk.aggregate(mk.scan_rewards(nulls)), {"mean": 0.0})
    assert _same(mk.aggregate(mk.scan_rewards(nulls), "max"), {"max": 0})
    assert _same(mk.aggregate(mk.scan_rewards(empty)), {"mean": 0})
    assert _same(mk.aggregate(mk.scan_rewards(empty), "sum"), {"sum": 0})
    with pytest.raises(mk.AggregationError, match="min of no rows"):
        mk.aggregate(mk.scan_rewards(empty), "min")
    assert mk.scan_rewards(empty).collect().height == 0


def test_many_files_keep_source_and_per_file_lines(tmp_path: Path, tricky: Path) -> None:
    (tmp_path / "runs").mkdir()
    a = _write(tmp_path / "runs" / "a.jsonl", ['{"x": 1}', "null", '{"x": 0.5}'])
    b = _write(tmp_path / "runs" / "b.jsonl", ["{}", '{"y": 1}'])
    pattern = str(tmp_path / "runs" / "*.jsonl")
    scan = mk.scan_rewards(pattern, chunk_bytes=8)
    frame = scan.collect()
    assert frame["_source"].cast(pl.String).to_list() == [str(a)] * 3 + [str(b)] * 2
    assert frame["_line"].to_list() == [1, 2, 3, 1, 2]
    assert frame.equals(mk.read_rewards(pattern, backend="polars"))
    assert frame.equals(mk.scan_rewards([a, b]).collect())
    eager = mk.read_rewards([a, b, tricky])
    for metric in METRICS:
        by = mk.aggregate(mk.scan_rewards([a, b, tricky], chunk_bytes=32), metric, by="_source")
        assert _same(by, mk.aggregate(eager, metric, by="_source"))
    by_status = mk.aggregate(mk.scan_rewards([a, b, tricky]), "sum", by=["_source", "_status"])
    assert _same(by_status, mk.aggregate(eager, "sum", by=["_source", "_status"]))


def test_gzip_and_bom_and_crlf(tmp_path: Path) -> None:
    text = '\ufeff{"a": 1}\r\nnull\r\n{"a": 0.25, "b": 1}\r\n'
    plain = tmp_path / "r.jsonl"
    plain.write_bytes(text.encode())
    packed = tmp_path / "r.jsonl.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    for path in (plain, packed):
        for chunk in (3, 1 << 20):
            scan = mk.scan_rewards(path, chunk_bytes=chunk)
            assert scan.collect().equals(mk.read_rewards(path, backend="polars"))
            assert _same(mk.aggregate(scan), mk.aggregate(mk.read_rewards(path)))


def test_bad_value_names_file_and_global_line(tmp_path: Path) -> None:
    lines = ['{"a": 1}'] * 500 + ['{"a": "high"}'] + ['{"a": 0}'] * 10
    path = _write(tmp_path / "bad.jsonl", lines)
    with pytest.raises(mk.RewardFileError) as eager:
        mk.read_rewards(path)
    expected = f"{path}:501: value of 'a' is 'high' (str)"
    assert str(eager.value).startswith(expected)
    for chunk in (64, 1 << 20):
        scan = mk.scan_rewards(path, chunk_bytes=chunk)
        with pytest.raises(mk.RewardFileError, match=r"bad\.jsonl:501: value of 'a' is 'high'"):
            mk.aggregate(scan)
        with pytest.raises(mk.RewardFileError, match=r"bad\.jsonl:501: value of 'a' is 'high'"):
            scan.collect()


def test_bad_line_in_second_file_is_numbered_in_that_file(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", ['{"a": 1}'] * 40)
    b = _write(tmp_path / "b.jsonl", ['{"a": 1}'] * 7 + ["[1, 2]"])
    with pytest.raises(mk.RewardFileError, match=r"b\.jsonl:8: line is a JSON list"):
        mk.aggregate(mk.scan_rewards([a, b], chunk_bytes=16))


def test_bom_inside_the_file_is_not_skipped(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'{"a": 1}\n\xef\xbb\xbf{"a": 2}\n')
    with pytest.raises(mk.RewardFileError, match=":2: invalid JSON"):
        mk.read_rewards(path)
    with pytest.raises(mk.RewardFileError, match=":2: invalid JSON"):
        mk.aggregate(mk.scan_rewards(path, chunk_bytes=9))


def test_missing_files_and_text_are_refused(tmp_path: Path) -> None:
    with pytest.raises(mk.RewardFileError, match="no such file"):
        mk.scan_rewards(tmp_path / "nope.jsonl")
    with pytest.raises(mk.RewardFileError, match="no files match"):
        mk.scan_rewards(str(tmp_path / "*.jsonl"))
    with pytest.raises(mk.RewardFileError, match="is a directory"):
        mk.scan_rewards(tmp_path)
    with pytest.raises(mk.RewardFileError, match="use read_rewards"):
        mk.scan_rewards('{"a": 1}\n')


def test_clashing_key_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "clash.jsonl", ['{"_line": 1}'])
    with pytest.raises(mk.RewardFileError, match="clashes with a metadata column"):
        mk.scan_rewards(path).collect()


def test_projection_predicate_and_limit_are_applied(tricky: Path) -> None:
    scan = mk.scan_rewards(tricky, chunk_bytes=64)
    eager = mk.read_rewards(tricky, backend="polars")
    query = scan.filter(pl.col("_status") == "null").select("_line").head(5)
    assert query.collect().equals(eager.filter(pl.col("_status") == "null").select("_line").head(5))
    assert scan.head(3).collect().equals(eager.head(3))


def test_metrics_accept_a_scan(tricky: Path) -> None:
    scan = mk.scan_rewards(tricky, chunk_bytes=128)
    eager = mk.read_rewards(tricky)
    for name in METRICS:
        assert _same(mk.harbor_metric(name)(scan), mk.harbor_metric(name)(eager))
        metric = mk.harbor_metric(name)
        assert _same(mk.aggregate(scan, metric), mk.aggregate(eager, metric))
    assert mk.pass_rate(1.0)(scan) == mk.pass_rate(1.0)(eager)
    table = mk.compare_metrics(scan, ["mean", mk.pass_rate(0.5)], n_resamples=50).table
    expected = mk.compare_metrics(eager, ["mean", mk.pass_rate(0.5)], n_resamples=50).table
    assert table.equals(expected)


def test_plain_lazy_frame_of_numbers(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {"group": ["a", "b", "a", "b"], "x": [1, None, 3, 4], "y": [0.5, 0.25, None, 1.0]}
    )
    for metric in METRICS:
        assert _same(mk.aggregate(frame.lazy(), metric), mk.aggregate(frame, metric))
        assert _same(
            mk.aggregate(frame.lazy(), metric, by="group"), mk.aggregate(frame, metric, by="group")
        )
    with pytest.raises(mk.AggregationError, match="by='nope' is not a column"):
        mk.aggregate(frame.lazy(), by="nope")


# ---------------------------------------------------------------------------
# HarborAccumulator: piecewise = whole, = CPython 3.12's sum
# ---------------------------------------------------------------------------

values = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([1e16, -1e16, 0.1, 0.5, -0.0, 0.0, 1e-300, 2.0**52, 2**53]),
    st.floats(-10, 10, allow_nan=False),
)


@given(st.lists(values, max_size=40), st.lists(st.integers(0, 40), max_size=4), st.data())
@example([1e16, 1.0, -1e16], [1, 2], None)
@example([1e16, 1, -1e16], [1], None)
@example([-0.0], [], None)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_accumulator_matches_sum_in_any_pieces(items, cuts, data) -> None:
    zeros_at = set(data.draw(st.lists(st.integers(0, 40), max_size=3))) if data else set()
    acc = HarborAccumulator()
    fed: list[int | float] = []
    bounds = [*sorted(c for c in cuts if c <= len(items)), len(items)]
    start = 0
    for end in bounds:
        if start in zeros_at:
            acc.add_int_zeros(2)
            fed += [0, 0]
        piece = items[start:end]
        acc.update(
            np.array([float(v) for v in piece], dtype=np.float64),
            np.array([isinstance(v, int) for v in piece], dtype=np.bool_),
        )
        fed += piece
        start = end
    assert acc.n == len(fed)
    assert _same(acc.sum(), harbor_sum_py(fed))
    assert _same(
        acc.sum(),
        harbor_sum(np.array(fed, dtype=np.float64), np.array([isinstance(v, int) for v in fed])),
    )
    if fed:
        assert _same(acc.mean(), harbor_sum_py(fed) / len(fed))
        assert _same(acc.min(), min(fed)) and _same(acc.max(), max(fed))
    else:
        with pytest.raises(ValueError):
            acc.min()


rows = st.lists(
    st.one_of(
        st.none(),
        st.dictionaries(
            st.sampled_from(["a", "b", "late"]),
            st.one_of(st.integers(-2, 2), st.floats(-1e3, 1e3, allow_nan=False)),
            max_size=3,
        ),
    ),
    max_size=30,
)


@given(rows, st.integers(1, 200), st.sampled_from(METRICS))
@example([None, {"a": 1}, None, {"late": 0.5}], 1, "mean")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_scan_equals_eager_on_random_files(tmp_path_factory, rows, chunk_bytes, metric) -> None:
    path = tmp_path_factory.mktemp("prop") / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    scan = mk.scan_rewards(path, chunk_bytes=chunk_bytes)
    assert scan.collect().equals(mk.read_rewards(path, backend="polars"))
    eager = mk.read_rewards(path)
    if metric in ("min", "max") and not rows:
        with pytest.raises(mk.AggregationError):
            mk.aggregate(scan, metric)
        return
    assert _same(mk.aggregate(scan, metric), mk.aggregate(eager, metric))


def test_read_rewards_many_files_keeps_source_and_lines(tmp_path: Path) -> None:
    a = _write(tmp_path / "a.jsonl", ['{"x": 1}', "null"])
    b = _write(tmp_path / "b.jsonl", ['{"x": 0}'])
    df = mk.read_rewards([a, b])
    assert df["_source"].astype(str).tolist() == [str(a), str(a), str(b)]
    assert df["_line"].tolist() == [1, 2, 1]
    assert df.equals(mk.read_rewards(str(tmp_path / "*.jsonl")))


@pytest.fixture
def rewardish(tmp_path: Path) -> Path:
    """Reward-like values over many batches, nulls, and a key that first appears late."""
    rng = np.random.default_rng(3)
    lines = []
    for i in range(3000):
        if i % 11 == 4:
            lines.append("null")
            continue
        row = {"correctness": int(rng.integers(0, 2)), "style": round(float(rng.random()), 4)}
        if i > 2000 and i % 3:
            row["late"] = round(float(rng.random()), 3)
        lines.append(json.dumps(row))
    return _write(tmp_path / "rewardish.jsonl", lines)


def _builtin_metrics() -> list[mk.Metric]:
    import narwhals as nw

    return [
        mk.pass_rate(0.5),
        mk.pass_rate(1.0, key="correctness"),
        mk.weighted({"correctness": 2, "style": 1, "late": 1}),
        mk.filled_count(),
        mk.filled_count(key="late"),
        mk.metric("good_style", nw.col("style") > 0.3),
        mk.metric("style_sum", "style", agg="sum"),
        mk.metric("late_max", "late", agg="max"),
        mk.metric("style_min", nw.col("style") * 2, agg="min"),
        mk.quantile(0.5),  # a median: not streamable, the frame is collected
    ]


@pytest.mark.parametrize("chunk_bytes", [4096, 1 << 20])
def test_builtin_metrics_of_a_scan_equal_the_eager_ones(rewardish, chunk_bytes, monkeypatch):
    eager = mk.read_rewards(rewardish)
    scan = mk.scan_rewards(rewardish, chunk_bytes=chunk_bytes)
    for m in _builtin_metrics():
        expected, got = m(eager), m(scan)
        if isinstance(expected, dict):
            assert list(got) == list(expected), m.name
            pairs = [(got[k], expected[k]) for k in expected]
        else:
            pairs = [(got, expected)]
        for g, e in pairs:
            assert g == pytest.approx(e, rel=1e-12, abs=1e-12), m.name


def test_streamed_metrics_never_collect_the_frame(rewardish, monkeypatch):
    # Per-row metrics with mean/sum/min/max go batch by batch: a collect of the whole
    # frame would fail here. (The median of quantile(0.5) needs every row: it collects.)
    import metrickit.compute.stream as stream

    eager = mk.read_rewards(rewardish)
    streamed = _builtin_metrics()[:-1]
    expected = [m(eager) for m in streamed]

    def refuse(frame):
        raise AssertionError("the whole frame was collected")

    import metrickit._core.frame as frame

    monkeypatch.setattr(stream, "materialize", refuse)
    monkeypatch.setattr(frame, "materialize", refuse)
    scan = mk.scan_rewards(rewardish, chunk_bytes=4096)
    for m, e in zip(streamed, expected, strict=True):
        assert m(scan) == pytest.approx(e, rel=1e-12), m.name
    assert mk.aggregate(scan, mk.pass_rate(0.5)) == {"pass_rate@0.5": pytest.approx(expected[0])}
    with pytest.raises(AssertionError, match="collected"):
        mk.quantile(0.5)(scan)


def test_streamed_metrics_of_an_empty_scan(tmp_path):
    empty = _write(tmp_path / "empty.jsonl", ["null", "{}"])
    scan, eager = mk.scan_rewards(empty), mk.read_rewards(empty)
    for m in (mk.pass_rate(0.5), mk.filled_count(), mk.weighted({"a": 1})):
        if m.name == "weighted":
            with pytest.raises(mk.MetricError, match="'a' is not a column"):
                m(scan)
            continue
        assert m(scan) == m(eager), m.name


def test_streamed_metrics_use_the_keys_that_occur_in_a_derived_frame():
    # A filtered lazy frame may lack a key its schema has; eager (and Harbor) leave such
    # a key out, so streaming must too (review finding).
    df = mk.read_rewards([{"a": 1}, {"b": 1}, {"a": 1, "b": 0.5}], backend="polars")
    lf = df.lazy().filter(pl.col("_line") == 1)
    for m in (mk.pass_rate(), mk.filled_count(), mk.pass_rate(0.5)):
        assert m(lf) == m(lf.collect()), m.name
    plain = pl.LazyFrame(
        {"x": [1.0, 0.0, 1.0], "y": [None, None, None]}, schema={"x": pl.Float64, "y": pl.Float64}
    )
    assert mk.pass_rate()(plain) == mk.pass_rate()(plain.collect())


def test_streamed_min_and_max_keep_a_nan_like_the_eager_ones(tmp_path):
    import narwhals as nw

    path = _write(tmp_path / "r.jsonl", ['{"a": 0, "b": 0}'] + ['{"a": 1, "b": 2}'] * 20_000)
    scan = mk.scan_rewards(path, chunk_bytes=4096)
    for agg in ("max", "min"):
        m = mk.metric("ratio", nw.col("a") / nw.col("b"), agg=agg)
        with pytest.raises(mk.MetricError, match="nan"):
            m(scan.collect())
        with pytest.raises(mk.MetricError, match="nan"):
            m(scan)
