"""Blocks parsed apart and merged into one frame's columns (issue #14): the fast path's
block columns are views of one matrix, merge_parts copies them into one matrix per dtype.
The result must be exactly the exact path's, cell by cell."""

from __future__ import annotations

import random

import numpy as np
import pytest

from metrickit._core.schema import Parsed, merge_parts
from metrickit._core.values import FLOAT, INT, MISSING
from metrickit.io.jsonl import parse_blocks, parse_fast, parse_slow
from metrickit.io.sources import split_blocks

VALUES = ["1", "1.0", "0", "-0", "-0.0", "2.5", "1e3", "1.5e2", "-3", "7.000", "0.25", "3E2"]


def _sparse_lines(seed: int, rows: int, keys: int, per_row: int) -> bytes:
    rng = random.Random(seed)
    names = [f"check_{i:03d}" for i in range(keys)]
    lines = []
    for _ in range(rows):
        r = rng.random()
        if r < 0.05:
            lines.append("null")
        elif r < 0.08:
            lines.append("{}")
        else:
            cells = rng.sample(names, per_row)
            lines.append("{" + ", ".join(f'"{k}": {rng.choice(VALUES)}' for k in cells) + "}")
    return ("\n".join(lines) + "\n").encode()


def _assert_same(got: Parsed, want: Parsed) -> None:
    assert sorted(got.values) == sorted(want.values)
    assert np.array_equal(got.lines, want.lines)
    assert np.array_equal(got.status, want.status)
    for key in want.values:
        assert np.array_equal(got.values[key], want.values[key]), key
        assert np.array_equal(np.signbit(got.values[key]), np.signbit(want.values[key])), key
        assert np.array_equal(got.kinds[key], want.kinds[key]), key


@pytest.mark.parametrize("seed", range(3))
def test_sparse_blocks_merge_to_the_exact_answer(seed: int) -> None:
    data = _sparse_lines(seed, rows=3000, keys=60, per_row=3)
    parts, problems = parse_blocks("x", split_blocks(data, 20_000), dense_cells=10**7)
    assert not problems and len(parts) > 3
    # every block took the fast path: its columns are views of the block's matrix
    assert all(column.base is not None for p in parts for column in p.values.values())
    want, _ = parse_slow("x", data)
    _, cols = merge_parts(parts)
    got = Parsed("x", cols["lines"], cols["status"], cols["values"], cols["kinds"])
    _assert_same(got, want)
    assert all(p.n == 0 and not p.values for p in parts)  # consumed


def test_one_dense_block_is_the_exact_answer() -> None:
    data = _sparse_lines(7, rows=2000, keys=40, per_row=3)
    fast = parse_fast("x", data, dense_cells=10**7)
    assert fast is not None  # the fast path took it
    want, _ = parse_slow("x", data)
    _assert_same(fast, want)


def test_merge_fills_keys_a_part_lacks() -> None:
    a = Parsed("a", np.array([1, 2]), np.array([0, 0], np.uint8),
               {"x": np.array([1.0, 2.5])}, {"x": np.array([INT, FLOAT], np.uint8)})
    b = Parsed("a", np.array([3]), np.array([0], np.uint8),
               {"y": np.array([-0.0])}, {"y": np.array([FLOAT], np.uint8)})
    keys, cols = merge_parts([a, b])
    assert keys == ["x", "y"]
    assert cols["lines"].tolist() == [1, 2, 3]
    assert cols["values"]["x"].tolist() == [1.0, 2.5, 0.0]
    assert cols["kinds"]["x"].tolist() == [INT, FLOAT, MISSING]
    assert cols["values"]["y"].tolist() == [0.0, 0.0, 0.0]
    assert np.signbit(cols["values"]["y"]).tolist() == [False, False, True]
    assert cols["kinds"]["y"].tolist() == [MISSING, MISSING, FLOAT]


def test_polars_reads_the_next_block_in_a_second_thread(monkeypatch) -> None:
    import threading

    import metrickit.io.jsonl as jsonl

    threads: list[str] = []
    read_fast = jsonl.read_fast

    def recording(*args: object, **kwargs: object) -> object:
        threads.append(threading.current_thread().name)
        return read_fast(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonl, "read_fast", recording)
    data = _sparse_lines(5, rows=3000, keys=6, per_row=3)
    blocks = list(split_blocks(data, 20_000))
    assert len(blocks) > 3
    got = list(jsonl.fast_blocks("x", blocks, dense_cells=10**7))
    assert [block for block, _, _ in got] == blocks  # in order
    assert all(parsed is not None for _, parsed, _ in got)
    # every block is read in the reading pool, while the caller's thread prepares the
    # blocks after it and checks the blocks before
    assert all(name.startswith("metrickit-read") for name in threads)
    assert len(threads) == len(blocks)
    threads.clear()
    (only,) = jsonl.fast_blocks("x", [blocks[0]], dense_cells=10**7)
    assert only[1] is not None and threads == [threading.current_thread().name]


def test_the_reads_of_the_next_blocks_are_under_way_while_one_is_checked(monkeypatch) -> None:
    import metrickit.io.jsonl as jsonl

    events: list[tuple[str, int]] = []
    index: dict[int, int] = {}  # id of a prepared block -> its position
    prepare_fast, check_fast = jsonl.prepare_fast, jsonl.check_fast

    def preparing(name: str, data: bytes, *, first: bool = True) -> object:
        position = sum(what == "prepare" for what, _ in events)
        events.append(("prepare", position))
        prepared = prepare_fast(name, data, first=first)
        assert isinstance(prepared, jsonl.FastBlock)  # every block takes the fast path
        index[id(prepared)] = position
        return prepared

    def checking(read: object) -> object:
        events.append(("check", index[id(read.block)]))  # type: ignore[attr-defined]
        return check_fast(read)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonl, "prepare_fast", preparing)
    monkeypatch.setattr(jsonl, "check_fast", checking)
    blocks = list(split_blocks(_sparse_lines(5, rows=3000, keys=6, per_row=3), 20_000))
    assert len(blocks) > 4
    list(jsonl.fast_blocks("x", blocks, dense_cells=10**7))
    ahead = 2
    # block k is checked once blocks k + 1 and k + 2 are prepared and handed to the pool
    # (with one block ahead, polars' pool waits while a block is checked)
    for k in range(len(blocks)):
        prepared = events.index(("prepare", min(k + ahead, len(blocks) - 1)))
        assert events.index(("check", k)) > prepared
    assert [i for what, i in events if what == "check"] == list(range(len(blocks)))


def test_an_error_in_the_reading_thread_reaches_the_caller(monkeypatch) -> None:
    import metrickit.io.jsonl as jsonl

    calls = []
    read_fast = jsonl.read_fast

    def failing(*args: object, **kwargs: object) -> object:
        calls.append(1)
        if len(calls) == 3:
            raise MemoryError("no room for block 3")
        return read_fast(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(jsonl, "read_fast", failing)
    blocks = list(split_blocks(_sparse_lines(6, rows=3000, keys=6, per_row=3), 20_000))
    seen = []
    with pytest.raises(MemoryError, match="block 3"):
        for block, _, _ in jsonl.fast_blocks("x", blocks, dense_cells=10**7):
            seen.append(block)
    assert seen == blocks[:2]


def test_blocks_read_ahead_mix_fast_and_exact_paths_in_order() -> None:
    # blank lines and a bad line send some blocks to the exact path while the next block
    # is already read: line numbers, statuses and problems stay those of one pass
    lines = _sparse_lines(7, rows=2000, keys=8, per_row=3).decode().split("\n")
    lines[500] = ""
    lines[1200] = '{"check_001": "x"}'
    data = "\n".join(lines).encode()
    parts, problems = parse_blocks("x", split_blocks(data, 8_000), dense_cells=10**7)
    assert len(parts) > 6
    want, want_problems = parse_slow("x", data)
    assert [(p.line, p.key) for p in problems] == [(p.line, p.key) for p in want_problems]
    assert [p.line for p in problems] == [1201]
    _, cols = merge_parts(parts)
    _assert_same(Parsed("x", cols["lines"], cols["status"], cols["values"], cols["kinds"]), want)


def test_mostly_missing_cells_take_the_present_cells_path(monkeypatch) -> None:
    # 3 of 60 keys a line: the checks work on the present cells alone (no rows x keys
    # conversion), and give the exact path's answer cell by cell
    import metrickit.io.jsonl as jsonl

    def no_dense(*args: object) -> None:
        raise AssertionError("the dense checks ran on a sparse block")

    monkeypatch.setattr(jsonl, "_dense_columns", no_dense)
    for seed in range(3):
        data = _sparse_lines(seed, rows=2000, keys=60, per_row=3)
        fast = parse_fast("x", data, dense_cells=10**7)
        assert fast is not None
        want, _ = parse_slow("x", data)
        _assert_same(fast, want)


@pytest.mark.parametrize(
    ("value", "valid"),
    [("9007199254740992", True), ("-9007199254740993", False), ("1e400", False),
     ("NaN", False), ("Infinity", False), ("-Infinity", False)],
)
def test_present_cells_path_leaves_huge_and_non_finite_values_to_the_exact_path(
    value: str, valid: bool
) -> None:
    lines = _sparse_lines(3, rows=500, keys=40, per_row=2).decode().split("\n")
    lines[250] = '{"check_007": ' + value + "}"
    data = "\n".join(lines).encode()
    assert parse_fast("x", data, dense_cells=10**7) is None
    parts, problems = parse_blocks("x", [data], dense_cells=10**7)
    if valid:  # 2**53 itself is within Harbor's range: the exact path reads it
        assert not problems and parts[0].values["check_007"][250] == 2.0**53
    else:
        assert [p.line for p in problems] == [251]


def test_present_cells_path_keeps_empty_rows_and_the_sign_of_zero() -> None:
    # rows of {} and null around the present cells, and -0 (the int 0) beside -0.0 (a
    # float that keeps its sign): statuses, kinds and values as the exact path has them
    lines = ["{}", "null", '{"a": 1, "b": 2.0}', "{}"] * 50 + ['{"c": -0}', '{"d": -0.0}']
    data = ("\n".join(lines) + "\n").encode()
    fast = parse_fast("x", data, dense_cells=10**7)
    assert fast is not None
    want, _ = parse_slow("x", data)
    _assert_same(fast, want)


def test_the_key_sample_is_one_json_array_and_a_line_split_across_it_still_fails() -> None:
    import metrickit as mk
    import metrickit.io.jsonl as jsonl

    lines = [b'{"b": 1, "a": 2.5}', b"null", b"{}", b'{"c": 0}']
    assert jsonl._sample_keys(b"\n".join(lines)) == ["a", "b", "c"]
    assert jsonl._sample_keys(b'{"a": 1}\n[1]\n') is None  # a line that is not an object
    assert jsonl._sample_keys(b'{"a": 1}\n{"a": \n') is None  # a line that is not JSON
    # Joined with commas these two lines are two valid objects, though neither line is
    # valid alone: the sample may steer by them, but the read must still refuse line 1.
    text = '{"a": 1\n"b": 2}, {"c": 3}\n' + '{"a": 1}\n' * 50
    frame, problems = mk.read_rewards(text, errors="report")
    assert [p.line for p in problems] == [1, 2]
    assert frame["_status"].tolist()[:3] == ["invalid", "invalid", "ok"]
