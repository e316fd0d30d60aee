from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit.scoring.current import measured
from metrickit.scoring.scorers import validate_result
from metrickit.scoring.spec import SHAPES

DESIGN_SPEC = {
    "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
    "accuracy": {},
    "speed": {"reference": 2000},
    "cost": {"reference": 0.01},
}


def test_design_example_validates_and_round_trips():
    spec = mk.RewardSpec.from_dict(DESIGN_SPEC)
    assert spec.weights == pytest.approx({"accuracy": 0.7, "speed": 0.2, "cost": 0.1})
    assert spec.accuracy_reference is None
    assert (spec.speed_reference, spec.cost_reference, spec.shape) == (2000, 0.01, "hyperbolic")
    assert spec.to_dict() == DESIGN_SPEC
    assert mk.RewardSpec.from_dict(spec.to_dict()) == spec


def test_shape_and_accuracy_reference_round_trip():
    d = {**DESIGN_SPEC, "accuracy": {"reference": 0.1}, "shape": "linear"}
    spec = mk.RewardSpec.from_dict(d)
    assert spec.to_dict() == d
    default = spec.replace(shape="hyperbolic")
    assert default.shape == "hyperbolic"
    assert "shape" not in default.to_dict()


def test_weights_are_scaled_to_sum_to_one_and_raw_weights_kept():
    spec = mk.RewardSpec.from_dict({**DESIGN_SPEC, "weights": {"accuracy": 7, "speed": 2,
                                                                "cost": 0}})
    assert spec.weights == {"accuracy": 7 / 9, "speed": 2 / 9, "cost": 0.0}
    assert spec.raw_weights == {"accuracy": 7, "speed": 2, "cost": 0}
    assert spec.to_dict()["weights"] == {"accuracy": 7, "speed": 2, "cost": 0}


@given(st.lists(st.floats(0, 1e6), min_size=3, max_size=3).filter(lambda w: sum(w) > 0))
@example([0.0, 0.0, 5e-324])
@example([1e6, 0.0, 0.0])
def test_normalised_weights_sum_to_one(raw):
    spec = mk.RewardSpec.from_dict({**DESIGN_SPEC, "weights": dict(zip(mk.scoring.spec.PARTS, raw,
                                                                       strict=True))})
    assert math.isclose(sum(spec.weights.values()), 1.0, rel_tol=1e-12)
    assert all(w >= 0 for w in spec.weights.values())


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"weights": {"accuracy": 1, "speed": 1}}, "weights must name accuracy, speed and cost"),
        ({"weights": {"accuracy": -1, "speed": 1, "cost": 1}}, "weights.accuracy is -1"),
        ({"weights": {"accuracy": True, "speed": 1, "cost": 1}}, "weights.accuracy is True"),
        ({"weights": {"accuracy": "1", "speed": 1, "cost": 1}}, "weights.accuracy is '1'"),
        ({"weights": {"accuracy": math.nan, "speed": 1, "cost": 1}}, "weights.accuracy is nan"),
        ({"weights": {"accuracy": 0, "speed": 0, "cost": 0}}, "weights are all 0"),
        ({"weights": {"accuracy": 1, "speed": 1, "cost": 1, "style": 1}}, "unknown name(s)"),
        ({"weights": [0.7, 0.2, 0.1]}, "weights is [0.7, 0.2, 0.1] (list)"),
        ({"speed": {"reference": 0}}, "speed.reference is 0"),
        ({"speed": {"reference": -5}}, "speed.reference is -5"),
        ({"cost": {"reference": "0.01"}}, "cost.reference is '0.01' (str)"),
        ({"cost": {"reference": math.inf}}, "cost.reference is inf"),
        ({"cost": {}}, "cost.reference is missing"),
        ({"speed": 2000}, "speed is 2000 (int); expected a dict"),
        ({"speed": {"reference": 2000, "unit": "ms"}}, "speed has unknown key(s) ['unit']"),
        ({"accuracy": {"reference": 0}}, "accuracy.reference is 0"),
        ({"colour": "red"}, "unknown key(s) ['colour']"),
        ({"shape": "cubic"}, "shape is 'cubic' (str); expected one of"),
    ],
)
def test_each_problem_has_its_own_message(change, needle):
    with pytest.raises(mk.SpecError) as info:
        mk.RewardSpec.from_dict({**DESIGN_SPEC, **change})
    assert needle in str(info.value)
    assert len(info.value.problems) == 1


def test_missing_sections_and_all_problems_listed_together():
    with pytest.raises(mk.SpecError) as info:
        mk.RewardSpec.from_dict({"weights": {"accuracy": -1, "speed": "x"}, "speed": {},
                                 "extra": 1, "shape": "cubic"})
    problems = info.value.problems
    assert len(problems) == 7, problems
    text = str(info.value)
    assert text.startswith("invalid REWARD_SPEC (7 problem(s))")
    for needle in ("unknown key(s) ['extra']", "missing ['cost']", "weights.accuracy is -1",
                   "weights.speed is 'x'", "speed.reference is missing", "missing 'cost'",
                   "shape is 'cubic'"):
        assert needle in text
    with pytest.raises(mk.SpecError, match="expected a dict"):
        mk.RewardSpec.from_dict([("weights", {})])  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)


def test_direct_construction_is_validated_and_weights_follow_raw_weights():
    spec = mk.RewardSpec({}, {"accuracy": 1, "speed": 1, "cost": 2}, None, 100.0, 0.5)
    assert spec.weights == {"accuracy": 0.25, "speed": 0.25, "cost": 0.5}
    with pytest.raises(mk.SpecError, match=r"speed\.reference is -1"):
        mk.RewardSpec({}, {"accuracy": 1, "speed": 1, "cost": 1}, None, -1, 0.5)
    changed = spec.replace(weights={"cost": 0}, speed_reference=50)
    assert changed.weights == {"accuracy": 0.5, "speed": 0.5, "cost": 0.0}
    assert changed.speed_reference == 50
    with pytest.raises(TypeError, match="unknown field"):
        spec.replace(colour=1)


@pytest.mark.parametrize("shape", SHAPES)
def test_reference_earns_half_marks_and_zero_full_marks(shape):
    spec = mk.RewardSpec.from_dict({**DESIGN_SPEC, "shape": shape,
                                    "accuracy": {"reference": 0.2}})
    for part, ref in (("speed", 2000), ("cost", 0.01), ("accuracy", 0.2)):
        assert spec.part_score(part, ref) == pytest.approx(0.5, abs=1e-15)
        assert spec.part_score(part, 0) == 1.0
        values = spec.part_score(part, np.linspace(0, 10 * ref, 50))
        assert np.all(np.diff(values) <= 0) and values.min() >= 0
        assert spec.part_score(part, math.inf) == 0.0


def test_shape_formulas():
    hyp = mk.RewardSpec.from_dict(DESIGN_SPEC)
    assert hyp.part_score("speed", 6000) == 2000 / 8000
    exp = hyp.replace(shape="exponential")
    assert exp.part_score("speed", 6000) == 2 ** -3
    lin = hyp.replace(shape="linear")
    assert lin.part_score("speed", 3000) == pytest.approx(0.25)
    assert lin.part_score("speed", 4000) == 0.0
    assert lin.part_score("speed", 9000) == 0.0


def test_unmeasured_parts_score_zero_and_bad_values_are_refused():
    spec = mk.RewardSpec.from_dict(DESIGN_SPEC)
    assert spec.part_score("speed", None) == 0.0
    assert spec.part_score("cost", math.nan) == 0.0
    np.testing.assert_array_equal(spec.part_score("cost", [0.0, np.nan]), [1.0, 0.0])
    with pytest.raises(mk.RewardInputError, match=r"latency_ms is -1.0 \(row 1"):
        spec.part_score("speed", [1.0, -1.0])
    with pytest.raises(mk.RewardInputError, match=r"accuracy is 1.5; expected a score in \[0, 1\]"):
        spec.part_score("accuracy", 1.5)
    with pytest.raises(mk.RewardInputError, match="accuracy is nan"):
        spec.part_score("accuracy", math.nan)
    with pytest.raises(ValueError, match="part is 'style'"):
        spec.part_score("style", 1)
    with_error = spec.replace(accuracy_reference=0.1)
    assert with_error.part_score("accuracy", 0.1) == 0.5
    assert with_error.part_score("accuracy", 3.0) == 0.1 / 3.1
    with pytest.raises(mk.RewardInputError, match=r"accuracy error is -0\.5"):
        with_error.part_score("accuracy", -0.5)


def test_reward_returns_a_contract_valid_pair():
    value = mk.reward(DESIGN_SPEC, 1.0, "Correct.", latency_ms=2000, cost_usd=0.01)
    assert validate_result(value) == []
    score, side = value
    assert side == {"feedback": "Correct.",
                    "scores": {"accuracy": 1.0, "speed": 0.5, "cost": 0.5}}
    assert score == pytest.approx(0.7 + 0.1 + 0.05)
    assert isinstance(score, float)


def test_reward_reads_the_current_measurements_and_says_what_was_not_measured():
    _, side = mk.reward(DESIGN_SPEC, 0.0, "Wrong label.")
    assert side["scores"] == {"accuracy": 0.0, "speed": 0.0, "cost": 0.0}
    assert side["feedback"] == ("Wrong label. The latency was not measured, so the speed part "
                                "scores 0. The cost was not measured, so the cost part scores 0.")
    with measured(latency_ms=2000, cost_usd=None):
        assert mk.observation() == 2000 and mk.service_cost() is None
        score, side = mk.reward(DESIGN_SPEC, 1.0, "Correct.")
    assert side["scores"]["speed"] == 0.5 and side["scores"]["cost"] == 0.0
    assert side["feedback"] == "Correct. The cost was not measured, so the cost part scores 0."
    assert score == pytest.approx(0.7 + 0.1)
    assert mk.observation() is None
    # An explicit value wins over the current case's measurement.
    with measured(latency_ms=0, cost_usd=0):
        assert mk.reward(DESIGN_SPEC, 1.0, "", latency_ms=2000)[1]["scores"]["speed"] == 0.5


def test_reward_refuses_bad_arguments():
    with pytest.raises(mk.RewardInputError, match=r"accuracy is 2.0; expected a score in \[0, 1\]"):
        mk.reward(DESIGN_SPEC, 2.0, "x", latency_ms=1, cost_usd=1)
    with pytest.raises(mk.RewardInputError, match="accuracy is '1'"):
        mk.reward(DESIGN_SPEC, "1", "x")  # type: ignore[arg-type]
    with pytest.raises(mk.ScorerError, match="feedback is 3"):
        mk.reward(DESIGN_SPEC, 1.0, 3)  # type: ignore[arg-type]
    with pytest.raises(mk.SpecError):
        mk.reward({"weights": {}}, 1.0, "x")


specs = st.builds(
    lambda w, acc_ref, speed_ref, cost_ref, shape: {
        "weights": dict(zip(("accuracy", "speed", "cost"), w, strict=True)),
        "accuracy": {} if acc_ref is None else {"reference": acc_ref},
        "speed": {"reference": speed_ref},
        "cost": {"reference": cost_ref},
        "shape": shape,
    },
    st.lists(st.floats(0, 100), min_size=3, max_size=3).filter(lambda w: sum(w) > 0),
    st.none() | st.floats(1e-4, 10),
    st.floats(1e-3, 1e5),
    st.floats(1e-6, 10),
    st.sampled_from(SHAPES),
)
maybe = st.none() | st.just(math.nan)
rows = st.lists(
    st.tuples(st.floats(0, 1), maybe | st.floats(0, 1e6), maybe | st.floats(0, 100)),
    min_size=1, max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(specs, rows, st.sampled_from(["pandas", "polars"]))
@example(DESIGN_SPEC, [(1.0, None, None), (0.0, 0.0, 0.0), (0.5, 2000.0, 0.01)], "pandas")
@example(DESIGN_SPEC, [(1.0, math.nan, 1e6)], "polars")
def test_score_frame_equals_reward_on_every_row(spec_dict, cases, backend):
    spec = mk.RewardSpec.from_dict(spec_dict)
    accuracy = [a for a, _, _ in cases]
    latency = [lat for _, lat, _ in cases]
    cost = [c for _, _, c in cases]
    data = {"accuracy": accuracy, "latency_ms": latency, "cost_usd": cost}
    if backend == "pandas":
        frame = pd.DataFrame(data, index=np.arange(len(cases)) * 3 + 7)
    else:
        frame = pl.DataFrame(data, schema=dict.fromkeys(data, pl.Float64), nan_to_null=False)
    out = spec.score_frame(frame)
    assert type(out) is type(frame)
    if backend == "pandas":
        assert list(out.index) == list(frame.index)
        get = {c: out[c].tolist() for c in out.columns}
    else:
        get = out.to_dict(as_series=False)
    for i, (a, lat, c) in enumerate(cases):
        score, side = mk.reward(spec, a, "", latency_ms=lat, cost_usd=c)
        assert get["reward"][i] == score
        assert get["accuracy_score"][i] == side["scores"]["accuracy"]
        assert get["speed_score"][i] == side["scores"]["speed"]
        assert get["cost_score"][i] == side["scores"]["cost"]


def test_score_frame_options_and_errors():
    spec = mk.RewardSpec.from_dict(DESIGN_SPEC)
    df = pd.DataFrame({"correct": [True, False], "ms": [2000, 0]})
    out = spec.score_frame(df, accuracy="correct", latency="ms", cost=None)
    assert out["accuracy_score"].tolist() == [1.0, 0.0]
    assert out["speed_score"].tolist() == [0.5, 1.0]
    assert out["cost_score"].tolist() == [0.0, 0.0]
    assert list(df.columns) == ["correct", "ms"]  # the input is not modified
    with pytest.raises(mk.RewardInputError, match="latency column 'latency_ms' is not in"):
        spec.score_frame(df, accuracy="correct")
    bad = pd.DataFrame({"accuracy": [0.5, 1.2, 3.0], "latency_ms": [1, 2, 3], "cost_usd": 0.0})
    with pytest.raises(mk.RewardInputError, match=r"accuracy is 1.2 \(row 1, 2 row\(s\) in all\)"):
        spec.score_frame(bad)


def test_score_frame_on_the_sample_case_table(data_dir):
    cases = pl.read_ndjson(data_dir / "cases" / "tickets.jsonl")
    out = mk.RewardSpec.from_dict(DESIGN_SPEC).score_frame(cases)
    assert out.height == 200 * 6  # 200 tickets x 6 candidates (data/make_cases.py)
    unmeasured = out.filter(pl.col("latency_ms").is_null())
    assert unmeasured.height > 0 and (unmeasured["speed_score"] == 0).all()
    means = out.group_by("candidate").agg(pl.col("accuracy").mean(), pl.col("reward").mean())
    assert set(means["candidate"]) == {
        "mini-fast", "base", "openrouter/anthropic/claude-haiku-4.5",
        "openrouter/openai/gpt-5-mini", "large-cot", "base-v0"}




def test_measurements_that_are_not_numbers_are_errors_not_unmeasured():
    with pytest.raises(mk.RewardInputError, match=r"latency_ms is '1500' \(str\)"):
        mk.reward(DESIGN_SPEC, 1.0, "ok", latency_ms="1500")
    with pytest.raises(mk.RewardInputError, match=r"cost_usd is True \(bool\)"):
        mk.reward(DESIGN_SPEC, 1.0, "ok", latency_ms=100, cost_usd=True)
    # None and NaN still mean "not measured": that part scores 0
    _, side = mk.reward(DESIGN_SPEC, 1.0, "ok", latency_ms=float("nan"), cost_usd=None)
    assert side["scores"]["speed"] == 0.0 and side["scores"]["cost"] == 0.0


def test_score_frame_refuses_text_columns_and_names_the_row():
    spec = mk.RewardSpec.from_dict(DESIGN_SPEC)
    df = pd.DataFrame({"accuracy": [1.0, 0.0], "latency_ms": ["1500", "2000"],
                       "cost_usd": [0.01, 0.02]})
    with pytest.raises(mk.RewardInputError, match=r"'latency_ms' has dtype .*row 0 holds '1500'"):
        spec.score_frame(df)


def test_reward_feedback_and_the_notes_are_separate_sentences():
    # "fine" used to run into the note: "fine The latency was not measured, ..."
    note = "The latency was not measured, so the speed part scores 0."
    with measured(latency_ms=None, cost_usd=0.0):
        assert mk.reward(DESIGN_SPEC, 0.9, "fine")[1]["feedback"] == f"fine. {note}"
        assert mk.reward(DESIGN_SPEC, 0.9, "fine!  ")[1]["feedback"] == f"fine! {note}"
        assert mk.reward(DESIGN_SPEC, 0.9, "")[1]["feedback"] == note
    with measured(latency_ms=1, cost_usd=0.0):  # nothing to add: the feedback as given
        assert mk.reward(DESIGN_SPEC, 0.9, "fine ")[1]["feedback"] == "fine "
