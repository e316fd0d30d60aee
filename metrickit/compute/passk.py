"""pass@k exactly as Harbor computes it, plus k = 1, any k, pass^k and per-task detail.

Harbor (``harbor/utils/pass_at_k.py``) groups trials by evaluation and task, and per task
with ``n`` trials of which ``c`` succeeded uses the unbiased estimator
``1 - C(n-c, k) / C(n, k)`` (computed as ``1 - prod((n-c-i)/(n-i) for i < k)``, 1 when
``n - c < k``), averaged over tasks. It reports k in {2, 4, 8, ...} ∪ {5, 10, 15, ...} up
to the fewest trials any task has, and skips an evaluation entirely when any counted
trial's reward has other than one key or a value other than 0 or 1. Under Harbor 0.25 a
trial without a reward is a failure; under 0.26 trials without a valid reward are left out.

:func:`pass_at_k` groups by ``candidate`` by default (one recorded configuration; several
runs of it pool their trials of a task); ``by="eval"`` is Harbor's grouping, and then
``PassAtK.harbor`` equals the ``pass_at_k`` of Harbor's job ``result.json``.

pass^k (all k attempts succeed) uses the matching unbiased estimator ``C(c, k) / C(n, k)``.

Uncertainty: the sampling unit is the task. ``ci_low``/``ci_high`` are Wilson's interval
over tasks with the effective number of trials ``min(N / k, p(1-p) / se**2)`` (``N`` the
group's trials, ``se`` the standard error of the mean of the per-task estimates; Student's
t quantile with ``T - 1`` degrees of freedom), which for k = 1 is the interval
:func:`metrickit.breakdown` gives the same trials. ``best_group`` is the confidence set
for the best candidate at each k (:func:`metrickit.compute.ranking.best_group`: the
candidates' per-task estimates drawn jointly from their task-clustered, paired sampling
distribution): identical candidates are all in it with probability ``confidence``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit._core.display import result_html, result_repr, short_column, short_names
from metrickit._core.frame import Policy
from metrickit._core.harbor_math import harbor_sum
from metrickit.errors import PassAtKSkipped, StatsError

__all__ = ["PassAtK", "PassAtKSkipped", "harbor_k_values", "pass_at_k"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def harbor_k_values(max_k: int) -> list[int]:
    """Harbor's k values for a smallest per-task trial count of ``max_k``.

    Examples
    --------
    >>> harbor_k_values(10)
    [2, 4, 5, 8, 10]
    >>> harbor_k_values(1)
    []
    """
    ks: set[int] = set()
    k = 2
    while k <= max_k:
        ks.add(k)
        k *= 2
    k = 5
    while k <= max_k:
        ks.add(k)
        k += 5
    return sorted(ks)


def _pass_at_k_task(n: int, c: int, k: int) -> float:
    """Harbor's ``_pass_at_k_for_task``, same float operations in the same order."""
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(k):
        product *= (n - c - i) / (n - i)
    return 1.0 - product


def _pass_hat_k_task(n: int, c: int, k: int) -> float:
    if c < k:
        return 0.0
    product = 1.0
    for i in range(k):
        product *= (c - i) / (n - i)
    return product


def _pass_at_k_tasks(n: IntArray, c: IntArray, k: int) -> FloatArray:
    """:func:`_pass_at_k_task` of every task at once (``n``, ``c``: each task's trials and
    successes): the same float operations in the same order, so the same bits; NaN where
    a task has fewer than ``k`` trials."""
    product = np.ones(n.size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(k):
            product *= (n - c - i) / (n - i)
    return np.where(k > n, math.nan, np.where(n - c < k, 1.0, 1.0 - product))


def _pass_hat_k_tasks(n: IntArray, c: IntArray, k: int) -> FloatArray:
    """:func:`_pass_hat_k_task` of every task at once; NaN where a task has fewer than
    ``k`` trials."""
    product = np.ones(n.size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(k):
            product *= (c - i) / (n - i)
    return np.where(k > n, math.nan, np.where(c < k, 0.0, product))


@dataclass(frozen=True)
class _Outcome:
    """A group's outcomes by task: each task's label (first seen first), its trials ``n``
    and its successes ``c``, which is all that pass@k reads of the trials."""

    tasks: Any  # object ndarray
    n: IntArray
    c: IntArray


def _mean(values: Any) -> float:
    # Harbor averages with Python 3.12's builtin sum (compensated); so do we, on any Python.
    arr = np.asarray(values, dtype=np.float64)
    return float(harbor_sum(arr, np.zeros(arr.size, dtype=np.bool_))) / len(values)


@dataclass(frozen=True)
class PassAtK:
    """Result of :func:`pass_at_k`.

    Attributes
    ----------
    harbor
        ``{group: {k: value}}`` by Harbor's rule (``{}`` when Harbor's rule reports nothing
        for that group); with ``by="eval"`` exactly what Harbor stores as ``pass_at_k`` in
        the job's ``result.json``.
    table
        pandas DataFrame, one row per group and k: ``pass_at_k`` with ``ci_low`` and
        ``ci_high`` (its interval over tasks), ``best_group`` (in the confidence set for
        the best group at this k: groups that cannot be told apart from the best are all
        in it), ``note`` (where the interval may fall short: few tasks, or few tasks
        that are not all passed or all failed), ``pass_hat_k`` (pass^k), ``n_tasks``,
        ``min_trials`` and ``harbor`` (whether Harbor reports this k; always False with
        ``value=``, which is not Harbor's rule).
    detail
        pandas DataFrame, one row per group and task: ``n``, ``c`` (successes) and one
        ``pass@k`` / ``pass^k`` column per k in the table.
    skipped
        ``{group: reason}`` for groups with no pass@k (also issued as a
        :class:`PassAtKSkipped` warning).
    notes
        Other things left out (a requested k larger than some task's trial count, running
        trials, trials without a valid reward under policy 0.26, trials without the
        ``value`` key).
    """

    harbor: dict[Any, dict[int, float]]
    table: Any = field(repr=False)
    detail: Any = field(repr=False)
    skipped: dict[Any, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [self._headline(), str(self.table)]
        lines += [f"skipped {label}: {why}" for label, why in self.skipped.items()]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _group_column(self) -> str | None:
        first = self.table.columns[0] if len(self.table.columns) else None
        return None if first in (None, "k") else str(first)

    def _headline(self) -> str:
        """pass@1's best group (or the groups tied for it), over how many tasks."""
        table, group = self.table, self._group_column()
        if not len(table) or group is None or "k" not in table:
            return "pass@k: no group has a pass@k" + (
                f" ({len(self.skipped)} skipped)" if self.skipped else "")
        one = table[table["k"] == 1]
        best = one[one["best_group"].astype(bool)] if "best_group" in one else one.iloc[:0]
        names = dict(zip(one[group], short_names(list(one[group])), strict=True))
        tasks = int(one["n_tasks"].max()) if "n_tasks" in one and len(one) else 0
        text = f"pass@k of {len(one):,} group(s) over up to {tasks:,} task(s)"
        if len(best) == 1 or len(one) == 1:
            row = (best if len(best) else one).iloc[0]
            interval = (f" [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
                        if math.isfinite(row["ci_low"]) and math.isfinite(row["ci_high"])
                        else " (no interval)")
            what = "best pass@1" if len(one) > 1 else "pass@1"
            text += f"; {what}: {names[row[group]]} {row['pass_at_k']:.3f}{interval}"
        elif len(best) > 1:
            text += "; tied for best pass@1: " + ", ".join(names[g] for g in best[group])
        return text

    def _display(self) -> tuple[str, Any, list[str]]:
        group = self._group_column()
        table = self.table.drop(columns=[c for c in ("note",) if c in self.table])
        if group is not None:
            table = short_column(table, group)
        notes = [f"skipped {label}: {why}" for label, why in self.skipped.items()]
        notes += sorted({n for n in self.table.get("note", []) if n})
        return self._headline(), table, notes + list(self.notes)

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="pass@k")

    def __repr__(self) -> str:
        return result_repr("PassAtK", *self._display())


def pass_at_k(
    trials: Any,
    *,
    k: int | Sequence[int] | None = None,
    by: str | Sequence[str] = "candidate",
    task: str = "task_name",
    policy: Policy = "0.25",
    value: str | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> PassAtK:
    """pass@k per candidate (or Harbor's evaluation), with k = 1, chosen k, pass^k and detail.

    Parameters
    ----------
    trials
        A trial table from any metrickit reader (pandas or polars).
    k
        Extra k value(s) to report besides k = 1 and Harbor's own. A k larger than the
        trials of some task gives NaN for that group, with a note and a warning.
    by
        Grouping column(s): ``"candidate"`` (default: one recorded configuration, whose
        runs pool their trials of each task). ``"eval"`` is Harbor's own grouping: with it
        ``harbor`` is Harbor-identical (what the job's ``result.json`` stores) for a
        table of one job; where several runs share an evaluation key their trials pool
        and ``notes`` says so (``by=["run", "eval"]`` gives each run's own). A table
        without the column is refused with a message naming ``by=`` and the columns.
    task
        The task column.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a reward counts as a failure, ``"0.26"`` only
        trials with ``reward_valid`` count. Running trials never count (``notes``).
    value
        Use this 0/1 reward column for the table and detail instead of Harbor's rule
        (the single reward key). ``harbor`` always follows Harbor's rule.
    confidence, seed
        Level of ``ci_low``/``ci_high`` and ``best_group``; seed of the draws behind
        ``best_group``.

    Returns
    -------
    PassAtK

    Raises
    ------
    StatsError
        ``task`` or ``value`` is not a column, or a ``k`` is not a positive integer.

    Warns
    -----
    PassAtKSkipped
        For each group skipped (multi-key or non-binary reward), and for a requested k
        larger than some task's trial count.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_harbor_job("data/harbor_jobs/2025-06-02__10-00-00")
    >>> mk.pass_at_k(trials).harbor  # per candidate
    {'terminus-2 · claude-sonnet-4-5': {2: 0.6666666666666666, 4: 0.8333333333333334}}
    >>> harbor = mk.pass_at_k(trials, by="eval").harbor  # Harbor's grouping (result.json)
    >>> harbor["terminus-2__claude-sonnet-4-5__terminal-bench-mini"]
    {2: 0.6666666666666666, 4: 0.8333333333333334}
    """
    import narwhals as nw
    import pandas as pd

    from metrickit._core.frame import counted_trials, group_indices
    from metrickit.compute.stats import require_by

    columns = list(nw.from_native(trials, eager_only=True).columns)
    require_by(columns, by, "pass_at_k")
    if task not in columns:
        raise StatsError(f"task={task!r} is not a column; columns are {columns}")
    counted = counted_trials(trials, policy=policy)
    rows = counted.frame
    nf = nw.from_native(rows, eager_only=True)
    extra = _extra_k(k)
    trial = _Trials.of(rows, task, value)
    groups = group_indices(rows, by) if len(nf) else {}
    notes: list[str] = _pooled_runs(nf, by)
    harbor: dict[Any, dict[int, float]] = {}
    skipped: dict[Any, str] = {}
    table_rows: list[dict[str, Any]] = []
    detail_rows: list[Any] = []
    for label, idx in groups.items():
        reason = trial.harbor_problem(idx)
        if reason is None:
            outcome = trial.by_task(idx, (trial.status != "null") & (trial.first == 1.0))
            harbor[label] = _harbor_values(outcome)
        else:
            harbor[label] = {}
            skipped[label] = reason
            if value is None:  # with value= the table does not depend on Harbor's rule
                warnings.warn(
                    PassAtKSkipped(f"pass@k not computed for {label!r}: {reason}"), stacklevel=2
                )
        # The table and detail: Harbor's outcomes, or the chosen column.
        if value is not None:
            chosen = trial.chosen_outcome(label, idx, value, notes)
            if chosen is None:
                continue
            outcome = chosen
        elif reason is not None:
            continue
        reported = set(harbor[label]) if value is None else set()
        rows_here, details = _rows(label, outcome, extra, reported, task, notes, confidence)
        table_rows += rows_here
        detail_rows.append(details)

    by_name = by if isinstance(by, str) else "group"
    table = pd.DataFrame(
        table_rows,
        columns=["group", "k", "pass_at_k", "ci_low", "ci_high", "best_group", "note",
                 "pass_hat_k", "n_tasks", "min_trials", "harbor"],
    )
    detail = pd.concat(detail_rows, ignore_index=True) if detail_rows else pd.DataFrame()
    _best_groups(table, detail, task, confidence, seed)
    table = table.rename(columns={"group": by_name})
    if len(detail):
        detail = detail.rename(columns={"group": by_name})
    notes += counted.notes()
    return PassAtK(harbor=harbor, table=table, detail=detail, skipped=skipped, notes=notes)


def _pooled_runs(nf: Any, by: str | Sequence[str]) -> list[str]:
    """A note for each evaluation key that several runs share when grouping by it alone:
    Harbor computes pass@k per job, so their trials of a task are pooled here."""
    import narwhals as nw

    if by != "eval" or "run" not in nf.columns or not len(nf):
        return []
    runs = (nf.select("eval", "run").drop_nulls().unique()
            .group_by("eval").agg(nw.len().alias("runs"), nw.col("run").min().alias("first"))
            .filter(nw.col("runs") > 1).sort("eval"))
    return [
        f"evaluation {key!r} is in {count} runs (the first: {first!r}): by='eval' pools "
        "their trials of each task, where Harbor computes pass@k per job; "
        "by=['run', 'eval'] gives each run's own"
        for key, count, first in runs.iter_rows()
    ]


def _extra_k(k: int | Sequence[int] | None) -> list[int]:
    extra: list[Any] = []
    if isinstance(k, Sequence) and not isinstance(k, str):
        extra = list(k)
    elif k is not None:
        extra = [k]
    for kk in extra:
        if not isinstance(kk, int) or isinstance(kk, bool) or kk < 1:
            raise StatsError(f"k={kk!r}; expected positive integers")
    return extra


@dataclass
class _Trials:
    """What pass@k reads of each trial: Harbor's single-key outcome and, with ``value=``,
    the chosen column (NaN where the key is missing from the trial's evaluation)."""

    keys: list[str]
    present: dict[str, np.ndarray]
    n_keys: np.ndarray  # reward keys the trial has
    first: np.ndarray  # the value of its first key
    status: np.ndarray
    names: list[Any] | None
    task_codes: IntArray  # each row's task, as a position in task_labels
    task_labels: Any  # object ndarray
    chosen: np.ndarray | None

    @classmethod
    def of(cls, rows: Any, task: str, value: str | None) -> _Trials:
        import narwhals as nw

        from metrickit._core.frame import reward_arrays

        nf = nw.from_native(rows, eager_only=True)
        n = len(nf)
        keys, values, _, present = reward_arrays(rows) if n else ([], {}, {}, {})
        n_keys = np.zeros(n, dtype=np.int64)
        first = np.zeros(n, dtype=np.float64)
        for key in keys:
            first = np.where(present[key] & (n_keys == 0), values[key], first)
            n_keys += present[key]
        import pandas as pd

        codes, labels = pd.factorize(
            np.asarray(nf.get_column(task).to_numpy(), dtype=object), use_na_sentinel=False)
        chosen = None
        if value is not None:
            if value not in keys:
                raise StatsError(
                    f"value={value!r} is not a reward column; reward columns: {keys}"
                )
            raw = nf.get_column(value).to_numpy().astype(np.float64)
            chosen = np.where(np.isnan(raw), np.nan, values[value])
        return cls(
            keys=keys,
            present=present,
            n_keys=n_keys,
            first=first,
            # a plain table (no _status) counts whole: every row a trial with its reward
            status=(nf.get_column("_status").cast(nw.String).to_numpy()
                    if "_status" in nf.columns else np.full(n, "ok", dtype=object)),
            names=nf.get_column("trial_name").to_list() if "trial_name" in nf.columns else None,
            task_codes=codes.astype(np.int64),
            task_labels=np.asarray(labels, dtype=object),
            chosen=chosen,
        )

    def harbor_problem(self, idx: np.ndarray) -> str | None:
        """Why Harbor skips this group's pass@k (a trial with other than one 0/1 key): the
        first such trial in row order. A trial without a reward (status ``null``) is a
        failure under 0.25 (0.26's were filtered out before)."""
        idx = np.asarray(idx, dtype=np.intp)
        first = self.first[idx]
        bad = (self.status[idx] != "null") & (
            (self.n_keys[idx] != 1) | ~((first == 0.0) | (first == 1.0)))
        if not bad.any():
            return None
        i = int(idx[int(np.argmax(bad))])
        who = f"trial {self.names[i]!r}" if self.names else f"row {i}"
        if self.n_keys[i] != 1:
            shown = [k for k in self.keys if self.present[k][i]]
            return (
                f"{who} has {self.n_keys[i]} reward keys {shown}; Harbor's pass@k needs "
                "exactly one key with 0/1 values"
            )
        return f"{who} has reward {float(self.first[i])!r}; Harbor's pass@k needs 0 or 1"

    def by_task(self, idx: np.ndarray, success: np.ndarray) -> _Outcome:
        """The group's tasks (first seen first) with their trials and successes."""
        import pandas as pd

        idx = np.asarray(idx, dtype=np.intp)
        local, seen = pd.factorize(self.task_codes[idx], sort=False)
        n = np.bincount(local, minlength=len(seen)).astype(np.int64)
        c = np.bincount(local, weights=np.asarray(success, dtype=bool)[idx],
                        minlength=len(seen)).astype(np.int64)
        return _Outcome(self.task_labels[np.asarray(seen, dtype=np.intp)], n, c)

    def chosen_outcome(
        self, label: Any, idx: np.ndarray, value: str, notes: list[str]
    ) -> _Outcome | None:
        """Outcomes from the ``value`` column, or None (with a note) when it cannot give
        them: missing from the evaluation, or not 0/1."""
        assert self.chosen is not None
        missing = np.isnan(self.chosen[idx])
        if missing.all():
            notes.append(
                f"{label!r}: {value!r} is missing (NA) for every trial, its evaluation has "
                "no such key; no table rows"
            )
            return None
        if missing.any():
            notes.append(
                f"{label!r}: {int(missing.sum())} trial(s) without {value!r} (missing from "
                "their evaluation) left out"
            )
            idx = idx[~missing]
        values = self.chosen[idx]
        bad = ~((values == 0.0) | (values == 1.0))
        if bad.any():
            shown = float(values[int(np.argmax(bad))])
            notes.append(
                f"{label!r}: value {value!r} is {shown!r} for a trial; "
                "pass@k needs 0/1, so no table rows for this evaluation"
            )
            return None
        return self.by_task(idx, self.chosen == 1.0)


def _harbor_values(outcome: _Outcome) -> dict[int, float]:
    """Harbor's ``pass_at_k`` of one evaluation: the k it reports, each task's estimate
    averaged over tasks."""
    n_min = int(outcome.n.min())
    return {k: _mean(_pass_at_k_tasks(outcome.n, outcome.c, k)) for k in harbor_k_values(n_min)}


def _interval(values: Any, trials: float, confidence: float) -> tuple[float, float, str]:
    """Wilson's interval of the mean of per-task estimates in [0, 1] over ``T`` tasks, with
    the effective number of trials ``min(trials, p(1-p) / se**2)`` and the t quantile with
    ``T - 1`` degrees of freedom (the cluster-Wilson of :func:`grouped_intervals`; with
    ``trials`` = N / k, where a pass@k estimate uses its task's trials k at a time). In the
    pass@k coverage benchmark it holds >= 0.94 at 10-100 tasks except where almost every
    task is passed (or failed), which the note flags; a percentile bootstrap over tasks
    holds 0.55-0.92 at 10 tasks."""
    from metrickit._core.dist import t_ppf
    from metrickit.compute.intervals import FEW

    v = np.asarray(values, dtype=np.float64)
    t_count = v.size
    p = float(v.mean())
    if t_count < 2:
        return math.nan, math.nan, "one task: no interval"
    se = float(v.std(ddof=1)) / math.sqrt(t_count)
    pq = p * (1 - p)
    n_eff = min(trials, pq / se**2) if pq > 0 and se > 0 else float(t_count)
    z = float(t_ppf(0.5 + confidence / 2, t_count - 1))
    denom = 1 + z * z / n_eff
    centre = (p + z * z / (2 * n_eff)) / denom
    half = z * math.sqrt(pq / n_eff + z * z / (4 * n_eff * n_eff)) / denom
    low, high = max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))
    note = ""
    if t_count < FEW:
        note = f"few tasks ({t_count})"
    elif min(int(np.sum(v > 0)), int(np.sum(v < 1))) < FEW:
        note = "few tasks with a success or a failure"
    return low, high, note


def _best_groups(
    table: Any, detail: Any, task: str, confidence: float, seed: int
) -> None:
    """Fill ``table["best_group"]``: per k, the confidence set for the best group, from the
    groups' per-task estimates paired by task."""
    import pandas as pd

    from metrickit.compute.ranking import MeanDraws, best_group

    if not len(table):
        return
    # the rows, codes and draws of a set of groups, shared by the k at which they all have
    # a value (usually every k): the same draws, as computing them again would give
    shared: dict[tuple[int, ...], tuple[Any, Any]] = {}
    codes, labels = pd.factorize(detail["group"], sort=False)
    for kk, part in table.groupby("k", sort=False):
        known = part[np.isfinite(part["pass_at_k"].to_numpy(dtype=np.float64))]
        if len(known) == 1:
            table.loc[known.index, "best_group"] = True
        if len(known) < 2:
            continue
        names = known["group"].tolist()
        at = pd.Index(labels).get_indexer(pd.Index(names, dtype=object))
        key = tuple(at.tolist())
        if key not in shared:
            position = np.full(len(labels), -1, dtype=np.intp)
            position[at] = np.arange(len(names), dtype=np.intp)
            rows = np.flatnonzero(position[codes] >= 0)
            groups = position[codes[rows]]
            units = pd.factorize(detail[task].to_numpy()[rows])[0].astype(np.intp)
            shared[key] = rows, MeanDraws(groups, len(names), units, n_draws=1000, seed=seed)
        rows, draws = shared[key]
        x = detail[f"pass@{kk}"].to_numpy(dtype=np.float64)[rows]
        estimate = known["pass_at_k"].to_numpy(dtype=np.float64)
        ri, _ = best_group(names, estimate, draws, x, confidence=confidence, pairs=False)
        table.loc[known.index, "best_group"] = ri.best_group


def _rows(
    label: Any,
    outcome: _Outcome,
    extra: list[int],
    reported: set[int],
    task: str,
    notes: list[str],
    confidence: float,
) -> tuple[list[dict[str, Any]], Any]:
    """One group's table rows (one per k) and detail (a frame, one row per task)."""
    import pandas as pd

    n, c = outcome.n, outcome.c
    n_min = int(n.min())
    ks = sorted({1, *harbor_k_values(n_min), *extra})
    too_big = [kk for kk in ks if kk > n_min]
    if too_big:
        msg = (
            f"{label!r}: k={too_big} exceeds the fewest trials of a task ({n_min}); "
            "pass@k is undefined there (NaN)"
        )
        notes.append(msg)
        warnings.warn(PassAtKSkipped(msg), stacklevel=3)
    at_k = {kk: _pass_at_k_tasks(n, c, kk) for kk in ks}
    hat_k = {kk: _pass_hat_k_tasks(n, c, kk) for kk in ks}
    intervals = {kk: _interval(at_k[kk], int(n.sum()) / kk, confidence)
                 if kk <= n_min else (math.nan, math.nan, "") for kk in ks}
    table = [
        {
            "group": label,
            "k": kk,
            "pass_at_k": math.nan if kk > n_min else _mean(at_k[kk]),
            "ci_low": intervals[kk][0],
            "ci_high": intervals[kk][1],
            "best_group": False,
            "note": intervals[kk][2],
            "pass_hat_k": math.nan if kk > n_min else _mean(hat_k[kk]),
            "n_tasks": len(n),
            "min_trials": n_min,
            "harbor": kk in reported,
        }
        for kk in ks
    ]
    detail = pd.DataFrame({  # lists: each column's type inferred as from the rows' values
        "group": [label] * len(n), task: outcome.tasks.tolist(), "n": n, "c": c,
        **{f"pass@{kk}": at_k[kk] for kk in ks}, **{f"pass^{kk}": hat_k[kk] for kk in ks},
    })
    return table, detail

