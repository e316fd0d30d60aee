"""The value tests the scorer contract and REWARD_SPEC share."""

from __future__ import annotations

import numpy as np
import pytest

import metrickit as mk
from metrickit._core.values import describe_value, is_finite_number, is_number, short_repr
from metrickit.scoring.contract import check_timeout, validate_result


@pytest.mark.parametrize(
    ("value", "number", "finite"),
    [(1, True, True), (0.5, True, True), (np.int64(3), True, True), (np.float32(2), True, True),
     (True, False, False), (np.bool_(True), False, False), (float("nan"), True, False),
     (float("inf"), True, False), (10**400, True, False), ("1", False, False),
     (None, False, False)],
)
def test_number_tests(value, number, finite):
    assert is_number(value) is number
    assert is_finite_number(value) is finite


def test_a_broken_repr_still_describes():
    class Broken:
        def __repr__(self):
            raise RuntimeError("boom")

    assert describe_value(Broken()) == "<unrepresentable Broken: boom> (Broken)"
    assert short_repr(10**5000).startswith("<int too large")


def test_huge_numbers_are_refused_with_a_reason_not_an_overflow():
    with pytest.raises(mk.ScorerError, match="at most 600"):
        check_timeout(10**400)
    assert any("finite" in p for p in validate_result((10**400, {"feedback": "x"})))
    with pytest.raises(mk.SpecError, match="positive finite number"):
        mk.RewardSpec.from_dict({"weights": {"accuracy": 1, "speed": 0, "cost": 0},
                                 "speed": {"reference": 10**400}})
