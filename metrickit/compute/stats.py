"""Uncertainty for means of rewards, and paired comparison of two runs.

Every function here takes plain arrays (or a trial frame for :func:`compare_runs` and
:func:`breakdown`) and returns small frozen records, so the numbers can be checked
against scipy and statsmodels (the tests do exactly that):

* :func:`mean_ci`: a mean with its standard error and confidence interval, by the
  t distribution (``"analytic"``), clustered by task (``"cluster"``), bootstrap
  (``"bootstrap"`` percentile, ``"bca"``) or Wilson (``"wilson"``, 0/1 values).
* :func:`bootstrap_ci`: the seeded, vectorised bootstrap behind the above, for any
  statistic; it draws the same resamples as ``scipy.stats.bootstrap`` given the same seed.
* :func:`paired_difference` and :func:`mcnemar_exact`: two runs over the same items.
* :func:`compare_runs`: two candidates (or runs, models, ...) of a trial table, paired
  task by task on the tasks both ran.
* :func:`breakdown`: n, mean ± CI, errors, cost and latency per group (per candidate by
  default).

The trials that count are :func:`metrickit._core.frame.counted_trials`'s (running trials
never do); a task is ``(source, task_name)`` (:func:`task_labels`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from metrickit.compute.intervals import (
    FEW,
    MEAN_METHODS,
    SKEWED,
    GroupedIntervals,
    Interval,
    MeanMethod,
    bootstrap_ci,
    grouped_intervals,
    mean_ci,
    unit_means,
)
from metrickit.compute.paired import (
    RunComparison,
    compare_runs,
    mcnemar_exact,
    paired_difference,
    paired_t,
)
from metrickit.compute.power import min_detectable_difference, tasks_needed
from metrickit.compute.tables import (
    TASK_COLUMNS,
    as_pandas,
    group_codes,
    like,
    require_by,
    task_codes,
    task_labels,
    value_column,
)
from metrickit.errors import StatsError

if TYPE_CHECKING:
    from metrickit._core.frame import Policy

__all__ = [
    "FEW",
    "SKEWED",
    "TASK_COLUMNS",
    "GroupedIntervals",
    "Interval",
    "RunComparison",
    "StatsError",
    "bootstrap_ci",
    "breakdown",
    "compare_runs",
    "group_codes",
    "grouped_intervals",
    "mcnemar_exact",
    "mean_ci",
    "min_detectable_difference",
    "paired_difference",
    "paired_t",
    "require_by",
    "task_codes",
    "task_labels",
    "tasks_needed",
]


def breakdown(
    trials: Any,
    by: str | Sequence[str] = "candidate",
    *,
    value: str | None = None,
    method: MeanMethod | str = "auto",
    confidence: float = 0.95,
    cluster: str | None = "auto",
    policy: Policy = "0.25",
    seed: int = 0,
) -> Any:
    """One row per group: n, tasks, mean ± CI, errors, mean cost and mean latency.

    Parameters
    ----------
    trials
        A trial table from any metrickit reader (or any frame with the ``by`` and value
        columns).
    by
        Column(s) to group by: ``"candidate"`` (default: one recorded configuration, what
        every reader fills), or e.g. ``"eval"`` (Harbor's evaluations), ``["agent",
        "model"]``, ``"task_name"``. A table without the column is refused with a message
        naming ``by=`` and the columns there are.
    value
        Reward column; default the table's only reward key.
    method
        Interval method of :func:`mean_ci`. ``"auto"`` (default): Wilson for 0/1 values,
        t cut to the value range otherwise, both clustered by task where a group has
        several attempts of a task.
    cluster
        The task column; ``"auto"`` takes ``task_name`` (or ``task``, ``case_id``, ...)
        when the frame has one. ``None`` treats every trial as independent (explicitly).
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0, ``"0.26"`` it is
        left out (the group's ``note`` says how many). Running trials never count.
    confidence, seed
        As in :func:`mean_ci`.

    Returns
    -------
    DataFrame (same backend as ``trials``)
        Columns ``*by, n, n_tasks, mean, se, ci_low, ci_high, method, note, harbor_mean,
        n_errors, n_running, mean_cost_usd, mean_latency_ms``. ``mean`` (and its interval,
        and the cost and latency means) is the estimand of every metrickit interval,
        comparison and rank: the mean over tasks of each task's mean over its counted
        attempts (Miller 2024, "Adding Error Bars to Evals"), so a task that lost attempts
        (timeouts left out under policy 0.26, retries) still weighs one task.
        ``harbor_mean`` is Harbor's metric, the mean over trials, exactly; the two are
        equal when every task has the same number of attempts, and ``note`` says when
        Harbor's lies outside the interval. Running trials are not in ``n`` or
        the mean; ``n_running`` counts them (a running trial whose configuration is not
        recorded yet belongs to no group). A trial whose evaluation has no ``value`` key
        (NA) is left out of ``n`` and the mean, and ``note`` says so. Errors are finished
        trials with an ``exception_type``; latency is ``total_ms`` (the whole trial).
        ``note`` also flags intervals whose coverage may fall short ("few tasks").

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2"] * 2, "model": ["m1", "m1", "m2", "m2"],
    ...                    "ok": [1, 0, 1, 1]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    >>> mk.breakdown(t)[["candidate", "n", "n_tasks", "mean"]]
      candidate  n  n_tasks  mean
    0        m1  2        2   0.5
    1        m2  2        2   1.0
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials, ungrouped_running

    if method not in MEAN_METHODS:
        raise StatsError(f"method={method!r}; expected one of {', '.join(map(repr, MEAN_METHODS))}")
    original = trials
    df_all = as_pandas(trials)
    by_cols = require_by(list(df_all.columns), by, "breakdown")
    # A running trial whose group is not known yet (Harbor writes config.json after the
    # folder) forms no group of its own: it never counts, and it is not a candidate.
    unknown = ungrouped_running(df_all, by_cols)
    if unknown.any():
        df_all = df_all[~unknown].reset_index(drop=True)
    counted = counted_trials(df_all, policy=policy)
    df = counted.frame
    every = np.ones(len(df_all), dtype=bool)
    done = every if counted.keep is None else np.asarray(counted.keep, dtype=bool)
    running_mask = ~every if counted.running is None else np.asarray(counted.running, dtype=bool)
    left_out_mask = ~done & ~running_mask  # policy 0.26: no valid reward
    column = value_column(df, value)
    keys_all = pd.Series(
        list(zip(*(df_all[c].tolist() for c in by_cols), strict=True)), dtype=object
    )
    codes, uniques = pd.factorize(keys_all, use_na_sentinel=False)
    x = pd.to_numeric(df_all[column]).to_numpy(dtype=np.float64, na_value=np.nan)
    na = done & np.isnan(x)  # the key is absent from the trial's whole evaluation
    x = np.where(done, x, np.nan)
    measured = done & ~na
    units, _ = task_codes(df_all, cluster)
    n_groups = len(uniques)
    if method == "auto":
        gi = grouped_intervals(codes, n_groups, x, clusters=units, confidence=confidence)
        stats_cols: dict[str, Any] = {
            "mean": gi.mean, "se": gi.se, "ci_low": gi.low, "ci_high": gi.high,
            "method": gi.method, "note": gi.note,
        }
    else:
        cis = []
        for i in range(n_groups):
            rows = (codes == i) & measured
            if not rows.any():
                cis.append(Interval(math.nan, math.nan, math.nan, math.nan, 0, "none", confidence))
                continue
            clusters = units[rows] if units is not None else None
            cis.append(mean_ci(x[rows], method=method, confidence=confidence,
                               clusters=clusters, seed=seed))
        stats_cols = {
            "mean": [c.estimate for c in cis], "se": [c.se for c in cis],
            "ci_low": [c.low for c in cis], "ci_high": [c.high for c in cis],
            "method": [c.method for c in cis], "note": [c.note for c in cis],
        }
    n_measured = np.bincount(codes, weights=measured, minlength=n_groups).astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        harbor = np.bincount(codes, weights=np.where(measured, x, 0.0),
                             minlength=n_groups) / n_measured
    # NA: the key is absent from a trial's whole evaluation; such trials carry no value
    n_na = np.bincount(codes, weights=na, minlength=n_groups).astype(int)
    n_left = np.bincount(codes, weights=left_out_mask, minlength=n_groups).astype(int)
    group_notes = list(stats_cols["note"])

    def add(i: int, text: str) -> None:
        group_notes[i] = f"{group_notes[i]}; {text}" if group_notes[i] else text

    for i in np.flatnonzero(n_na).tolist():
        if not n_measured[i]:
            group_notes[i] = f"{column!r} is missing (NA): no trial here has that reward key"
        else:
            add(i, f"{n_na[i]} trial(s) without {column!r} (missing, NA) left out")
    for i in np.flatnonzero(n_left).tolist():
        add(i, f"{n_left[i]} trial(s) without a valid reward left out (policy {policy})")
    for i in range(n_groups):
        low, high = stats_cols["ci_low"][i], stats_cols["ci_high"][i]
        if math.isfinite(harbor[i]) and not low <= harbor[i] <= high:
            add(i, f"Harbor's metric (mean over trials) {harbor[i]:.4g} lies outside the "
                   f"interval of the mean over tasks: tasks have unequal attempts")
    stats_cols["note"] = group_notes
    if units is not None:
        pairs = pd.DataFrame({"g": codes[measured], "t": units[measured]}).drop_duplicates()
        n_tasks = np.bincount(pairs["g"].to_numpy(), minlength=n_groups)
    else:
        n_tasks = n_measured
    out = pd.DataFrame({c: [label[i] for label in uniques] for i, c in enumerate(by_cols)})
    out["n"] = n_measured
    out["n_tasks"] = n_tasks
    for stat_name, stat_values in stats_cols.items():
        out[stat_name] = stat_values
    finished_mask = ~running_mask
    finished = df_all[finished_mask]
    fin_codes = codes[finished_mask]

    def group_mean(col: str) -> Any:
        # the same estimand as the reward's: the mean over tasks of each task's mean
        if col not in df_all.columns:
            return np.full(n_groups, np.nan)
        values = pd.to_numeric(finished[col]).to_numpy(dtype=np.float64, na_value=np.nan)
        cells = None if units is None else units[finished_mask]
        cm, cg, _ = unit_means(fin_codes, n_groups, values, cells)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.bincount(cg, weights=cm, minlength=n_groups) / np.bincount(
                cg, minlength=n_groups)

    out["harbor_mean"] = harbor
    out["n_errors"] = (
        np.bincount(fin_codes, weights=finished["exception_type"].notna().to_numpy(),
                    minlength=n_groups).astype(int)
        if "exception_type" in df_all.columns else 0
    )
    out["n_running"] = np.bincount(codes, weights=running_mask, minlength=n_groups).astype(int)
    out["mean_cost_usd"] = group_mean("cost_usd")
    out["mean_latency_ms"] = group_mean("total_ms")
    return like(original, out)
