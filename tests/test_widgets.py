"""The tuner's logic without a browser: set .value, check spec, ranking and drawing."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit.report import plots
from metrickit.widgets import tune_spec


@pytest.fixture
def cases(data_dir):
    return pd.read_json(data_dir / "cases" / "tickets.jsonl", lines=True)


@pytest.fixture
def tuner(cases, capsys):
    t = tune_spec(cases, debounce_ms=0)
    capsys.readouterr()  # Output-widget display falls back to stdout outside a kernel
    return t


def _expected_ranking(cases, spec):
    scored = mk.RewardSpec.from_dict(spec).score_frame(cases)
    return scored.groupby("candidate")["reward"].mean().sort_values(ascending=False)


def test_initial_state_matches_score_frame(tuner, cases):
    assert tuner.spec == mk.RewardSpec.from_dict(tuner.spec).to_dict()
    expected = _expected_ranking(cases, tuner.spec)
    got = tuner.ranking.set_index("candidate")["reward"]
    assert list(tuner.ranking["candidate"]) == list(expected.index)
    np.testing.assert_allclose(got[expected.index].to_numpy(), expected.to_numpy(), rtol=1e-12)
    assert tuner.png.startswith(b"\x89PNG")


def test_weight_slider_changes_spec_ranking_and_plot(tuner, cases):
    before_png = tuner.png
    tuner.w_accuracy.value = 0.0
    tuner.w_speed.value = 1.0
    tuner.w_cost.value = 0.0
    assert tuner.spec["weights"] == {"accuracy": 0.0, "speed": 1.0, "cost": 0.0}
    # only speed counts: the fastest candidate wins
    fastest = cases.groupby("candidate")["latency_ms"].mean().idxmin()
    assert tuner.ranking.iloc[0]["candidate"] == fastest
    expected = _expected_ranking(cases, tuner.spec)
    assert list(tuner.ranking["candidate"]) == list(expected.index)
    assert "normalised" in tuner.normalised.value and "<b>1.00</b>" in tuner.normalised.value
    # the plotted bars follow the ranking, the winner is highlighted
    bars = tuner._artists["bars"]
    widths = {g: b.get_width() for g, b in zip(tuner.groups, bars, strict=True)}
    assert widths == pytest.approx(expected.to_dict())
    best = tuner.groups.index(fastest)
    assert bars[best].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb("tab:orange"))
    assert tuner.png != before_png
    assert f"best: {fastest}" in tuner._artists["title"].get_text()


def test_references_shape_and_accuracy_toggle(tuner):
    tuner.speed_ref.value = 500.0
    assert tuner.spec["speed"]["reference"] == 500.0  # rounded to 2 significant digits
    tuner.shape.value = "linear"
    assert tuner.spec["shape"] == "linear"
    assert tuner.acc_ref.disabled
    tuner.acc_is_error.value = True
    assert not tuner.acc_ref.disabled
    assert "reference" in tuner.spec["accuracy"]
    assert "REWARD_SPEC = " in tuner.literal.value and "linear" in tuner.literal.value


def test_all_weights_zero_shows_a_message_not_a_traceback(tuner):
    tuner.w_accuracy.value = 0.0
    tuner.w_speed.value = 0.0
    ranking, spec = tuner.ranking.copy(), tuner.spec
    tuner.w_cost.value = 0.0
    assert "Cannot score with these settings" in tuner.message.value
    assert "all 0" in tuner.message.value
    pd.testing.assert_frame_equal(tuner.ranking, ranking)  # last valid state is kept
    assert tuner.spec == spec
    tuner.w_cost.value = 1.0
    assert "best:" in tuner.message.value or "tied:" in tuner.message.value


def test_missing_column_is_a_clear_error(cases):
    with pytest.raises(mk.MetrickitError, match="column 'latency' is not in the frame"):
        tune_spec(cases, latency="latency")


def test_tradeoff_marks_the_pareto_front(cases):
    ax = plots.tradeoff(cases, highlight="base")
    means = plots.candidate_means(cases, ["latency_ms", "accuracy", "cost_usd"])
    mask = plots.pareto_front(means, maximize=("accuracy",), minimize=("latency_ms", "cost_usd"))
    # every candidate here trades accuracy for speed/cost, so all are on the front
    assert mask.all()
    assert ax.get_xlabel().startswith("latency (ms)")
    assert ax.get_ylabel().startswith("accuracy")
    front = [line for line in ax.get_lines() if line.get_label() == "Pareto front"]
    assert len(front) == 1 and len(front[0].get_xdata()) == 3


def test_pareto_front_drops_dominated():
    table = pd.DataFrame({"accuracy": [0.9, 0.8, 0.95], "latency_ms": [100, 200, 300],
                          "cost_usd": [1.0, 2.0, 1.0]})
    assert plots.pareto_front(table).tolist() == [True, False, True]


def test_distribution_and_heatmap_return_axes():
    df = pd.DataFrame({"candidate": ["a", "a", "b", "b"], "reward": [0.1, 0.3, 0.9, 0.7],
                       "task_name": ["t1", "t2", "t1", "t2"]})
    ax = plots.reward_distribution(df)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b"]
    ax = plots.task_heatmap(df, by="candidate")
    image = ax.get_images()[0].get_array()
    assert image.shape == (2, 2)
    assert image[0, 1] == pytest.approx(0.9)


def test_missing_group_label_is_a_clear_error(cases):
    broken = cases.copy()
    broken.loc[5, "candidate"] = None
    with pytest.raises(mk.MetrickitError, match=r"column 'candidate' has no value at row 5"):
        tune_spec(broken)
    with pytest.raises(mk.MetrickitError, match=r"row 5"):
        plots.tradeoff(broken)


def test_slider_events_are_debounced_inside_an_event_loop(cases, capsys):
    import asyncio

    async def drag() -> tuple[int, int, str]:
        tuner = tune_spec(cases, debounce_ms=50)
        updates = []
        original = tuner._schedule.fn
        tuner._schedule.fn = lambda: (updates.append(1), original())[1]
        for value in (0.3, 0.5, 0.7, 0.9, 1.0):  # one drag: five events in quick succession
            tuner.w_speed.value = value
        during = len(updates)
        await asyncio.sleep(0.2)
        return during, len(updates), str(tuner.spec["weights"]["speed"])

    during, after, speed = asyncio.run(drag())
    capsys.readouterr()
    assert during == 0  # nothing recomputed while the events kept coming
    assert after == 1  # one update once they stopped, with the last value
    assert speed == "1.0"


def test_empty_table_and_bool_candidates_are_handled():
    import pandas as pd

    from metrickit.errors import MetrickitError

    empty = pd.DataFrame({"candidate": [], "accuracy": [], "latency_ms": [], "cost_usd": []})
    with pytest.raises(MetrickitError, match="no rows"):
        mk.widgets.tune_spec(empty)
    # True == 1 in Python; they are still two candidates, not one merged row.
    cases = pd.DataFrame({
        "candidate": [True, 1, True, 1],
        "accuracy": [1.0, 0.0, 1.0, 0.0],
        "latency_ms": [100.0, 100.0, 100.0, 100.0],
        "cost_usd": [0.001] * 4,
    })
    tuner = mk.widgets.tune_spec(cases)
    assert len(tuner.ranking) == 2 and tuner.ranking["n"].tolist() == [2, 2]
