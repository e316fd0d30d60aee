"""Fuzzing the reward readers: every input ends in a correct frame or a RewardFileError
that names the file and the line; never a crash, a hang, a dropped row or a changed value.

The expected outcome comes from ``tests/reward_oracle.py`` (``json.loads`` per line, no
metrickit code). Example counts are kept modest so the suite stays quick; RELIABILITY.md
records how many ran.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import polars as pl
import pytest
from harbor_reference import harbor_aggregate
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from reward_oracle import Expected, check_frame, expect

import metrickit as mk
from metrickit.cli import main as cli_main
from metrickit.errors import RewardFileError

# METRICKIT_FUZZ_SCALE=10 runs ten times as many examples (a longer hunt; not for CI).
SCALE = int(os.environ.get("METRICKIT_FUZZ_SCALE", "1"))
FUZZ = settings(
    max_examples=150 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large],
)

# --- line generators -------------------------------------------------------------

keys = st.one_of(
    st.sampled_from(["reward", "a", "b", "correctness", "", " ", "é", "名前", "🙂", "a:b",
                     'q"uote', "back\\slash", "\x00", "_line", "_kind_a", "-0"]),
    st.text(max_size=6),
)
ints = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([2**53, -(2**53), 2**53 + 1, -(2**53) - 1, 2**63, 10**30]),
    st.integers(-(2**60), 2**60),
)
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-0.0, 5e-324, 1.7976931348623157e308, 0.1, 1e-7, 9007199254740993.0]),
)
values = st.one_of(ints, floats, st.booleans())
weird_values = st.sampled_from([
    "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "null", '"1"', "[1]", '{"x": 1}',
    "01", ".5", "1.", "+1", "0x10", "1e2", "1E+2", "-0", "-0.0", "true", "false",
    "9007199254740993", "-9007199254740993", "1" * 30, "1" * 5000, "1e-400",
    '"\\ud800"', "tru", "nul",
])


@st.composite
def object_line(draw: st.DrawFn) -> bytes:
    cells = draw(st.dictionaries(keys, values, max_size=4))
    sep = draw(st.sampled_from([(", ", ": "), (",", ":"), (" ,\t", " :  ")]))
    text = json.dumps(cells, separators=sep, ensure_ascii=draw(st.booleans()))
    return text.encode("utf-8", "surrogatepass")


@st.composite
def nasty_line(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 12))
    key = json.dumps(draw(keys))
    if kind == 0:
        return f'{{{key}: {draw(weird_values)}}}'.encode("utf-8", "surrogatepass")
    if kind == 1:  # a duplicated key, maybe spelled with an escape
        other = draw(st.sampled_from([key, '"\\u0061"' if key == '"a"' else key]))
        return f'{{{key}: 1, {other}: 2}}'.encode("utf-8", "surrogatepass")
    if kind == 2:  # truncated anywhere
        line = draw(object_line())
        return line[: draw(st.integers(0, max(len(line) - 1, 0)))]
    if kind == 3:  # invalid UTF-8 inside
        line = draw(object_line())
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"])) \
            + line[at:]
    if kind == 4:  # lone surrogate escapes as keys
        return draw(st.sampled_from([b'{"\\ud800": 1}', b'{"\\udfff": 0.5}',
                                     b'{"\\ud83d\\ude00": 1}', b'{"\\uD83D": 1, "a": 2}']))
    if kind == 5:  # deep nesting
        depth = draw(st.sampled_from([50, 2000, 100_000]))
        return draw(st.sampled_from([b"[" * depth, b'{"a": ' + b"[" * depth + b"]" * depth
                                     + b"}", b'{"a":' * depth]))
    if kind == 6:  # a very long line: many keys, one huge key, or 200 kB of whitespace
        return draw(st.sampled_from([
            json.dumps({f"k{i}": i for i in range(300)}).encode(),
            json.dumps({"x" * 100_000: 1}).encode(),
            b'{"a":' + b" " * 200_000 + b"0.25}",
        ]))
    if kind == 7:
        return draw(st.sampled_from([b"null", b"{}", b"[]", b"1", b'"x"', b"true", b"nul",
                                     b"{} {}", b'{"a": 1}{"b": 2}', b'{"a": 1,}', b"{'a': 1}",
                                     b"{a: 1}", b'{"a": 1} // c', b'\xef\xbb\xbf{"a": 1}',
                                     b"\x00", b'{"a":\x0b1}', b"\x0c", b'{"a": 1}\r']))
    if kind == 8:
        return draw(st.binary(max_size=40))
    if kind == 9:  # whitespace-only or padded lines
        pad = draw(st.sampled_from([b" ", b"\t", b"\r", b"  \t"]))
        return pad + draw(st.sampled_from([b"", draw(object_line())])) + pad
    return draw(object_line())


lines = st.lists(st.one_of(object_line(), nasty_line(), st.just(b"null"), st.just(b"")),
                 max_size=12)


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    body = draw(lines)
    # A prefix of valid lines puts what follows past polars' 200-line schema sample.
    prefix = [b'{"a": 1, "b": 0.5}'] * draw(st.sampled_from([0, 0, 210]))
    eol = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = eol.join(prefix + body)
    if draw(st.booleans()):
        data += eol
    if draw(st.integers(0, 4)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


def _line_of(message: str, name: str) -> int:
    match = re.match(re.escape(name) + r":(\d+): ", message)
    assert match, f"message does not start with {name}:<line>: {message[:200]!r}"
    return int(match.group(1))


def check_read(data: bytes, source: object, name: str, backend: str) -> None:
    expected = expect(data)
    try:
        frame = mk.read_rewards(source, backend=backend)  # type: ignore[arg-type, call-overload]
    except RewardFileError as exc:
        event("outcome: RewardFileError")
        message = str(exc)
        if expected.first_bad is None:
            clash = expected.clash()
            assert clash is not None and "clashes" in message and repr(clash) in message, message
            assert _line_of(message, name) == expected.clash_line()
            return
        assert _line_of(message, name) == expected.first_bad
        return
    event("outcome: frame")
    assert expected.first_bad is None, f"line {expected.first_bad} is bad but was accepted"
    assert expected.clash() is None
    check_frame(frame, expected)


# --- read_rewards --------------------------------------------------------------------


@settings(FUZZ, max_examples=300 * SCALE)
@given(payloads(), st.sampled_from(["pandas", "polars"]))
@example(b'{"a": 9007199254740993}\n', "polars")  # once read as 2**53 by the fast path
@example(b'{"a": 1}\n' * 250 + b'{"\\ud800": 1}\n', "polars")  # once renamed to "\x00"
@example(b'{"a": ' + b"1" * 5000 + b"}\n", "pandas")  # once a bare ValueError
@example(b'{"\xed\xa0\x80reward": 0}', "pandas")  # once a UnicodeEncodeError (polars schema)
@example(b"\xef\xbb\xbf" + b'{"a": 1}\r\n\r\nnull\r\n', "pandas")
def test_read_rewards_bytes(data: bytes, backend: str) -> None:
    check_read(data, data, "<bytes>", backend)


@FUZZ
@given(payloads(), st.sampled_from(["pandas", "polars"]))
def test_read_rewards_file_and_report(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                      backend: str) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "rewards with space.jsonl"
    path.write_bytes(data)
    check_read(data, path, str(path), backend)
    # errors="report": every non-blank line is a row, every bad line is listed once.
    expected = expect(data)
    if expected.clash() is not None:
        return
    frame, problems = mk.read_rewards(path, backend=backend, errors="report")  # type: ignore[arg-type]
    assert [p.line for p in problems] == expected.bad_lines
    assert all(p.source == str(path) for p in problems)
    check_frame(frame, expected, report=True)


@settings(max_examples=500 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=300), st.sampled_from(["pandas", "polars"]))
def test_read_rewards_arbitrary_bytes(data: bytes, backend: str) -> None:
    check_read(data, data, "<bytes>", backend)


# --- scan_rewards --------------------------------------------------------------------


@settings(FUZZ, max_examples=80 * SCALE)
@given(payloads(), st.sampled_from([64, 4096, 1 << 20]))
def test_scan_rewards_matches_oracle(tmp_path_factory: pytest.TempPathFactory, data: bytes,
                                     chunk: int) -> None:
    path = tmp_path_factory.mktemp("scan") / "r.jsonl"
    path.write_bytes(data)
    expected = expect(data)
    try:
        frame = mk.scan_rewards(path, chunk_bytes=chunk).collect()
    except RewardFileError as exc:
        event("outcome: RewardFileError")
        if expected.first_bad is None:
            assert expected.clash() is not None and "clashes" in str(exc)
            assert str(exc).startswith(f"{path}:")
            return
        assert _line_of(str(exc), str(path)) == expected.first_bad
        return
    event("outcome: frame")
    assert expected.first_bad is None and expected.clash() is None
    check_frame(frame, expected)


# --- the CLI, in process -------------------------------------------------------------


@settings(max_examples=60 * SCALE, deadline=None, suppress_health_check=list(HealthCheck))
@given(payloads(), st.sampled_from(["mean", "sum", "min", "max"]))
def test_cli_aggregate(tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str],
                       data: bytes, metric: str) -> None:
    folder = tmp_path_factory.mktemp("cli")
    src, out = folder / "in.jsonl", folder / "out.json"
    src.write_bytes(data)
    capsys.readouterr()
    code = cli_main(["aggregate", "-i", str(src), "-o", str(out), "--metric", metric])
    err = capsys.readouterr().err
    event(f"exit code {code}")
    expected = expect(data)
    rows = [r for r in expected.rows if r[1] != "invalid"]
    if expected.first_bad is not None:
        assert code == 1 and not out.exists()
        assert err.startswith(f"metrickit aggregate: error: {src}:{expected.first_bad}: ")
        return
    if expected.clash() is not None:
        # valid Harbor input that no frame can hold: the CLI (a drop-in metric.py) builds
        # no metadata columns and gives Harbor's answer
        assert code == 0, err
        typed = {"int": int, "float": float, "bool": bool}
        dicts = [None if status == "null" else {k: typed[kind](v) for k, (v, kind) in cells.items()}
                 for _, status, cells in rows]
        assert json.loads(out.read_text()) == harbor_aggregate(dicts, metric)
        return
    if not rows and metric in ("min", "max"):
        assert code == 1 and "metrickit aggregate: error:" in err and not out.exists()
        return
    assert code == 0, err
    assert json.loads(out.read_text()) == mk.aggregate(
        mk.read_rewards(src), metric)  # same numbers as the library


# --- a file that grows while it is read ------------------------------------------------


def _writer(path: Path, n: int, stop: threading.Event) -> None:
    with open(path, "ab", buffering=0) as fh:
        for i in range(n):
            line = json.dumps({"a": i, f"k{i % 7}": i / 7}).encode() + b"\n"
            cut = len(line) // 2
            fh.write(line[:cut])  # two writes, so a reader can see half a line
            fh.write(line[cut:])
            if i % 50 == 0:
                time.sleep(0.001)
            if stop.is_set():
                return


@pytest.mark.parametrize("reader", ["pandas", "polars", "scan"])
def test_file_appended_while_read(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "growing.jsonl"
    path.write_bytes(b"")
    stop = threading.Event()
    writer = threading.Thread(target=_writer, args=(path, 20_000, stop))
    writer.start()
    frames: list[object] = []
    errors: list[str] = []
    try:
        while writer.is_alive() and len(frames) + len(errors) < 40:
            try:
                if reader == "scan":
                    frames.append(mk.scan_rewards(path, chunk_bytes=4096).collect())
                else:
                    frames.append(mk.read_rewards(path, backend=reader))  # type: ignore[call-overload]
            except RewardFileError as exc:
                errors.append(str(exc))
    finally:
        stop.set()
        writer.join()
    final = expect(path.read_bytes())
    print(f"appended while read [{reader}]: {len(frames)} frame(s), {len(errors)} refusal(s), "
          f"final file {len(final.rows)} lines")
    assert final.first_bad is None and final.rows  # the writer only writes whole, valid lines
    assert frames or errors
    for frame in frames:
        # What was read is the final file's first rows, exactly: none dropped or changed.
        check_frame(frame, Expected(rows=final.rows[: len(frame)]))  # type: ignore[arg-type]
    for message in errors:
        # Only a half-written last line (or, for the scan, a key that arrived between its
        # schema pass and its data pass) is refused, named by file and line.
        line = _line_of(message, str(path))
        assert 1 <= line <= len(final.rows)
        assert "invalid JSON" in message or "was not in the file" in message, message


def test_scan_refuses_a_key_added_after_the_schema_pass(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n')
    scan = mk.scan_rewards(path)
    assert "a" in scan.collect_schema()
    with open(path, "a") as fh:
        fh.write('{"b": 5}\n')
    with pytest.raises(RewardFileError, match=re.escape(f"{path}:2: key 'b' was not in")):
        scan.collect()


def test_polars_frame_equals_pandas_frame_on_fuzz_corpus() -> None:
    # Spot check that the two backends agree on a mixed input (the oracle checks each).
    data = b'{"a": 1, "b": 0.5}\nnull\n{}\n{"b": true}\n'
    pd_frame = mk.read_rewards(data)
    pl_frame = mk.read_rewards(data, backend="polars")
    assert pl.from_pandas(pd_frame.astype({c: "string" for c in pd_frame.columns
                                           if str(pd_frame[c].dtype) == "category"})).rows() \
        == pl_frame.with_columns(pl.col(pl.Enum).cast(pl.String)).rows()
