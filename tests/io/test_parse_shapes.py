"""The vectorised parse path on the benchmark's file shapes and on its own edges: byte scans
cut into pieces, column groups, per-thread scratch buffers, long number tokens. Each is held
to the line-by-line json path, cell by cell (values bit for bit, kinds, statuses)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrickit.io import jsonl
from metrickit.io.jsonl import parse_fast, parse_slow

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from gen_rewards import SHAPES, generate


def _same(fast, slow) -> None:
    assert fast is not None
    assert sorted(fast.values) == sorted(slow.values)
    assert fast.status.tolist() == slow.status.tolist()
    for key in slow.values:
        assert fast.kinds[key].tolist() == slow.kinds[key].tolist(), key
        assert fast.values[key].view(np.int64).tolist() == slow.values[key].view(
            np.int64).tolist(), key


def _exact(data: bytes):
    slow, problems = parse_slow("t", data)
    assert not problems
    return slow


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_benchmark_shape_parses_as_json_does(tmp_path, shape):
    data = generate(tmp_path / "r.jsonl", 3000, seed=3, shape=shape).read_bytes()
    _same(parse_fast("t", data, dense_cells=10**7), _exact(data))


@pytest.mark.parametrize("shape", ["wide", "sparse", "latency"])
def test_small_scan_pieces_and_column_groups_change_nothing(tmp_path, monkeypatch, shape):
    # pieces of 64 bytes: every "." + "0" pair, exponent and digit run may straddle two
    data = generate(tmp_path / "r.jsonl", 500, seed=5, shape=shape).read_bytes()
    expected = _exact(data)
    monkeypatch.setattr(jsonl, "_SCAN_BYTES", 64)
    monkeypatch.setattr(jsonl, "_GROUP_CELLS", 7)
    _same(parse_fast("t", data, dense_cells=10**7), expected)


def test_the_byte_tables_need_no_other_module():
    # Dask workers and the streaming scan import the parse engine alone.
    code = (
        "from metrickit.io.jsonl import parse_fast\n"
        "p = parse_fast('t', b'{\"a\": 0.0}\\n{\"a\": 1}\\n{\"a\": 2.50}\\n')\n"
        "print(p.kinds['a'].tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["[2,", "1,", "2]"]


digits = st.text("0123456789", min_size=1, max_size=20)
long_tokens = st.one_of(
    st.tuples(digits, digits).map(lambda t: f"{int(t[0])}.{t[1]}"),
    st.tuples(digits, st.integers(0, 20)).map(lambda t: f"{int(t[0]) % 10**15}.{'0' * t[1]}0"),
    st.integers(-(2**53) + 1, 2**53 - 1).map(str),
    st.sampled_from(["1.0", "0.0", "-0.0", "1e5", "2.5E-3", "7", "-0"]),
)


@given(st.lists(st.dictionaries(st.sampled_from(["a", "b1234567890123456789", "c.0", "d"]),
                                long_tokens, max_size=4), min_size=1, max_size=40),
       st.sampled_from([16, 64, 1 << 20]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
def test_long_and_short_number_tokens_take_the_right_scan(monkeypatch, rows, piece):
    # tokens of up to 40 digits: the 15-digit shortcut must give way to the digit-by-digit
    # scan wherever a run of 17 digits or dots (token or key) appears
    text = "\n".join("{" + ", ".join(f'"{k}": {v}' for k, v in r.items()) + "}" for r in rows)
    data = (text + "\n").encode()
    slow, problems = parse_slow("t", data)
    assert not problems
    monkeypatch.setattr(jsonl, "_SCAN_BYTES", piece)
    fast = parse_fast("t", data)
    if fast is None:  # |x| >= 2**53 takes the exact path by design
        assert any(np.any(np.abs(v) >= 2.0**53) for v in slow.values.values())
        return
    _same(fast, slow)


def test_threads_parsing_at_once_keep_their_own_scratch(tmp_path):
    blocks = [generate(tmp_path / f"r{i}.jsonl", 3000, seed=i, shape=shape).read_bytes()
              for i, shape in enumerate(["wide", "latency", "mix", "long_keys"])]
    expected = [_exact(b) for b in blocks]
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(5):
                _same(parse_fast("t", blocks[i]), expected[i])
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(blocks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]
