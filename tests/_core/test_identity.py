"""Who a trial belongs to: runs pool into a candidate only on identical recorded
configurations, and labels are short, unique and say only what tells candidates apart."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from metrickit._core.identity import (
    CONFIG_COLUMNS,
    assign_candidates,
    candidate_summary,
    canonical_kwargs,
    pooling_notes,
    with_candidates,
)


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    names = ["run", *CONFIG_COLUMNS]
    return {c: [r.get(c) for r in rows] for c in names}


def _labels(rows: list[dict[str, Any]]) -> list[str]:
    columns = _columns(rows)
    assign_candidates(columns)
    return columns["candidate"]


def test_identical_configurations_of_two_runs_pool():
    rows = [{"run": r, "agent": "terminus-2", "model": "gpt-5"} for r in ("job-1", "job-2")]
    assert _labels(rows) == ["terminus-2 · gpt-5", "terminus-2 · gpt-5"]


def test_runs_without_a_recorded_model_never_pool():
    # the two Terminal-Bench "Factory Droid" runs: same agent, no model recorded
    rows = [{"run": r, "agent": "Factory Droid"} for r in ("tb_rc2_sonnet_1", "tb_rc2_g5_1")]
    labels = _labels(rows)
    assert len(set(labels)) == 2
    assert labels == ["Factory Droid · run tb_rc2_sonnet_1", "Factory Droid · run tb_rc2_g5_1"]


def test_a_differing_kwarg_is_named_and_only_what_tells_apart():
    rows = []
    for task in ("a", "b", "c"):
        for harness in ("pi", "thinharness"):
            kwargs = {"harness": harness, "cell_id": f"{task}--{harness}", "mode": "fake"}
            rows.append({"run": f"{task}-{harness}", "agent": "smoke", "model": "gpt-5",
                         "agent_kwargs": canonical_kwargs(kwargs)})
    columns = _columns(rows)
    assign_candidates(columns)
    labels = columns["candidate"]
    assert len(set(labels)) == 6  # cell_id makes every job its own configuration
    assert labels[0] == "smoke · gpt-5 · harness=pi · cell_id=a--pi"
    assert all("mode=" not in label for label in labels)  # the same everywhere: not shown
    assert columns["kwarg_harness"] == ["pi", "thinharness"] * 3


def test_a_differing_agent_version_is_named():
    rows = [{"run": "r1", "agent": "codex", "model": "gpt-5", "agent_version": "0.46"},
            {"run": "r2", "agent": "codex", "model": "gpt-5", "agent_version": "0.47"},
            {"run": "r3", "agent": "codex", "model": "gpt-5"}]
    assert _labels(rows) == ["codex · gpt-5 · agent_version=0.46",
                             "codex · gpt-5 · agent_version=0.47",
                             "codex · gpt-5 · agent_version=(not set)"]


def test_a_table_without_agent_or_model_is_named_by_its_variant_or_run():
    assert _labels([{"run": "t", "variant": "prompt-a"}, {"run": "t", "variant": "prompt-b"}]) \
        == ["prompt-a", "prompt-b"]
    assert _labels([{"run": "t1"}, {"run": "t2"}]) == ["run t1", "run t2"]


_value = st.sampled_from([None, "a", "b"])


@given(st.lists(st.fixed_dictionaries({
    "run": st.sampled_from(["r1", "r2", "r3"]), "agent": _value, "model": _value,
    "agent_version": _value, "variant": _value, "dataset": _value,
    "agent_kwargs": st.sampled_from([None, '{"k":1}', '{"k":2}', '{"j":"x","k":1}']),
}), min_size=1, max_size=30))
def test_labels_are_one_per_configuration(rows):
    labels = _labels(rows)
    key_of: dict[str, Any] = {}
    for row, label in zip(rows, labels, strict=True):
        config = tuple(row.get(c) for c in CONFIG_COLUMNS)
        poolable = row.get("model") is not None or row.get("variant") is not None
        key = config if poolable else (config, row["run"])
        # one label per key, and one key per label: never merged, never split
        assert key_of.setdefault(label, key) == key


def test_with_candidates_recomputes_after_stacking():
    import pandas as pd

    a = pd.DataFrame({"run": ["r1"], "agent": ["x"], "model": [None], "candidate": ["x"]})
    b = pd.DataFrame({"run": ["r2"], "agent": ["x"], "model": [None], "candidate": ["x"]})
    out = with_candidates(pd.concat([a, b], ignore_index=True))
    assert out["candidate"].tolist() == ["x · run r1", "x · run r2"]
    summary = candidate_summary(out)
    assert summary["n_runs"].tolist() == [1, 1]
    assert summary["not_recorded"].tolist() == ["model", "model"]
    assert any("no model recorded" in n for n in pooling_notes(out))


def test_pooled_candidates_are_named_in_the_notes():
    import pandas as pd

    df = pd.DataFrame({"run": ["r1", "r2"], "agent": ["x", "x"], "model": ["m", "m"]})
    notes = pooling_notes(with_candidates(df))
    assert notes == ["x · m: pooled from 2 runs with identical recorded configurations"]


def test_parts_that_print_alike_still_give_distinct_labels():
    rows = [{"run": "r", "agent": "a", "model": "m", "agent_kwargs": '{"k":1}'},
            {"run": "r", "agent": "a", "model": "m", "agent_kwargs": '{"k":"1"}'}]
    labels = _labels(rows)
    assert len(set(labels)) == 2
