"""Matplotlib plots of rewards and metrics.

Every function takes data and an optional ``ax=`` and returns the Axes it drew on. Nothing
here imports ipywidgets; :mod:`metrickit.widgets` calls these functions.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "candidate_means",
    "metric_intervals",
    "pareto_front",
    "rank_bump",
    "reward_distribution",
    "task_heatmap",
    "tradeoff",
]

# Units shown on axes for the columns metrickit knows.
UNITS = {
    "latency_ms": "latency (ms)",
    "cost_usd": "cost (USD)",
    "accuracy": "accuracy",
    "reward": "composite reward",
}


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
        A :class:`~metrickit.compute.metrics.Comparison` or its ``table``.
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
        # No interval (n < 2, or a script metric) stays NaN: no bar, rather than a false 0.
        yerr = np.vstack([value - low, high - value])
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


def _label(column: str) -> str:
    return UNITS.get(column, column)


def candidate_means(
    frame: Any,
    columns: list[str],
    *,
    by: str = "candidate",
    cluster: str | None = "auto",
    confidence: float = 0.95,
) -> Any:
    """Per-group mean, CI low/high and n of each column, plus ``p_front`` and cost per
    success (a small pandas frame, one row a group): see
    :func:`metrickit.compute.ranking.candidate_table`.

    Intervals are :func:`metrickit.compute.stats.mean_ci`'s default: Wilson for 0/1 columns, t cut
    to the range otherwise, clustered by task (``cluster``) when tasks repeat. NaN values
    (not measured) are left out of that column's mean, and a ``<column>_n`` column then
    says how many were measured.
    """
    from metrickit.compute.ranking import candidate_table

    return candidate_table(frame, columns, by=by, cluster=cluster, confidence=confidence)


def grouped_mean_se(
    codes: np.ndarray, x: np.ndarray, n_groups: int, *, se: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-group count, mean and standard error of ``x`` (NaN left out), by ``bincount``.

    Returns ``(n, mean, se)``; ``se`` is None when not asked for, NaN where n < 2.
    """
    measured = np.isfinite(x)
    n = np.bincount(codes, weights=measured, minlength=n_groups)
    xz = np.where(measured, x, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(codes, weights=xz, minlength=n_groups) / n
        if not se:
            return n, mean, None
        dev = np.where(measured, (xz - mean[codes]) ** 2, 0.0)
        sq = np.bincount(codes, weights=dev, minlength=n_groups)
        return n, mean, np.where(n > 1, np.sqrt(sq / np.maximum(n - 1, 1) / n), np.nan)


def pareto_front(
    table: Any,
    *,
    maximize: tuple[str, ...] = ("accuracy",),
    minimize: tuple[str, ...] = ("latency_ms", "cost_usd"),
) -> np.ndarray:
    """Boolean mask of the rows no other row dominates (>= on every maximised column,
    <= on every minimised one, and strictly better on at least one)."""
    cols = [c for c in maximize if c in table] + [c for c in minimize if c in table]
    signs = np.array(
        [1.0] * len([c for c in maximize if c in table])
        + [-1.0] * len([c for c in minimize if c in table])
    )
    if not cols:
        return np.ones(len(table), dtype=bool)
    v = np.column_stack([np.asarray(table[c], dtype=float) for c in cols]) * signs
    ge = (v[:, None, :] >= v[None, :, :]).all(axis=2)  # ge[j, i]: j at least as good as i
    gt = (v[:, None, :] > v[None, :, :]).any(axis=2)
    dominated = (ge & gt).any(axis=0)
    return ~dominated


def _spans_decades(values: np.ndarray) -> bool:
    values = values[np.isfinite(values) & (values > 0)]
    return values.size > 1 and values.max() / values.min() >= 30


def tradeoff(
    frame: Any,
    *,
    x: str = "latency_ms",
    y: str = "accuracy",
    color: str | None = "cost_usd",
    size: str | None = None,
    by: str = "candidate",
    frontier: bool = True,
    highlight: Any = None,
    tied: Any = None,
    log: str | bool = "auto",
    cluster: str | None = "auto",
    ax: Any = None,
) -> Any:
    """Accuracy against latency (and cost) per candidate, with CI whiskers and the Pareto front.

    Whiskers are 95 % intervals of each mean (clustered by task when tasks repeat). The
    front is estimated: each label carries the candidate's probability of being on it
    over task resamples (``front 80%``), and the dashed line joins the candidates on the
    front of the point estimates.

    Parameters
    ----------
    frame
        One row per case: a ``by`` column and numeric ``x``, ``y`` (and ``color``/``size``).
    frontier
        Mark the candidates no other candidate beats on ``y`` (maximised) and on ``x`` and
        ``color``/``size`` (minimised), and join them with a line.
    highlight
        A candidate to mark with a star as the best (the tuner passes the best when it is
        best at 95 %).
    tied
        Candidates tied for best (none of them is best with confidence): each is ringed in
        gold, and no star is drawn.
    log
        ``"auto"`` puts an axis on a log scale when its values span 30x or more.
    """
    import matplotlib.pyplot as plt

    extra = [c for c in (color, size) if c and c not in (x, y)]
    means = candidate_means(frame, [x, y, *extra], by=by, cluster=cluster)
    ax = _axes(ax, (7.0, 4.5))
    xs, ys = means[x].to_numpy(), means[y].to_numpy()
    xerr = np.abs(np.vstack([xs - means[f"{x}_low"], means[f"{x}_high"] - xs]))
    yerr = np.abs(np.vstack([ys - means[f"{y}_low"], means[f"{y}_high"] - ys]))
    # A missing interval (n < 2) stays NaN: no whisker is drawn, rather than a false 0.
    ax.errorbar(
        xs,
        ys,
        xerr=xerr,
        yerr=yerr,
        fmt="none",
        ecolor="0.6",
        elinewidth=1,
        capsize=2,
        zorder=1,
    )
    sizes = 60.0
    if size:
        s = means[size].to_numpy()
        span = np.ptp(s) or 1.0
        sizes = 30 + 170 * (s - s.min()) / span
    if color:
        c = means[color].to_numpy()
        norm = None
        if log is True or (log == "auto" and _spans_decades(c)):
            from matplotlib.colors import LogNorm

            norm = LogNorm(vmin=c[c > 0].min(), vmax=c.max())
        points = ax.scatter(
            xs,
            ys,
            c=c,
            s=sizes,
            cmap="viridis",
            norm=norm,
            zorder=3,
            edgecolors="white",
            linewidths=0.5,
        )
        ax.figure.colorbar(points, ax=ax, label=_label(color), pad=0.01)
    else:
        ax.scatter(xs, ys, s=sizes, zorder=3)
    if frontier:
        minimize = tuple(dict.fromkeys([x, *extra]))
        mask = pareto_front(means, maximize=(y,), minimize=minimize)
        order = np.argsort(xs[mask])
        ax.plot(
            xs[mask][order],
            ys[mask][order],
            color="tab:red",
            linewidth=1.2,
            linestyle="--",
            zorder=2,
            label="Pareto front",
        )
        ax.scatter(
            xs[mask],
            ys[mask],
            s=np.asarray(sizes) * 0 + 140,
            facecolors="none",
            edgecolors="tab:red",
            linewidths=1.5,
            zorder=4,
        )
    p_front = means["p_front"].to_numpy() if "p_front" in means else np.full(len(xs), np.nan)
    for label, xv, yv, pf in zip(means[by], xs, ys, p_front, strict=True):
        text = str(label) if np.isnan(pf) else f"{label} (front {pf:.0%})"
        ax.annotate(text, (xv, yv), textcoords="offset points", xytext=(5, 5), fontsize="small")
    if tied is not None and len(tied) > 1:
        ringed = means[means[by].isin(list(tied))]
        ax.scatter(
            ringed[x], ringed[y], s=260, facecolors="none", edgecolors="goldenrod",
            linewidths=2, zorder=5, label="tied: " + ", ".join(map(str, tied)),
        )
    if highlight is not None and highlight in set(means[by]):
        row = means[means[by] == highlight].iloc[0]
        ax.scatter(
            [row[x]],
            [row[y]],
            s=320,
            marker="*",
            color="gold",
            edgecolors="black",
            zorder=5,
            label=f"best: {highlight}",
        )
    if log is True or (log == "auto" and _spans_decades(xs)):
        ax.set_xscale("log")
    if log is True or (log == "auto" and _spans_decades(ys)):
        ax.set_yscale("log")
    ax.set_xlabel(f"{_label(x)}, mean per {by}")
    ax.set_ylabel(f"{_label(y)}, mean per {by}")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small", frameon=False)
    clustered = any(str(m).startswith("cluster") for m in means.get(f"{y}_method", []))
    ax.set_title(
        f"{_label(y)} vs {_label(x)} (95% CI{', clustered by task' if clustered else ''})"
    )
    plt.setp(ax.get_xticklabels(), rotation=0)
    return ax


def reward_distribution(
    frame: Any, *, column: str = "reward", by: str = "candidate", ax: Any = None
) -> Any:
    """Distribution of a per-case value per candidate: box plots with the mean marked."""
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    labels = pd.Series(nf.get_column(by).to_numpy(), dtype=object)
    values = nf.get_column(column).cast(nw.Float64).to_numpy()
    groups = sorted(labels.unique(), key=str)
    data = [values[(labels == g).to_numpy()] for g in groups]
    ax = _axes(ax, (max(5.0, 0.6 * len(groups) + 3), 3.8))
    ax.boxplot(data, orientation="horizontal", widths=0.6, flierprops={"markersize": 3})
    ax.scatter(
        [d.mean() for d in data],
        np.arange(1, len(groups) + 1),
        marker="D",
        color="tab:red",
        zorder=3,
        label="mean",
    )
    ax.set_yticks(np.arange(1, len(groups) + 1), [str(g) for g in groups])
    ax.set_xlabel(_label(column))
    ax.set_ylabel(by)
    ax.legend(loc="lower right", fontsize="small", frameon=False)
    ax.set_title(f"{_label(column)} per {by}")
    ax.grid(axis="x", alpha=0.3)
    return ax


def task_heatmap(
    trials: Any,
    *,
    task: str = "task_name",
    by: str = "agent",
    value: str = "reward",
    ax: Any = None,
) -> Any:
    """Mean ``value`` for each task (rows) and candidate (columns) from a trial table."""
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(trials, eager_only=True)
    df = pd.DataFrame(
        {
            task: nf.get_column(task).to_list(),
            by: nf.get_column(by).to_list(),
            value: nf.get_column(value).cast(nw.Float64).to_numpy(),
        }
    )
    grid = df.pivot_table(index=task, columns=by, values=value, aggfunc="mean")
    ax = _axes(ax, (max(4.0, 0.8 * grid.shape[1] + 3), max(3.0, 0.28 * grid.shape[0] + 1.5)))
    image = ax.imshow(
        grid.to_numpy(),
        aspect="auto",
        cmap="RdYlGn",
        vmin=0,
        vmax=max(1.0, float(np.nanmax(grid.to_numpy())) if grid.size else 1.0),
        interpolation="nearest",
    )
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns], rotation=30, ha="right")
    ax.set_yticks(range(grid.shape[0]), [str(i) for i in grid.index], fontsize="small")
    ax.set_xlabel(by)
    ax.set_ylabel(task)
    ax.figure.colorbar(image, ax=ax, label=f"mean {value}")
    ax.set_title(f"mean {value} per {task} and {by}")
    return ax
