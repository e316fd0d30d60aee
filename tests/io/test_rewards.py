"""read_rewards: loading, zero-fill, metadata, errors, backends."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit.io.jsonl import parse_fast, parse_slow

DATA_DIR = Path(__file__).resolve().parents[2] / "data"

SINGLE = '{"reward": 1}\n{"reward": 0}\nnull\n{"reward": 0}\n'


def _frames_equal(pdf: pd.DataFrame, pldf: pl.DataFrame) -> None:
    assert list(pdf.columns) == pldf.columns
    for col in pdf.columns:
        left = pdf[col].astype(object).tolist() if col.startswith("_") else pdf[col].tolist()
        right = (
            pldf[col].cast(pl.String).to_list()
            if col in ("_source", "_status") or col.startswith("_kind_")
            else pldf[col].to_list()
        )
        if col in ("_source", "_status") or col.startswith("_kind_"):
            left = [str(v) for v in left]
        assert left == right, col


def test_sample_files_load(data_dir):
    df = mk.read_rewards(data_dir / "rewards" / "multi_dim.jsonl")
    assert list(df.columns) == [
        "_source",
        "_line",
        "_status",
        "correctness",
        "style",
        "_kind_correctness",
        "_kind_style",
    ]
    assert df["correctness"].dtype == np.float64
    assert df["_status"].tolist() == ["ok", "ok", "null", "ok"]
    assert df["_line"].tolist() == [1, 2, 3, 4]
    assert df["style"].tolist() == [0.5, 1.0, 0.0, 0.5]
    assert df["_kind_style"].tolist() == ["float", "int", "missing", "float"]


def test_filled_zero_is_distinguishable_from_real_zero():
    df = mk.read_rewards('{"a": 0, "b": 1}\n{"b": 0}\n{}\nnull\n')
    mask = mk.filled_mask(df)
    assert mask["a"].tolist() == [False, True, True, True]
    assert mask["b"].tolist() == [False, False, True, True]
    assert df["a"].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert df["_status"].tolist() == ["ok", "ok", "empty", "null"]


def test_blank_lines_are_not_rows_but_keep_numbering(data_dir):
    df = mk.read_rewards(data_dir / "rewards" / "blank_and_bool.jsonl")
    assert df["_line"].tolist() == [1, 2, 4, 5, 7]
    assert df["reward"].tolist() == [1.0, 0.5, 1.0, 0.25, 0.0]
    assert df["_kind_reward"].tolist() == ["float", "float", "bool", "float", "bool"]


def test_sources_of_every_kind(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(SINGLE)
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(SINGLE.encode()))
    rows = [{"reward": 1}, {"reward": 0}, None, {"reward": 0}]
    frames = [
        mk.read_rewards(path),
        mk.read_rewards(str(path)),
        mk.read_rewards(gz),
        mk.read_rewards(SINGLE),
        mk.read_rewards(SINGLE.encode()),
        mk.read_rewards(io.StringIO(SINGLE)),
        mk.read_rewards(io.BytesIO(SINGLE.encode())),
        mk.read_rewards(rows),
        mk.read_rewards(iter(rows)),
    ]
    for frame in frames:
        assert frame["reward"].tolist() == [1.0, 0.0, 0.0, 0.0]
        assert mk.aggregate(frame) == {"mean": 0.25}


def test_many_files_and_globs(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1}\nnull\n')
    (tmp_path / "b.jsonl").write_text('{"y": 2}\n')
    df = mk.read_rewards([tmp_path / "a.jsonl", tmp_path / "b.jsonl"])
    assert df["_source"].astype(str).tolist() == [str(tmp_path / "a.jsonl")] * 2 + [
        str(tmp_path / "b.jsonl")
    ]
    assert df["_line"].tolist() == [1, 2, 1]
    assert df["x"].tolist() == [1.0, 0.0, 0.0]
    assert df["_kind_y"].tolist() == ["missing", "missing", "int"]
    globbed = mk.read_rewards(str(tmp_path / "*.jsonl"))
    assert len(globbed) == 3


def test_key_first_seen_late_is_a_column(tmp_path):
    path = tmp_path / "late.jsonl"
    n = 900_000
    lines = ['{"reward": 1}'] * (n - 1) + ['{"reward": 0, "late": 0.5}']
    path.write_text("\n".join(lines) + "\n")
    df = mk.read_rewards(path, backend="polars")
    assert df.height == n
    assert "late" in df.columns
    assert df["late"].sum() == 0.5
    assert df["_line"][-1] == n
    assert df["_kind_late"][-1] == "float"


BAD_LINES = [
    ('{"a": 1', "invalid JSON"),
    ('{"a": 1,}', "invalid JSON"),
    ("[1, 2]", "JSON list"),
    ("5", "JSON number"),
    ('"x"', "JSON string"),
    ("true", "JSON boolean"),
    ('{"a": "high"}', "'high' (str)"),
    ('{"a": {"b": 1}}', "{'b': 1} (object)"),
    ('{"a": [1]}', "(list)"),
    ('{"a": null}', "None (null)"),
    ('{"a": NaN}', "is NaN"),
    ('{"a": Infinity}', "is Infinity"),
    ('{"a": -Infinity}', "is -Infinity"),
    ('{"a": 1e400}', "inf"),
    ('{"a": 1, "a": 2}', "more than once"),
    ('{"a": 123456789012345678901}', "too large"),
]


@pytest.mark.parametrize(("line", "fragment"), BAD_LINES)
def test_bad_values_raise_with_file_line_key(tmp_path, line, fragment):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\nnull\n' + line + "\n")
    with pytest.raises(mk.RewardFileError) as info:
        mk.read_rewards(path)
    message = str(info.value)
    assert message.startswith(f"{path}:3: ")
    assert fragment in message
    assert "expected" in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, mk.MetrickitError)


def test_invalid_utf8(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a\xff": 1}\n')
    with pytest.raises(mk.RewardFileError, match=r"bad.jsonl:2: line is not valid UTF-8"):
        mk.read_rewards(path)


def test_report_mode_lists_every_problem_and_keeps_rows(tmp_path):
    path = tmp_path / "bad.jsonl"
    text = "\n".join(['{"a": 1}', '{"a": "x"}', "null", "[1]", '{"a": 0.5}', "{oops"]) + "\n"
    path.write_text(text)
    frame, problems = mk.read_rewards(path, errors="report")
    assert len(frame) == 6
    assert [p.line for p in problems] == [2, 4, 6]
    assert frame["_status"].tolist() == ["ok", "invalid", "null", "invalid", "ok", "invalid"]
    assert frame["a"].tolist() == [1.0, 0.0, 0.0, 0.0, 0.5, 0.0]
    assert problems[0].key == "a"
    with pytest.raises(mk.AggregationError, match="invalid row"):
        mk.aggregate(frame)
    clean = frame[frame["_status"] != "invalid"]
    assert mk.aggregate(clean) == {"mean": 0.5}


def test_raise_mode_counts_the_rest(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": "x"}\n{"a": "y"}\n')
    with pytest.raises(mk.RewardFileError, match="1 more problem"):
        mk.read_rewards(path)


def test_bad_rows_in_memory():
    with pytest.raises(mk.RewardFileError, match=r"<rows>:2: value of 'r' is '1'"):
        mk.read_rewards([{"r": 1}, {"r": "1"}])


def test_key_clash_with_metadata():
    with pytest.raises(mk.RewardFileError, match="clashes"):
        mk.read_rewards('{"_line": 1}\n')


def test_bom_and_crlf():
    df = mk.read_rewards(b'\xef\xbb\xbf{"a": 1}\r\nnull\r\n{"a": 0.5}\r\n')
    assert df["a"].tolist() == [1.0, 0.0, 0.5]
    assert df["_status"].tolist() == ["ok", "null", "ok"]


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(mk.RewardFileError, match="no such file"):
        mk.read_rewards(tmp_path / "nope.jsonl")


# -- property tests ----------------------------------------------------------

keys = st.sampled_from(["a", "b", "reward", "stil", "ключ", "x:y", "nullable", "", "^k$", "a|b"])
values = st.one_of(
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.booleans(),
    st.sampled_from([0, 1, 0.5, 1.0, -0.0]),
)
row = st.one_of(st.none(), st.dictionaries(keys, values, max_size=4))


def _dump(rows, style):
    out = []
    for r in rows:
        if style == 0:
            out.append(json.dumps(r))
        else:
            out.append(json.dumps(r, separators=(",", ":")))
    return "\n".join(out) + ("\n" if style else "")


@pytest.mark.slow
@given(st.lists(row, max_size=40), st.integers(0, 1))
@example([None, None], 0)
@example([{}, None, {"a": 1}], 1)
@example([None, {"a": 1, "b": 0.5}, {"b": 1}], 0)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_properties_rows_lines_backends_and_paths_agree(rows, style):
    text = _dump(rows, style)
    source = text or b""  # a blank string is refused (an unset path?); no rows are b""
    pdf = mk.read_rewards(source)
    pldf = mk.read_rewards(source, backend="polars")
    # rows == non-blank lines
    assert len(pdf) == len(rows) == pldf.height
    assert pdf["_line"].tolist() == list(range(1, len(rows) + 1))
    _frames_equal(pdf, pldf)
    # the fast (polars) path, where it applies, equals the exact line-by-line path
    fast = parse_fast("t", text.encode())
    slow, problems = parse_slow("t", text.encode())
    assert not problems
    if fast is not None:
        assert sorted(fast.values) == sorted(slow.values)
        for key in slow.values:
            # repr, not ==: -0.0 == 0.0 would hide a sign the int/float rules care about
            assert [repr(v) for v in fast.values[key]] == [repr(v) for v in slow.values[key]]
            assert fast.kinds[key].tolist() == slow.kinds[key].tolist()
        assert fast.status.tolist() == slow.status.tolist()
    # zero fill: every missing cell is 0 and marked missing
    for key in mk.reward_keys(pdf):
        missing = pdf[mk.kind_column(key)] == "missing"
        assert (pdf.loc[missing, key] == 0).all()


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": 0.5}\n{"a": 0.25, "b": 2}\n',  # short fractions: ints found by value
        '{"a": 1, "b": 0.5}\n{"a": 1.0, "b": 2}\n',  # "1.0" is a float token
        '{"a": 1e2}\n{"a": 100}\n',  # exponent: a float with an integral value
        '{"a": 1.00000000000000001}\n{"a": 1}\n',  # long fraction rounds to 1.0
        '{"a": 0.30000000000000004}\n{"a": 3}\n',
        '{"v1.0": 2, "a": 0.5}\n',  # a dot in a key
        '{"a": -0}\n{"a": -0.0}\n',
        # ints near 2**53 beside fractions: the byte proof does not hold, an Int64 read does
        f'{{"a": {2**53 - 1}}}\n{{"a": {-(2**53 - 1)}}}\n{{"a": 0.5}}\n{{"a": 1.0}}\n',
    ],
)
def test_int_float_kinds_fast_path_equals_exact_path(text):
    fast = parse_fast("t", text.encode())
    slow, problems = parse_slow("t", text.encode())
    assert not problems and fast is not None
    for key in slow.values:
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist(), key
        assert [repr(v) for v in fast.values[key]] == [repr(v) for v in slow.values[key]]


# --- int/float kinds from the value tokens' bytes ------------------------------------

token_keys = st.sampled_from(["a", "speed_ms", "v1.0", "x.y", "1e3", "e", "E5", "k 1", "ключ",
                              "long_key_name_with_many_bytes_" * 2, "", "0.0"])
tokens = st.one_of(
    st.integers(-(2**53), 2**53).map(str),
    st.sampled_from(["0", "-0", "1", "1262", str(2**53), str(-(2**53)), str(2**53 - 1)]),
    st.sampled_from(["1262.0", "1262.000", "-0.0", "0.0", "1.0", "1e3", "1E+2", "1e-0",
                     "1.5e1", "-2.5E+1", "12.50", "1.00000000000000001", "0.30000000000000004",
                     "4503599627370495.5", "9007199254740993.0", "1e15", "123456789012345.0",
                     "0.1", "2.5", "1262.37", "5e-324", "1.7976931348623157e308"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.tuples(st.integers(-10**6, 10**6), st.integers(0, 3)).map(
        lambda t: f"{t[0]}.{'0' * t[1] or '0'}"),
)
spacing = st.sampled_from([('": ', ", "), ('":', ","), ('" : ', " , "), ('":\t', ",\t")])


@st.composite
def token_file(draw):
    colon, comma = draw(spacing)
    lines = []
    for _ in range(draw(st.integers(1, 30))):
        if draw(st.integers(0, 9)) == 0:
            lines.append("null")
            continue
        cells = draw(st.dictionaries(token_keys, tokens, max_size=5))
        lines.append("{" + comma.join(f'"{k}{colon}{v}' for k, v in cells.items()) + "}")
    return "\n".join(lines) + "\n"


def _same_as_exact(text: str, *, fast_path: bool = True) -> None:
    fast = parse_fast("t", text.encode())
    slow, problems = parse_slow("t", text.encode())
    assert not problems
    if fast is None:  # |x| >= 2**53 takes the exact path by design
        assert not fast_path or any(np.any(np.abs(v) >= 2.0**53) for v in slow.values.values())
        return
    assert sorted(fast.values) == sorted(slow.values)
    for key in slow.values:
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist(), key
        # bit for bit: -0.0 and 0.0 differ here
        assert fast.values[key].view(np.int64).tolist() == slow.values[key].view(
            np.int64).tolist(), key


@given(token_file())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_token_bytes_give_the_kinds_and_values_of_json(text):
    _same_as_exact(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"speed_ms": 1262.0, "a": 1}\n{"speed_ms": 1262, "a": 1.0}\n{"speed_ms": 0.5}\n',
        '{"a": -0.0}\n{"a": -0}\n{"a": 0.0}\n{"a": 0}\n',
        '{"a": 1e3}\n{"a": 1E+2}\n{"a": 1000}\n{"a": 1.5e1, "b": 15}\n',
        f'{{"a": {2**40 + 1}}}\n{{"a": {-(2**40)}.0}}\n{{"a": 0.5}}\n{{"a": 1.0}}\n',
        '{"v1.0": 2, "x.y": 2.0, "1e3": 3}\n{"v1.0": 2.0, "x.y": 2, "1e3": 3e0}\n',
        '{"a" : 7.0 , "b":7}\n{"a":7,"b":\t7.0}\n',
        '{"0.0": 1.0, "e": 1}\n{"e": 1.0, "0.0": 1}\n',
    ],
)
def test_integral_float_tokens_are_told_from_ints_without_json(text, monkeypatch):
    from metrickit.io import jsonl as R

    found = []
    real = R._float_token_cells

    def spy(*args):
        found.append(real(*args))
        return found[-1]

    monkeypatch.setattr(R, "_float_token_cells", spy)
    monkeypatch.setattr(R, "_MAX_MARKED", -1)  # no json for marked rows: bytes or Int64
    _same_as_exact(text)
    assert found and found[-1] is not None


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ('{"a": "12:30"}', "value of 'a' is '12:30' (str)"),
        ('{"a": "1.0"}', "value of 'a' is '1.0' (str)"),
        ('{"a": {"b": 1.0}}', "(object)"),
        ('{"a": [1.0, 2]}', "(list)"),
        ('{"a": 1, "b": {"c": 1e3}}', "value of 'b'"),
    ],
)
@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_strings_and_nested_values_are_refused_with_file_and_line(
    tmp_path, line, fragment, backend
):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1262.0}\n' * 3 + line + "\n" + '{"a": 1}\n')
    with pytest.raises(mk.RewardFileError, match=r"r\.jsonl:4: ") as info:
        mk.read_rewards(path, backend=backend)
    assert fragment in str(info.value)
    with pytest.raises(mk.RewardFileError, match=r"r\.jsonl:4: "):
        mk.aggregate(str(path))


@pytest.mark.parametrize(
    "name", [*sorted(p.name for p in (DATA_DIR / "rewards").glob("*.jsonl")), "runs/*.jsonl"]
)
def test_backends_agree_on_every_sample(data_dir, name):
    path = str(data_dir / "rewards" / name)
    pdf, pldf = mk.read_rewards(path), mk.read_rewards(path, backend="polars")
    _frames_equal(pdf, pldf)
    assert mk.aggregate(pdf) == mk.aggregate(pldf)


def test_many_integral_float_tokens_fall_back_to_a_second_read(tmp_path):
    # Past 20,000 rows with "1.0"-style tokens the fast path reads the file again with an
    # Int64 schema instead of json-reading those rows; both must give the exact kinds.
    from metrickit.io import jsonl as R

    lines = [f'{{"a": {i % 3}.0, "b": {i % 2}, "c": 0.25}}' for i in range(R._MAX_MARKED + 500)]
    data = ("\n".join(lines) + "\n").encode()
    fast = parse_fast("t", data)
    slow, problems = parse_slow("t", data)
    assert fast is not None and not problems
    for key in ("a", "b", "c"):
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist(), key
    assert set(fast.kinds["a"].tolist()) == {R.FLOAT}
    assert set(fast.kinds["b"].tolist()) == {R.INT}


# --- block-wise parsing ------------------------------------------------------------------


def _exact(text: str, *, bad_lines: int = 0):
    """The frame the line-by-line path alone gives (the reference for the block path)."""
    from metrickit._core.schema import to_frame

    parsed, problems = parse_slow("<text>", text.encode())
    assert len(problems) == bad_lines
    return to_frame([parsed])


@pytest.mark.slow
@given(st.lists(row, max_size=60), st.integers(0, 1), st.integers(8, 200))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_block_size_gives_the_exact_frame(rows, style, block):
    # Files are parsed in blocks cut at newlines; whatever the cut points, the frame
    # (line numbers, statuses, keys that first appear in a later block, kinds) is the
    # one the line-by-line path gives for the whole text.
    from metrickit.io import sources as R

    text = _dump(rows, style)
    old = R.BLOCK_BYTES
    R.BLOCK_BYTES = block
    try:
        got = mk.read_rewards(text or "\n")  # a blank string is refused (an unset path?)
    finally:
        R.BLOCK_BYTES = old
    pd.testing.assert_frame_equal(got, _exact(text))


def test_blocks_number_lines_across_cuts_and_report_absolute_lines(tmp_path, monkeypatch):
    from metrickit.io import sources as R

    monkeypatch.setattr(R, "BLOCK_BYTES", 64)
    lines = [json.dumps({"a": i % 2}) for i in range(40)]
    lines[5] = ""  # a blank line in an early block still counts for numbering
    lines[31] = json.dumps({"a": 0.5, "late": 1})  # a key first seen in a late block
    lines[33] = '{"a": "x"}'  # a bad value far from the start
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(mk.RewardFileError, match=r"r\.jsonl:34: value of 'a' is 'x'"):
        mk.read_rewards(path)
    with pytest.raises(mk.RewardFileError, match=r"r\.jsonl:34: value of 'a' is 'x'"):
        mk.aggregate(path)  # streams the blocks: no frame
    lines[33] = json.dumps({"a": 1})
    path.write_text("\n".join(lines) + "\n")
    assert mk.aggregate(path) == mk.aggregate(mk.read_rewards(path))
    lines[33] = '{"a": "x"}'
    path.write_text("\n".join(lines) + "\n")
    df, problems = mk.read_rewards(path, errors="report")
    assert [p.line for p in problems] == [34]
    assert len(df) == 39 and df["_line"].tolist() == [*range(1, 6), *range(7, 41)]
    assert df.loc[df["_line"] == 32, "late"].tolist() == [1.0]
    assert (df.loc[df["_line"] != 32, "_kind_late"] == "missing").all()
    pd.testing.assert_frame_equal(
        df.drop(columns="_source"),
        _exact(path.read_text(), bad_lines=1).drop(columns="_source"),
        check_dtype=False,
    )


def test_iter_blocks_cuts_after_newlines_and_keeps_long_lines_whole(tmp_path):
    from metrickit.io.sources import iter_blocks

    long_line = json.dumps({f"k{i}": i for i in range(200)})  # longer than a block
    text = "\n".join([long_line, '{"a": 1}', "null", long_line, '{"a": 0.5}'])
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    blocks = list(iter_blocks(path, 100))
    assert b"".join(blocks) == text.encode()
    assert all(b.endswith(b"\n") for b in blocks[:-1])
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert b"".join(iter_blocks(gz, 7)) == text.encode()


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("last_newline", [False, True])
def test_iter_blocks_gives_each_long_line_whole_once(tmp_path, gz, last_newline):
    from metrickit.io.sources import iter_blocks

    long_line = json.dumps({f"k{i}": i for i in range(60)})
    lines = ['{"a": 1}', long_line, long_line, "null", '{"a": 0.5}', long_line]
    text = "\n".join(lines) + ("\n" if last_newline else "")
    path = tmp_path / ("r.jsonl.gz" if gz else "r.jsonl")
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    for size in (5, 16, 100, 1000):
        blocks = list(iter_blocks(path, size))
        assert b"".join(blocks) == text.encode()
        assert all(b.endswith(b"\n") for b in blocks[:-1])


def test_long_lines_are_stripped_and_numbered_as_short_ones(monkeypatch):
    from metrickit.io import jsonl as R

    text = ('{"a": 1}\n  {"a": 0.5, "b": 2}\t\r\n\n null \n{"a": "' + "x" * 50
            + '"}\n \t \n{"b": 1e3}')
    short = [bytes(x) for x in R._stripped_lines(text.encode())]
    monkeypatch.setattr(R, "LONG_LINE", 4)
    long = [bytes(x) for x in R._stripped_lines(text.encode())]
    assert long == short == [line.strip(b" \t\r\n") for line in text.encode().split(b"\n")]
    rows, problems = R.parse_slow("t", text.encode())
    assert rows.lines.tolist() == [1, 2, 4, 5, 7]
    assert [p.line for p in problems] == [5]


@pytest.mark.parametrize("shape", ["string", "number"])
def test_a_very_long_line_is_read_in_a_small_multiple_of_its_size(tmp_path, shape):
    # A 30 MB line: peaks were ~7x the line (copies while reading, polars' reader, a
    # split, a repr of the bad value); json.loads itself needs about 2x.
    path = tmp_path / "long.jsonl"
    size = 30_000_000
    body = '"' + "x" * size + '"' if shape == "string" else "0." + "1" * size
    path.write_text('{"a": ' + body + "}\n")
    probe = f"""
import resource, metrickit as mk, pandas, polars
def rss(): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
mk.read_rewards('{{"a": 1}}\\n')  # imports, warm
before = rss()
for call in (lambda: mk.read_rewards({str(path)!r}), lambda: mk.aggregate({str(path)!r}),
             lambda: mk.read_rewards({str(path)!r}, backend="polars")):
    try:
        call()
    except mk.RewardFileError as exc:
        assert ":1: value of 'a' is 'xxx" in str(exc), exc
print(int(rss() - before))
"""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    growth_mb = int(proc.stdout.strip())
    assert growth_mb < 4.5 * size / 1e6, growth_mb  # was ~200 MB; json.loads: ~60 MB


@pytest.mark.parametrize("late", ["late", "a.b", "^z$"])
def test_keys_past_the_sample_are_read_by_polars_too(late):
    # Keys first seen after the sampled lines: json reads only the lines that have them,
    # and polars reads just their columns; a duplicate or null value there is refused.
    rows = [f'{{"a": {i % 3}, "b": {i % 7}.5}}' for i in range(2500)]
    rows += [f'{{"a": 1.0, "{late}": {i}.0, "k{i % 40}": {i}}}' for i in range(600)]
    text = "\n".join(rows) + "\n"
    fast = parse_fast("t", text.encode(), dense_cells=10**7)
    assert fast is not None and late in fast.values and "k39" in fast.values
    _same_as_exact(text)  # without dense_cells: the frame's keys are the same
    slow, _ = parse_slow("t", text.encode())
    for key in slow.values:
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist(), key
        assert fast.values[key].tolist() == slow.values[key].tolist(), key
    for bad in ('{"a": 1, "late2": 2, "late2": 3}', '{"a": 1, "late2": null}'):
        assert parse_fast("t", (text + bad + "\n").encode(), dense_cells=10**7) is None


def test_one_key_per_line_stays_on_the_exact_path():
    text = "".join(f'{{"key_{i}": 1}}\n' for i in range(5000))
    assert parse_fast("t", text.encode(), dense_cells=10**6) is None


def test_byte_order_mark_counts_only_at_the_start_of_the_file(monkeypatch):
    from metrickit.io import sources as R

    monkeypatch.setattr(R, "BLOCK_BYTES", 16)
    text = "\ufeff" + '{"a": 1}\n{"a": 2}\n{"a": 3}\n'
    assert mk.read_rewards(text.encode())["a"].tolist() == [1.0, 2.0, 3.0]
    inner = '{"a": 1}\n{"a": 2}\n' + "\ufeff" + '{"a": 3}\n'
    with pytest.raises(mk.RewardFileError, match=r":3: "):
        mk.read_rewards(inner.encode())


def test_long_lines_still_take_the_fast_path():
    # 600-byte lines: the 64 kB key sample ends inside a line, which must not send the
    # whole block to the line-by-line path (it did: the cut line failed json.loads).
    from metrickit.io.jsonl import parse_fast

    rows = [{f"key_{k:02d}": (i * k) % 7 / 8 for k in range(40)} for i in range(400)]
    text = "\n".join(json.dumps(r) for r in rows) + "\n"
    assert len(text) / len(rows) > 400  # 200 lines > 64 kB
    fast = parse_fast("t", text.encode())
    assert fast is not None
    slow, problems = parse_slow("t", text.encode())
    assert not problems
    for key in slow.values:
        assert fast.values[key].tolist() == slow.values[key].tolist()
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist()


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_keys_that_look_like_polars_regexes(backend, tmp_path):
    # polars reads pl.col("^a$") as a regex and runs Series methods as expressions on the
    # Series' name: such a key once crashed the fast path with an IndexError.
    text = '{"^a$": 1, "a": 0.5, "": 2, "*": 3, "a|b": 1.0}\nnull\n{"^a$": 2.5}\n'
    df = mk.read_rewards(text, backend=backend)
    expected = {"": 2 / 3, "*": 1.0, "^a$": 3.5 / 3, "a": 0.5 / 3, "a|b": 1 / 3}
    assert mk.aggregate(df) == pytest.approx(expected)
    assert list(mk.reward_keys(df)) == ["", "*", "^a$", "a", "a|b"]
    path = tmp_path / "r.jsonl"
    path.write_text(text)
    assert mk.aggregate(mk.scan_rewards(path)) == mk.aggregate(df)


# ---------------------------------------------------------------------------
# Sources that are not what they seem
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["", "   "])
def test_a_blank_string_is_refused_not_read_as_no_rows(source):
    # An unset path variable: aggregate("") used to answer {"mean": 0}.
    with pytest.raises(mk.RewardFileError, match="blank string is neither a path nor JSONL"):
        mk.aggregate(source)
    with pytest.raises(mk.RewardFileError, match="blank string"):
        mk.read_rewards(source, backend="polars")
    assert len(mk.read_rewards("\n")) == 0  # text with its lines: no rows, as before


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_a_missing_path_that_starts_like_json_is_a_missing_file(tmp_path, backend):
    # '{run}/rewards.jsonl' used to be parsed as JSON text ("<text>:1: invalid JSON").
    with pytest.raises(mk.RewardFileError) as info:
        mk.read_rewards("{run}/rewards.jsonl", backend=backend)
    assert str(info.value).startswith("{run}/rewards.jsonl: no such file (read as a path")
    with pytest.raises(mk.RewardFileError, match="no such file"):
        mk.aggregate("{run}/rewards.jsonl")
    # the same name, existing, is read as the file; one line of valid JSON is text
    folder = tmp_path / "{run}"
    folder.mkdir()
    (folder / "rewards.jsonl").write_text('{"r": 1}\n{"r": 0}\n')
    assert mk.aggregate(str(folder / "rewards.jsonl")) == {"mean": 0.5}
    assert mk.aggregate('{"r": 1}') == {"mean": 1.0}
    with pytest.raises(mk.RewardFileError, match=r"^\[run\]\*\.jsonl: no such file \(read as"):
        mk.read_rewards("[run]*.jsonl")  # a glob pattern that matches nothing


@pytest.mark.parametrize("make", [
    lambda: pd.DataFrame({"reward": [1.0]}),
    lambda: pl.DataFrame({"reward": [1.0]}),
    lambda: pl.LazyFrame({"reward": [1.0]}),
    lambda: mk.read_rewards('{"reward": 1}\n'),
])
def test_a_frame_given_to_read_rewards_says_frames_are_not_read(make):
    # It was iterated as column names, read as paths: "reward: no such file".
    with pytest.raises(mk.RewardFileError) as info:
        mk.read_rewards(make())
    message = str(info.value)
    assert "DataFrame" in message or "LazyFrame" in message
    assert "not frames" in message and "pass it to aggregate()" in message


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_reported_problems_carry_the_bad_value(backend):
    text = '{"a": 1}\n{"a": "high"}\n{"a": NaN}\n{"a": [1, 2]}\n{"a": 1e400}\n'
    _, problems = mk.read_rewards(text, backend=backend, errors="report")
    assert [(p.line, p.key, p.value) for p in problems] == [
        (2, "a", "'high'"), (3, "a", "NaN"), (4, "a", "[1, 2]"), (5, "a", "inf")]
