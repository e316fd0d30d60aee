"""Image snapshots of every plot: a visual change has to be a conscious one.

Each plot is drawn on seeded data (tests/benchmark_like.py, and the shipped ``runs``
example for the metric comparisons) and compared with its PNG in tests/reporting/baseline_images/
by ``matplotlib.testing.compare.compare_images`` (RMS tolerance ``TOLERANCE``, for font
rasterisation differences between FreeType builds).

After an intended change, regenerate the snapshots and commit them::

    METRICKIT_UPDATE_BASELINES=1 .venv/bin/python -m pytest tests/reporting/test_plot_images.py

then look at the new PNGs before committing (``git diff --stat tests/reporting/baseline_images``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from benchmark_like import benchmark_cases, benchmark_trials
from matplotlib.testing.compare import compare_images

import metrickit as mk
from metrickit.reporting import plots

BASELINES = Path(__file__).parent / "baseline_images"
TOLERANCE = 6.0
DPI = 60


def _comparison():
    runs = mk.examples.load("runs")
    return mk.compare_metrics(
        runs, {"harbor mean": "mean", "strict": mk.pass_rate(1.0, key="correctness")},
        by="_source",
    )


def _metric_intervals():
    return plots.metric_intervals(_comparison()).figure


def _rank_bump():
    return plots.rank_bump(_comparison()).figure


def _tradeoff():
    cases = benchmark_cases(seed=0)
    best = cases.groupby("candidate")["accuracy"].mean().idxmax()
    return plots.tradeoff(cases, highlight=best).figure


def _reward_distribution():
    return plots.reward_distribution(benchmark_cases(seed=0), column="latency_ms").figure


def _candidate_bars():
    return plots.candidate_bars(benchmark_cases(seed=0), column="accuracy").figure


def _task_heatmap():
    return plots.task_heatmap(benchmark_trials(seed=0), by="model").figure


def _summary():
    return plots.summary(benchmark_trials(seed=0), by=["agent", "model"])


FAST = [_metric_intervals, _rank_bump, _reward_distribution, _candidate_bars, _task_heatmap]
SLOW = [_tradeoff, _summary]


def _check(make, tmp_path):
    name = make.__name__.lstrip("_") + ".png"
    fig = make()
    actual = tmp_path / name
    fig.savefig(actual, dpi=DPI)
    plt.close(fig)
    expected = BASELINES / name
    if os.environ.get("METRICKIT_UPDATE_BASELINES"):
        BASELINES.mkdir(exist_ok=True)
        shutil.copyfile(actual, expected)
        pytest.skip(f"wrote {expected}")
    assert expected.exists(), (
        f"no snapshot {expected}; create it with METRICKIT_UPDATE_BASELINES=1 (see the module "
        "docstring)"
    )
    problem = compare_images(str(expected), str(actual), tol=TOLERANCE)
    assert problem is None, problem


@pytest.mark.parametrize("make", FAST, ids=lambda f: f.__name__.lstrip("_"))
def test_plot_matches_its_snapshot(make, tmp_path):
    _check(make, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("make", SLOW, ids=lambda f: f.__name__.lstrip("_"))
def test_slow_plot_matches_its_snapshot(make, tmp_path):
    _check(make, tmp_path)


def test_the_tolerance_catches_a_visual_change(tmp_path):
    """Other data (a different seed) must fail the comparison: the tolerance is not so
    loose that every picture passes."""
    fig = plots.candidate_bars(benchmark_cases(seed=1), column="accuracy").figure
    actual = tmp_path / "candidate_bars.png"
    fig.savefig(actual, dpi=DPI)
    assert compare_images(str(BASELINES / "candidate_bars.png"), str(actual),
                          tol=TOLERANCE) is not None
