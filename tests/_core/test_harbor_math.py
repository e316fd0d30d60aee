"""metrickit's vectorised Harbor arithmetic against real CPython >= 3.12 results."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from harbor_reference import harbor_sum_py
from hypothesis import example, given, settings
from hypothesis import strategies as st

from metrickit._core.harbor_math import harbor_max, harbor_mean, harbor_min, harbor_sum

GOLDEN = json.loads((Path(__file__).parents[1] / "data" / "harbor_sum_golden.json").read_text())


def _arrays(values):
    return (
        np.array([float(v) for v in values], dtype=np.float64),
        np.array([isinstance(v, int) for v in values], dtype=np.bool_),
    )


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: str(len(c["values"])))
def test_matches_python312_golden(case):
    values, is_int = _arrays(case["values"])
    assert repr(harbor_sum(values, is_int)) == case["sum"]
    assert repr(harbor_min(values, is_int)) == case["min"]
    assert repr(harbor_max(values, is_int)) == case["max"]
    # the plain-Python reference used by other tests agrees as well
    assert repr(harbor_sum_py(case["values"])) == case["sum"]


def test_compensation_examples_from_the_issue():
    # Python >= 3.12: floats are compensated ...
    assert harbor_sum(*_arrays([1e16, 1.0, -1e16])) == 1.0
    # ... but an int met after the first float is added without compensation.
    assert harbor_sum(*_arrays([1e16, 1, -1e16])) == 0.0
    assert harbor_sum(*_arrays([0.1] * 10)) == 1.0
    assert sum([0.1] * 10) != 1.0 or math.isclose(sum([0.1] * 10), 1.0)  # 3.11 differs


def test_int_sums_stay_exact_ints():
    total = harbor_sum(*_arrays([2**53, 1, 1, -3]))
    assert isinstance(total, int)
    assert total == 2**53 - 1


def test_empty():
    empty = np.zeros(0)
    assert harbor_sum(empty, empty.astype(bool)) == 0
    with pytest.raises(ValueError):
        harbor_min(empty, empty.astype(bool))
    with pytest.raises(ZeroDivisionError):
        harbor_mean(empty, empty.astype(bool))


numbers = st.one_of(
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, 0.5, 1.0, 1e16, -1e16, 0.1]),
)


@given(st.lists(numbers, max_size=60))
@example([1e16, 1, -1e16])
@example([1, 1e16, -1e16])
@example([1.7e308, 1.7e308, -1.7e308])
@example([-0.0])
@example([0, -0.0])
@settings(max_examples=400, deadline=None)
def test_vectorised_equals_python_reference(values):
    v, i = _arrays(values)
    expected = harbor_sum_py(values)
    got = harbor_sum(v, i)
    assert repr(got) == repr(expected)
    if values:
        assert repr(harbor_min(v, i)) == repr(min(values))
        assert repr(harbor_max(v, i)) == repr(max(values))


def _python312() -> str | None:
    """A working Python 3.12/3.13 (pyenv shims may exist without a usable version)."""
    candidates = [str(p) for p in sorted(Path.home().glob(".pyenv/versions/3.1[23]*/bin/python"))]
    candidates += [c for c in (shutil.which("python3.12"), shutil.which("python3.13")) if c]
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True,
            text=True,
        )
        if probe.returncode == 0 and probe.stdout.strip() in ("(3, 12)", "(3, 13)"):
            return candidate
    return None


@pytest.mark.skipif(
    _python312() is None, reason="no Python >= 3.12 here; the golden corpus covers it"
)
def test_against_live_python312():
    rng = np.random.default_rng(5)
    cases = []
    for _ in range(300):
        n = int(rng.integers(1, 50))
        row = [
            int(rng.integers(-5, 5))
            if rng.random() < 0.4
            else float(rng.normal() * 10.0 ** int(rng.integers(-3, 17)))
            for _ in range(n)
        ]
        cases.append(row)
    out = subprocess.run(
        [
            _python312(),
            "-c",
            "import json,sys; print(json.dumps([repr(sum(r)) for r in json.load(sys.stdin)]))",
        ],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for row, expected in zip(cases, json.loads(out), strict=True):
        assert repr(harbor_sum(*_arrays(row))) == expected


GOLDEN_LARGE = json.loads(
    (Path(__file__).parents[1] / "data" / "harbor_sum_golden_large.json").read_text()
)


@pytest.mark.slow
@pytest.mark.parametrize("case", GOLDEN_LARGE["cases"], ids=lambda c: f"{c['style']}-{c['n']}")
def test_long_columns_match_python312_golden(case):
    # Long enough to run through many of phase 3's cache-sized pieces and through the
    # order-independence proof for the compensation (or its fallback).
    from harbor_reference import large_case

    values = large_case(case["seed"], case["n"], case["style"])
    assert repr(harbor_sum(*_arrays(values))) == case["sum"]
    assert repr(harbor_sum_py(values)) == case["sum"]


@pytest.mark.parametrize("style", ["rewards", "wide", "cancel"])
@pytest.mark.parametrize("seed", range(4))
def test_proven_shortcut_equals_cpython_order(style, seed, monkeypatch):
    # harbor_sum first sums the compensation in numpy's order and keeps it only when an
    # error bound proves CPython's order gives the same bits; else it redoes it in
    # CPython's order. Both must equal the reference, and on reward-like data the
    # shortcut must actually be taken (or it would be dead code).
    from harbor_reference import large_case

    import metrickit._core.harbor_math as hm

    values = large_case(100 + seed, 40_000 + 7_919 * seed, style)
    v, i = _arrays(values)
    expected = repr(harbor_sum_py(values))
    settled = []
    original = hm._settle

    def spy(*args):
        result = original(*args)
        settled.append(result is not None)
        return result

    monkeypatch.setattr(hm, "_settle", spy)
    assert repr(harbor_sum(v, i)) == expected
    monkeypatch.setattr(hm, "_settle", lambda *args: None)  # always CPython's order
    assert repr(harbor_sum(v, i)) == expected
    if style == "rewards":
        assert settled == [True]


def test_settle_refuses_when_the_order_could_matter():
    # running + c sits on a rounding tie: any uncertainty in c must send it back.
    running = 1.0
    half_ulp = 2.0**-53
    from metrickit._core.harbor_math import _settle

    assert _settle(running, half_ulp, 1e-20, 10) is None
    assert _settle(running, 0.25, 1e-30, 10) == 1.25
    assert _settle(0.0, 0.25, 0.0, 10) is None  # zero running sums keep their sign rules
    assert _settle(running, math.nan, 1.0, 10) is None


@pytest.mark.parametrize("pieces", [1, 2, 3, 7])
def test_sums_of_several_columns_on_a_pool_equal_one_by_one(pieces):
    from concurrent.futures import ThreadPoolExecutor

    from harbor_reference import large_case

    from metrickit._core.harbor_math import harbor_sums

    columns = [
        _arrays(large_case(7, 30_000, "rewards")),
        _arrays(large_case(8, 20_000, "wide")),
        _arrays(large_case(9, 10_000, "cancel")),
        _arrays([1, 2, 3]),  # ints only: an exact int
        _arrays([]),
        _arrays([0.5]),
    ]
    with ThreadPoolExecutor(2) as pool:
        got = harbor_sums(columns, pool, pieces=pieces)
    assert [repr(g) for g in got] == [repr(harbor_sum(v, i)) for v, i in columns]
    assert [repr(g) for g in got[:3]] == [
        repr(harbor_sum_py(large_case(*args)))
        for args in [(7, 30_000, "rewards"), (8, 20_000, "wide"), (9, 10_000, "cancel")]
    ]


@pytest.mark.slow
def test_aggregate_called_from_the_pool_itself_does_not_wait_on_it():
    # A metric computed inside one of aggregate's own threads must not queue work behind
    # itself (that could starve the pool): it sums in its own thread instead.
    import metrickit as mk
    from metrickit.compute.aggregate import _pool

    rows = [{"a": i % 2, "b": (i % 7) / 4, "c": 0.1} for i in range(150_000)]
    frame = mk.read_rewards(rows)
    expected = mk.aggregate(frame)
    futures = [_pool().submit(mk.aggregate, frame) for _ in range(4)]
    assert [f.result(timeout=120) for f in futures] == [expected] * 4


GOLDEN_OVERFLOW = json.loads(
    (Path(__file__).parents[1] / "data" / "harbor_sum_golden_overflow.json").read_text()
)


@pytest.mark.parametrize("case", GOLDEN_OVERFLOW["cases"], ids=lambda c: c["sum"])
def test_int_prefix_past_a_c_long_turns_compensation_off(case):
    # CPython sums ints in a C long; once a partial sum leaves its range it falls back to
    # plain + for the rest of the list, floats included (1,024 values of 2**53 are
    # enough). Whole arrays, the accumulator in pieces, and the reference agree
    # with Python 3.12.
    from metrickit._core.harbor_math import HarborAccumulator

    values = [v for v, n in case["runs"] for _ in range(n)]
    v, i = _arrays(values)
    assert repr(harbor_sum(v, i)) == case["sum"]
    assert repr(harbor_sum_py(values)) == case["sum"]
    for size in (1, 7, 1000, len(values)):
        acc = HarborAccumulator()
        for lo in range(0, len(values), size):
            acc.update(v[lo : lo + size], i[lo : lo + size])
        assert repr(acc.sum()) == case["sum"], size


def test_more_pieces_than_items_and_a_key_that_starts_at_the_end():
    # a float met in the second-to-last row leaves one item for two pieces (review bug)
    import metrickit as mk

    rows = [{"reward": 1}] * 99_998 + [{"reward": 1, "style": 0.5}, {"reward": 0, "style": 1}]
    frame = mk.read_rewards(rows)
    assert mk.aggregate(frame) == {"reward": 99_999 / 100_000, "style": 1.5 / 100_000}
    assert mk.aggregate(frame, "sum") == {"reward": 99_999, "style": 1.5}


@given(st.lists(numbers, max_size=40), st.integers(1, 6))
@example([1, 0.5], 2)  # one item after the first float, two pieces
@example([2**53] * 3 + [0.5], 4)
@settings(max_examples=300, deadline=None)
def test_sum_in_any_number_of_pieces_equals_the_reference(values, pieces):
    from metrickit._core.harbor_math import _finish, _sum_steps

    v, i = _arrays(values)
    assert repr(_finish(_sum_steps(v, i, pieces))) == repr(harbor_sum_py(values))
