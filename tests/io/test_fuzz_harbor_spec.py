"""Fuzzing read_harbor_job (mutated trial result.json files) and RewardSpec.from_dict.

Allowed outcomes: a frame with one row per trial folder, or a HarborJobError / SpecError
that says where and what; never another exception.
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import metrickit as mk
from metrickit.errors import HarborJobError, SpecError
from metrickit.scoring.spec import PARTS, SHAPES

JOB = Path(__file__).resolve().parents[2] / "data" / "harbor_jobs" / "2025-06-02__10-00-00"
TRIAL = sorted(p for p in JOB.iterdir() if p.is_dir())[0]
BASE = json.loads((TRIAL / "result.json").read_text())

# METRICKIT_FUZZ_SCALE=10 runs ten times as many examples (a longer hunt; not for CI).
SCALE = int(os.environ.get("METRICKIT_FUZZ_SCALE", "1"))
FUZZ = settings(max_examples=200 * SCALE, deadline=None,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.function_scoped_fixture])

# --- read_harbor_job -----------------------------------------------------------------

nasty_json = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70),
        st.sampled_from([10**30, -(2**63), 2**63, 10**400, 0, -1]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=8),
        st.sampled_from(["", "2025-06-02T10:00:00Z", "0001-01-01T00:00:00+14:00",
                         "9999-12-31T23:59:59-14:00", "yesterday", "\ud800", "_status",
                         "reward", "agent"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6,
)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


PATHS = [*_paths(BASE), ("verifier_result", "rewards", "reward"),
         ("verifier_result", "rewards", "style"),
         ("agent_result", "n_input_tokens"), ("agent_result", "cost_usd"),
         ("step_results",), ("reward_valid",)]


@st.composite
def result_files(draw: st.DrawFn) -> bytes:
    obj = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(PATHS))
        target = obj
        try:
            for part in path[:-1]:
                target = target[part]
            if draw(st.integers(0, 5)) == 0 and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = draw(nasty_json)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation changed the shape; skip this one
    text = json.dumps(obj, allow_nan=True).encode("utf-8", "surrogatepass")
    how = draw(st.integers(0, 9))
    if how == 0:
        return text[: draw(st.integers(0, len(text)))]
    if how == 1:
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from([b"\xff", b"[" * 5000, b"\x00", b"}"])) + text[at:]
    if how == 2:
        return b"\xef\xbb\xbf" + text
    return text


def _job(root: Path, files: list[bytes]) -> tuple[Path, list[Path]]:
    job = root / "job with space"
    job.mkdir()
    for name in ("config.json", "result.json", "job.log"):
        shutil.copy(JOB / name, job / name)
    results = []
    for i, data in enumerate(files):
        trial = job / f"task-{i}__trial{i}"
        trial.mkdir()
        (trial / "result.json").write_bytes(data)
        results.append(trial / "result.json")
    return job, results


@FUZZ
@given(st.lists(result_files(), min_size=1, max_size=3), st.sampled_from(["pandas", "polars"]))
@example([b"[" * 100_000], "pandas")  # once a RecursionError
@example([json.dumps({**BASE, "agent_result": {"n_input_tokens": 10**30}}).encode()], "polars")
@example([json.dumps({**BASE, "task_name": "\ud800"}).encode("utf-8", "surrogatepass")], "pandas")
def test_read_harbor_job_mutated_trials(tmp_path_factory: pytest.TempPathFactory,
                                        files: list[bytes], backend: str) -> None:
    job, results = _job(tmp_path_factory.mktemp("h"), files)
    try:
        frame = mk.read_harbor_job(job, backend=backend)  # type: ignore[arg-type]
    except HarborJobError as exc:
        event("outcome: HarborJobError")
        message = str(exc)
        if "clashes with a column" not in message:
            assert any(message.startswith(str(r)) for r in results), message
        try:
            frame, problems = mk.read_harbor_job(job, backend=backend,  # type: ignore[arg-type]
                                                 errors="report")
        except HarborJobError as again:
            # Only a reward key that collides with a column is not a per-trial problem.
            assert "clashes with a column" in str(again), str(again)
            return
        assert problems, "raise mode failed but report mode found no problem"
        assert all(p.source in {str(r) for r in results} for p in problems)
        invalid = [str(s) for s in frame["_status"].to_list()].count("invalid")
        assert invalid == len(problems)
    else:
        event("outcome: frame")
        _check_against_source(frame)
    assert len(frame) == len(files)  # one row per trial folder, whatever it held


def _check_against_source(frame: object) -> None:
    """Each valid row's names and reward values equal what its result.json says."""
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else frame.to_pandas()  # type: ignore[attr-defined]
    for _, row in df.iterrows():
        if str(row["_status"]) in ("invalid", "running"):
            continue
        source = json.loads((Path(row["trial_dir"]) / "result.json").read_bytes())
        assert row["task_name"] == source.get("task_name"), row["trial_dir"]
        rewards = (source.get("verifier_result") or {}).get("rewards") or {}
        for key, value in rewards.items():
            if key in df.columns:
                assert row[key] == float(value), (row["trial_dir"], key, value)
                kind = "bool" if isinstance(value, bool) else (
                    "int" if isinstance(value, int) else "float")
                assert str(row[f"_kind_{key}"]) == kind, (row["trial_dir"], key)


# --- RewardSpec.from_dict ------------------------------------------------------------

numbers = st.one_of(
    st.integers(-3, 10), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 0.0, -0.0, 1e308, 5e-324, 10**400, 10**5000, True, False,
                     np.float64(0.5), np.int64(3), np.float32("nan"), "1", None]),
)
section = st.one_of(
    st.fixed_dictionaries({"reference": numbers}),
    st.fixed_dictionaries({}),
    st.dictionaries(st.sampled_from(["reference", "ref", "weight"]), numbers, max_size=2),
    numbers,
)
weights = st.one_of(
    st.fixed_dictionaries({p: numbers for p in PARTS}),
    st.dictionaries(st.sampled_from([*PARTS, "latency", ""]), numbers, max_size=4),
    numbers,
)
good = st.one_of(st.integers(0, 10), st.floats(0, 1e6), st.sampled_from([1e308, 5e-324]))
positive = st.one_of(st.integers(1, 10**6), st.floats(1e-300, 1e300))
near_valid = st.fixed_dictionaries(
    {"weights": st.fixed_dictionaries({p: good for p in PARTS}),
     "speed": st.fixed_dictionaries({"reference": positive}),
     "cost": st.fixed_dictionaries({"reference": positive})},
    optional={"accuracy": st.one_of(st.just({}), st.fixed_dictionaries({"reference": positive})),
              "shape": st.sampled_from(SHAPES)},
)
specs = st.one_of(
    near_valid,
    st.fixed_dictionaries(
        {"weights": weights, "speed": section, "cost": section},
        optional={"accuracy": section,
                  "shape": st.one_of(st.sampled_from([*SHAPES, "cubic", ""]), numbers),
                  "extra": numbers},
    ),
    numbers,
    st.lists(numbers, max_size=2),
)


def _number(v: Any) -> bool:
    return isinstance(v, int | float | np.integer | np.floating) and not isinstance(
        v, bool | np.bool_)


def _finite(v: Any) -> bool:
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _valid_ref(section: Any, required: bool) -> bool:
    if not isinstance(section, dict) or set(section) - {"reference"}:
        return False
    if "reference" not in section:
        return not required
    ref = section["reference"]
    return _number(ref) and _finite(ref) and ref > 0


def _oracle_valid(spec: Any) -> bool:
    if not isinstance(spec, dict) or set(spec) - {"weights", "accuracy", "speed", "cost",
                                                  "shape"}:
        return False
    w = spec.get("weights")
    if not isinstance(w, dict) or set(w) != set(PARTS):
        return False
    if not all(_number(v) and _finite(v) and v >= 0 for v in w.values()):
        return False
    if all(v == 0 for v in w.values()):
        return False
    if "accuracy" in spec and not _valid_ref(spec["accuracy"], required=False):
        return False
    if not (_valid_ref(spec.get("speed"), True) and _valid_ref(spec.get("cost"), True)):
        return False
    return spec.get("shape", "hyperbolic") in SHAPES


@settings(max_examples=400 * SCALE, deadline=None)
@given(specs)
@example({"weights": {"accuracy": 1e308, "speed": 1e308, "cost": 1e308},
          "speed": {"reference": 1}, "cost": {"reference": 1}})  # once OverflowError (fsum)
@example({"weights": {"accuracy": 10**400, "speed": 0, "cost": 0},
          "speed": {"reference": 1}, "cost": {"reference": 1}})  # once OverflowError
@example({"weights": {"accuracy": 10**5000, "speed": 0, "cost": 0},
          "speed": {"reference": 1}, "cost": {"reference": 10**5000}})  # repr raised
def test_reward_spec_from_dict(spec: Any) -> None:
    try:
        parsed = mk.RewardSpec.from_dict(spec)
    except SpecError as exc:
        event("outcome: SpecError")
        assert not _oracle_valid(spec)
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        assert all(p in str(exc) for p in exc.problems) or len(exc.problems) == 1
        assert len(str(exc)) < 5000
        return
    event("outcome: RewardSpec")
    assert _oracle_valid(spec)
    w = parsed.weights
    assert all(0 <= w[p] <= 1 and math.isfinite(w[p]) for p in PARTS)
    assert math.isclose(math.fsum(w.values()), 1.0, rel_tol=1e-12)
    raw = {p: Fraction(float(spec["weights"][p])) for p in PARTS}
    for p in PARTS:  # each weight is its exact share, to float precision (subnormals aside)
        exact = float(raw[p] / sum(raw.values()))
        assert math.isclose(w[p], exact, rel_tol=1e-12, abs_tol=1e-300), (p, w[p], exact)
    assert mk.RewardSpec.from_dict(parsed.to_dict()) == parsed
