"""The tuner's logic without a browser: set .value, check spec, ranking and drawing."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html
import re

import numpy as np
import pandas as pd
import pytest

import metrickit as mk
from metrickit.reporting import plots
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


def test_the_png_holds_the_canvas_pixels(tuner):
    # the hand-made PNG (unfiltered RGB rows, fast zlib) decodes to exactly what Agg drew
    from io import BytesIO

    from PIL import Image

    tuner.w_speed.value = 0.5
    canvas = tuner.figure().canvas
    width, height = canvas.get_width_height(physical=True)
    drawn = np.asarray(canvas.buffer_rgba()).reshape(height, width, 4)[..., :3]
    decoded = np.asarray(Image.open(BytesIO(tuner.png)).convert("RGB"))
    assert decoded.shape == drawn.shape
    np.testing.assert_array_equal(decoded, drawn)


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
    # the bars follow the ranking, best at the top, the winner highlighted
    bars, names = tuner._artists["bars"], tuner._artists["names"]
    assert [b.get_width() for b in bars] == pytest.approx(expected.to_list())
    short = dict(zip(tuner.groups, plots.short_labels(tuner.groups), strict=True))
    assert [t.get_text() for t in names] == [short[g] for g in expected.index]
    assert bars[0].get_facecolor()[:3] == pytest.approx(matplotlib.colors.to_rgb(plots.BEST))
    assert tuner.png != before_png
    assert f"best: {short[fastest]}" in tuner._artists["title"].get_text()


def test_references_shape_and_accuracy_toggle(tuner):
    tuner.speed_ref.value = 500.0
    assert tuner.spec["speed"]["reference"] == 500.0
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
    # the normalised weights and the literal show the sliders' state, not the last valid one
    assert "none" in tuner.normalised.value and "1.00" not in tuner.normalised.value
    assert '"weights": {"accuracy": 0, "speed": 0, "cost": 0}' in _literal_text(tuner)
    assert _literal_text(tuner).startswith("# not valid yet: weights are all 0")
    assert "no ranking" in tuner._artists["title"].get_text()
    pd.testing.assert_frame_equal(tuner.ranking, ranking)  # last valid state is kept
    assert tuner.spec == spec
    tuner.w_cost.value = 1.0
    assert "best:" in tuner.message.value or "tied:" in tuner.message.value


def _literal_text(tuner):
    return html.unescape(re.sub(r"<[^>]+>", "", tuner.literal.value))


def test_missing_column_is_a_clear_error(cases):
    with pytest.raises(mk.MetrickitError, match="column 'latency' is not in the frame"):
        tune_spec(cases, latency="latency")


def test_tradeoff_marks_the_pareto_front(cases):
    ax = plots.tradeoff(cases, highlight="base")
    means = plots.candidate_means(cases, ["latency_ms", "accuracy", "cost_usd"])
    mask = plots.pareto_front(means, maximize=("accuracy",), minimize=("latency_ms", "cost_usd"))
    # The front by hand: a candidate is off it when another is at least as accurate, fast
    # and cheap, and better on one of them (NaN = not measured, left out of the means).
    rows = {c: (g["accuracy"].mean(), g["latency_ms"].mean(), g["cost_usd"].mean())
            for c, g in cases.groupby("candidate")}
    dominated = {c for c, (a, lat, usd) in rows.items() for o, (a2, lat2, usd2) in rows.items()
                 if o != c and a2 >= a and lat2 <= lat and usd2 <= usd
                 and (a2, lat2, usd2) != (a, lat, usd)}
    assert dict(zip(means["candidate"], mask, strict=True)) == {c: c not in dominated
                                                                 for c in rows}
    assert mask.sum() >= 3 and "base-v0" in dominated  # base beats its predecessor outright
    unit = plots.unit_for("latency_ms", means["latency_ms"])
    assert ax.get_xlabel().startswith(unit.label)
    assert ax.get_ylabel().startswith("accuracy")
    front = [line for line in ax.get_lines() if line.get_label() == "Pareto front"]
    assert len(front) == 1 and len(front[0].get_xdata()) == mask.sum()


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
    columns = [t.get_text() for t in ax.get_xticklabels()]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert columns == ["b", "a"]  # best candidate first
    assert image[rows.index("t1"), columns.index("b")] == pytest.approx(0.9)


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
        tuner._schedule.cost = lambda: 100.0  # an update slower than the fast threshold
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
    assert during == 1  # the first event updated at once; the rest waited
    assert after == 2  # one more update once they stopped, with the last value
    assert speed == "1.0"


def test_a_key_press_after_a_pause_updates_at_once(cases, capsys):
    import asyncio

    async def presses() -> list[int]:
        tuner = tune_spec(cases, debounce_ms=50)
        tuner._schedule.cost = lambda: 100.0  # slower than the fast threshold
        updates: list[int] = []
        original = tuner._schedule.fn
        tuner._schedule.fn = lambda: (updates.append(1), original())[1]
        seen = []
        for value in (0.3, 0.5):  # two presses with a pause between them
            tuner.w_speed.value = value
            seen.append(len(updates))
            await asyncio.sleep(0.1)
        return seen

    seen = asyncio.run(presses())
    capsys.readouterr()
    assert seen == [1, 2]  # each press updated before the call returned


def test_fast_updates_skip_the_debounce(cases, capsys):
    import asyncio

    from metrickit.widgets import _FAST_MS

    async def drag() -> tuple[int, str]:
        tuner = tune_spec(cases, debounce_ms=50)
        tuner._schedule.cost = lambda: _FAST_MS / 2  # the last update was fast
        updates = []
        original = tuner._schedule.fn
        tuner._schedule.fn = lambda: (updates.append(1), original())[1]
        for value in (0.3, 0.5, 0.7):
            tuner.w_speed.value = value
        return len(updates), str(tuner.spec["weights"]["speed"])

    during, speed = asyncio.run(drag())
    capsys.readouterr()
    assert during == 3 and speed == "0.7"  # each event updated at once, no waiting


def test_update_timings_and_cached_part_scores_match_score_arrays(cases):
    # A weight move recombines cached part scores: the same numbers as the spec's own
    # vectorised scoring, to the last bit, and the timings say what the update cost.
    tuner = tune_spec(cases, debounce_ms=0)
    for value in (0.35, 0.6):
        tuner.w_cost.value = value
        spec = mk.RewardSpec.from_dict(tuner.spec)
        d = tuner.data
        expected = spec.score_arrays(d.acc, d.lat, d.cost)
        got = tuner._scores(spec)
        for key, values in expected.items():
            np.testing.assert_array_equal(got[key], values)
    assert {"recompute_ms", "draw_ms", "text_ms", "update_ms"} <= set(tuner.timings)
    assert tuner.timings["build_ms"] == 0  # the figure was updated, not built anew
    tuner.speed_ref.value = tuner.speed_ref.options[1][1]
    assert len(tuner._part_cache) >= 4  # a new speed part; accuracy and cost reused


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


# -- the tuner on a table shaped like a real agent benchmark (tests/benchmark_like.py) --------


@pytest.fixture(scope="module")
def bench_tuner():
    from benchmark_like import benchmark_cases

    cases = benchmark_cases(seed=0)
    return cases, tune_spec(cases, debounce_ms=0)


def _visible_render(tuner):
    """Overlapping and cut-off texts of the tuner's figure, moving artists included."""
    from plot_checks import outside, overlapping

    fig = tuner.figure()
    dynamic = tuner._artists["dynamic"]
    for artist in dynamic:
        artist.set_animated(False)
    try:
        return overlapping(fig), outside(fig)
    finally:
        for artist in dynamic:
            artist.set_animated(True)


def test_references_default_to_the_data(bench_tuner):
    cases, tuner = bench_tuner
    means = cases.groupby("candidate")[["latency_ms", "cost_usd"]].mean()
    speed, cost = tuner.spec["speed"]["reference"], tuner.spec["cost"]["reference"]
    assert speed == float(f"{means['latency_ms'].median():.2g}")
    assert cost == float(f"{means['cost_usd'].median():.2g}")
    assert speed > 60_000  # minutes, not the 2,000 ms example
    literal = _literal_text(tuner)
    assert "median of the candidates' mean latency" in literal
    assert "median of the candidates' mean cost" in html.unescape(tuner.references.value)
    # the speed part now separates the candidates instead of scoring all near 0
    spread = tuner.ranking["speed_score"].max() - tuner.ranking["speed_score"].min()
    assert spread > 0.2 and tuner.ranking["speed_score"].max() < 0.9


def test_literal_equals_what_the_sliders_show(bench_tuner):
    import ast

    _, tuner = bench_tuner
    for slider, part in ((tuner.speed_ref, "speed"), (tuner.cost_ref, "cost")):
        for label, value in slider.options[:: max(1, len(slider.options) // 7)]:
            slider.value = value
            assert slider.label == label
            literal = _literal_text(tuner)
            assert f'"{part}": {{"reference": {label}}}' in literal
            parsed = ast.literal_eval(literal.split("=", 1)[1])
            assert parsed == tuner.spec and parsed[part]["reference"] == value
    tuner.w_speed.value = 0.15000000000000002  # a step of 0.05 can land off the grid
    assert '"speed": 0.15' in _literal_text(tuner) and tuner.spec["weights"]["speed"] == 0.15


def test_bars_follow_the_rank_and_the_title_fits(bench_tuner):
    _, tuner = bench_tuner
    widths = [b.get_width() for b in tuner._artists["bars"]]
    assert widths == pytest.approx(tuner.ranking["reward"].to_list())
    assert widths == sorted(widths, reverse=True)
    assert all(not t.get_text().startswith("openrouter/") for t in tuner._artists["names"])
    title = tuner._artists["title"].get_text()
    assert title.startswith(("best: ", "tied: "))
    overlaps, cut = _visible_render(tuner)
    assert overlaps == [] and cut == []


def test_accuracy_as_error_flips_the_pareto_direction(cases, capsys):
    errors = cases.assign(accuracy=1.0 - cases["accuracy"])  # an error: lower is better
    tuner = tune_spec(errors, debounce_ms=0)
    capsys.readouterr()
    tuner.acc_is_error.value = True
    means = plots.candidate_means(errors, ["accuracy", "latency_ms", "cost_usd"])
    expected = plots.pareto_front(means, maximize=(),
                                  minimize=("latency_ms", "cost_usd", "accuracy"))
    ax = tuner._artists["trade_ax"]
    front = next(line for line in ax.get_lines() if line.get_label() == "Pareto front")
    assert len(front.get_xdata()) == expected.sum()
    assert "lower is better" in ax.get_ylabel()


def test_controls_are_aligned(tuner):
    controls = tuner._controls()
    assert {c.layout.width for c in controls} == {controls[0].layout.width}
    assert {c.style.description_width for c in controls} == {"190px"}


# -- layout: a 1,280-px JupyterLab with the file browser open (~1,000 px of notebook) -------

#: the output area of such a notebook, in px (the real-browser benchmark measures it)
_NOTEBOOK_PX = 900


def _px(value: str) -> float:
    assert value.endswith("px"), value
    return float(value[:-2])


def _fourteen_long_names():
    rng = np.random.default_rng(14)
    names = [f"openrouter/vendor-{i}/a-rather-long-model-name-{i}-preview · harness=pi"
             for i in range(14)]
    cand = np.repeat(np.arange(14), 30)
    return pd.DataFrame({
        "candidate": np.array(names)[cand],
        "task_name": np.tile([f"t{i}" for i in range(30)], 14),
        "accuracy": (rng.random(cand.size) < rng.uniform(.3, .9, 14)[cand]) * 1.0,
        "latency_ms": rng.lognormal(11, .5, cand.size),
        "cost_usd": rng.lognormal(-1, .7, cand.size),
    })


def test_layout_wraps_and_fits_a_narrow_notebook(capsys):
    tuner = tune_spec(_fourteen_long_names(), debounce_ms=0)
    capsys.readouterr()
    top = tuner.top.layout
    assert top.flex_flow == "row wrap" and top.max_width == "100%"
    controls, result = tuner.top.children
    # the controls keep their width (never squeezed to nothing) and fit the notebook
    assert controls.layout.flex == "0 0 auto"
    assert _px(controls.layout.min_width) == _px(controls.layout.width) <= _NOTEBOOK_PX
    for control in tuner._controls():
        assert _px(control.layout.width) <= _px(controls.layout.width)
        assert _px(control.style.description_width) < _px(control.layout.width) - 200
    # the verdict and table take the rest of the row, or the next row
    assert result.layout.min_width and _px(result.layout.min_width) <= _NOTEBOOK_PX
    assert tuner.table.layout.overflow.startswith("auto")
    # the plot image scales down to the output area instead of being cut
    image = tuner._image.layout
    assert image.max_width == "100%" and image.height == "auto" and image.margin == "0"
    assert tuner.widget.layout.max_width == "100%"


def test_ranking_table_shows_short_whole_names(capsys):
    tuner = tune_spec(_fourteen_long_names(), debounce_ms=0)
    capsys.readouterr()
    cells = re.findall(r"<td>([^<]*)</td>", tuner.table.value)
    shown = [c for c in cells if "model-name" in c]
    assert len(shown) == 14
    assert not any(c.startswith("openrouter/") or "harness=pi" in c for c in shown)
    assert not any("…" in c for c in shown)  # the model is whole


def test_table_names_follow_the_slot_not_the_label(capsys):
    cases = pd.DataFrame({"candidate": [True, 1, True, 1], "accuracy": [1.0, 0.0, 1.0, 0.0],
                          "latency_ms": [100.0] * 4, "cost_usd": [0.001] * 4})
    tuner = tune_spec(cases, debounce_ms=0)
    capsys.readouterr()
    cells = re.findall(r"<tr>\s*<td>([^<]*)</td>", tuner.table.value)
    assert cells == ["True", "1"]


def test_in_a_kernel_the_plot_goes_out_before_the_texts(cases, capsys):
    import asyncio

    async def press() -> tuple[bool, bool, bool]:
        tuner = tune_spec(cases, debounce_ms=50)
        await asyncio.sleep(0.1)  # the first texts
        png, table = tuner.png, tuner.table.value
        tuner.w_speed.value = 0.9  # after a pause: updates at once
        plot_first = tuner.png != png and tuner.table.value == table
        await asyncio.sleep(0.1)
        texts_after = tuner.table.value != table
        tuner.w_accuracy.value = tuner.w_speed.value = tuner.w_cost.value = 0.0
        await asyncio.sleep(0.2)  # no stale texts overwrite the problem
        return plot_first, texts_after, "Cannot score" in tuner.message.value

    plot_first, texts_after, problem_kept = asyncio.run(press())
    capsys.readouterr()
    assert plot_first and texts_after and problem_kept


def test_outside_a_kernel_no_event_loop_is_made():
    # asking the policy for the thread's loop would create one that nobody closes (an
    # "unclosed event loop" ResourceWarning later, in whatever test collects it)
    import asyncio

    from metrickit.widgets import _running_loop

    policy = asyncio.get_event_loop_policy()
    before = getattr(getattr(policy, "_local", None), "_loop", None)
    assert _running_loop() is None
    assert getattr(getattr(policy, "_local", None), "_loop", None) is before


@pytest.mark.parametrize("labels", [["b", "a", "c", "d"], [True, 1, "x", 0]])
def test_the_ranking_is_the_table_sorted_by_rank_p_best_and_label(labels, capsys):
    # a slider move draws from numpy columns; tuner.ranking, built on demand, must be the
    # table pandas sorts by rank, then P(best) (higher first), then the label
    rng = np.random.default_rng(3)
    n = 240
    cases = pd.DataFrame({
        "candidate": pd.Series([labels[i % 4] for i in range(n)], dtype=object),
        "task": [f"t{i // 4 % 30}" for i in range(n)],
        "accuracy": (rng.random(n) < 0.6).astype(float),
        "latency_ms": rng.lognormal(7, 0.5, n),
        "cost_usd": np.round(rng.lognormal(-6, 0.5, n), 3),
    })
    # the second and third labels ran exactly what the first did: equal rewards, equal
    # rank, the later keys decide
    first = cases[cases["candidate"].map(lambda c: c is labels[0])]
    twins = [first.assign(candidate=pd.Series([lab] * len(first), dtype=object,
                                              index=first.index)) for lab in labels[1:3]]
    cases = pd.concat([cases[cases["candidate"].map(lambda c: c is labels[3])], first, *twins],
                      ignore_index=True)
    tuner = tune_spec(cases, debounce_ms=0)
    capsys.readouterr()
    for weight in (0.0, 0.3, 1.0):
        tuner.w_speed.value = weight
        table = pd.DataFrame(tuner._ranked._unsorted)
        table["rank"] = table["reward"].rank(ascending=False, method="min").astype(int)
        expected = table.sort_values(["rank", "p_best", "candidate"],
                                     ascending=[True, False, True]).reset_index(drop=True)
        pd.testing.assert_frame_equal(tuner.ranking, expected)
        assert expected["rank"].nunique() < len(expected)  # ties were broken
        assert tuner._artists["order"].tolist() == expected["_slot"].tolist()
