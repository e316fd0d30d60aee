"""Matplotlib plots of rewards and metrics.

Every function takes data and an optional ``ax=`` and returns the Axes it drew on. Nothing
here imports ipywidgets; :mod:`metrickit.widgets` calls these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["metric_intervals", "rank_bump"]


def _axes(ax: Any, figsize: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _table(comparison: Any) -> Any:
    return comparison.table if hasattr(comparison, "table") else comparison


def metric_intervals(comparison: Any, *, metrics: list[str] | None = None, ax: Any = None) -> Any:
    """Each metric's value per group, with its confidence interval as error bars.

    Groups along the x axis, one colour and offset per metric, so the reader sees both
    the value and whether the intervals of two groups overlap.

    Parameters
    ----------
    comparison
        A :class:`~metrickit.metrics.Comparison` or its ``table``.
    metrics
        Which metric labels to show (default: all).
    """
    table = _table(comparison)
    labels = metrics or list(dict.fromkeys(table["metric"]))
    groups = list(dict.fromkeys(table["group"]))
    ax = _axes(ax, (max(5.0, 1.2 * len(groups) + 2), 3.8))
    width = 0.8 / max(len(labels), 1)
    x = np.arange(len(groups), dtype=float)
    for i, label in enumerate(labels):
        part = table[table["metric"] == label].set_index("group").reindex(groups)
        value = part["value"].to_numpy(dtype=float)
        low = part["ci_low"].to_numpy(dtype=float)
        high = part["ci_high"].to_numpy(dtype=float)
        yerr = np.vstack([value - low, high - value])
        yerr = np.where(np.isfinite(yerr), yerr, 0.0)
        ax.errorbar(
            x + (i - (len(labels) - 1) / 2) * width,
            value,
            yerr=yerr,
            fmt="o",
            capsize=3,
            label=label,
        )
    ax.set_xticks(x, [str(g) for g in groups])
    ax.set_xlabel("group")
    ax.set_ylabel("metric value (95% CI)" if len(labels) > 1 else labels[0])
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.set_title("Metric values with confidence intervals")
    return ax


def rank_bump(comparison: Any, *, metrics: list[str] | None = None, ax: Any = None) -> Any:
    """Rank-change (bump) chart: each group's rank under each metric, 1 at the top.

    Lines that cross show where the choice of metric changes the ranking.
    """
    table = _table(comparison)
    labels = metrics or list(dict.fromkeys(table["metric"]))
    groups = list(dict.fromkeys(table["group"]))
    ax = _axes(ax, (max(5.0, 1.3 * len(labels) + 2), 3.8))
    wide = table.pivot(index="group", columns="metric", values="rank").reindex(groups)[labels]
    x = np.arange(len(labels))
    for group in groups:
        ranks = wide.loc[group].to_numpy(dtype=float)
        ax.plot(x, ranks, marker="o", linewidth=2, label=str(group))
    ax.set_xticks(x, labels, rotation=20, ha="right")
    ax.set_yticks(range(1, len(groups) + 1))
    ax.set_ylim(len(groups) + 0.5, 0.5)
    ax.set_ylabel("rank (1 = best)")
    ax.set_xlabel("metric")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)
    ax.set_title("How the ranking changes with the metric")
    return ax
