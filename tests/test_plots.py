"""Plots return their Axes and draw what the data says."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np

import metrickit as mk
from metrickit.report import plots


def _comparison():
    df = mk.read_rewards([{"r": 1}, {"r": 0}, {"r": 1}, {"r": 1}, {"r": 0.5}, None])
    df["agent"] = ["a", "b", "a", "b", "a", "b"]
    return mk.compare_metrics(df, {"mean": "mean", "strict": mk.pass_rate(1.0)}, by="agent")


def test_metric_intervals_uses_given_axes():
    cmp = _comparison()
    _, ax = plt.subplots()
    assert plots.metric_intervals(cmp, ax=ax) is ax
    lines = [c for c in ax.containers]
    assert len(lines) == 2  # one errorbar container per metric
    ys = sorted(np.round(lines[0].lines[0].get_ydata(), 6).tolist())
    assert ys == sorted(np.round(cmp.table[cmp.table.metric == "mean"]["value"], 6).tolist())


def test_rank_bump_plots_ranks():
    cmp = _comparison()
    ax = plots.rank_bump(cmp)
    assert len(ax.get_lines()) == 2  # one line per group
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # rank 1 at the top
