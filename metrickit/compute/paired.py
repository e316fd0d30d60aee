"""Two runs over the same tasks: paired differences, McNemar, :func:`compare_runs`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit._core.display import result_html, result_repr, short_names
from metrickit._core.dist import binom_cdf, t_sf
from metrickit._core.values import is_null
from metrickit.compute.intervals import FEW, Interval, as_values, has_spread, mean_ci
from metrickit.compute.power import (
    observed_detectable_difference,
    single_attempt_detectable_difference,
)
from metrickit.compute.tables import as_pandas, require_by, task_labels, value_column
from metrickit.errors import StatsError

if TYPE_CHECKING:
    from metrickit._core.frame import Policy


def paired_difference(
    a: Any,
    b: Any,
    *,
    confidence: float = 0.95,
    method: Literal["bootstrap", "bca", "analytic"] | str = "analytic",
    n_resamples: int = 2000,
    seed: int = 0,
) -> Interval:
    """Mean of ``a - b`` over paired items, with a confidence interval.

    Parameters
    ----------
    a, b
        Values of the two runs, aligned: ``a[i]`` and ``b[i]`` belong to the same item.
    method
        ``"analytic"`` (default: paired t interval, as ``scipy.stats.ttest_rel``; it holds
        its level with few items, where a percentile bootstrap is too narrow),
        ``"bootstrap"`` (percentile; items are resampled, pairs stay together) or ``"bca"``.

    Returns
    -------
    Interval
        The estimate is ``mean(a) - mean(b)``; positive means ``a`` is higher.

    Examples
    --------
    >>> from metrickit.compute.stats import paired_difference
    >>> d = paired_difference([1, 1, 0, 1], [0, 1, 0, 0], method="analytic")
    >>> d.estimate
    0.5
    """
    xa = as_values(a, "a")
    xb = as_values(b, "b")
    if xa.shape != xb.shape:
        raise StatsError(
            f"a has {xa.size} values and b has {xb.size}; a paired difference needs the "
            "same items in both, in the same order"
        )
    d = xa - xb
    if method == "analytic":
        return mean_ci(d, method="analytic", confidence=confidence)
    if method in ("bootstrap", "bca"):
        return mean_ci(d, method=method, confidence=confidence, n_resamples=n_resamples, seed=seed)
    raise StatsError(f"method={method!r}; expected 'bootstrap', 'bca' or 'analytic'")


def _binary(values: Any, what: str) -> npt.NDArray[np.bool_]:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise StatsError(f"{what} must be one-dimensional; got shape {x.shape}")
    bad = ~((x == 0) | (x == 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise StatsError(f"{what}[{i}] is {float(x[i])!r}; McNemar's test needs 0/1 outcomes")
    return x == 1


def mcnemar_exact(a: Any, b: Any) -> tuple[float, float]:
    """McNemar's exact test for paired 0/1 outcomes.

    Parameters
    ----------
    a, b
        Aligned 0/1 outcomes of two runs on the same items.

    Returns
    -------
    (statistic, pvalue)
        ``statistic`` is the smaller of the two discordant counts (a won / b won);
        ``pvalue`` the two-sided exact binomial p-value, capped at 1, as statsmodels'
        ``mcnemar(table, exact=True)``.

    Examples
    --------
    >>> from metrickit.compute.stats import mcnemar_exact
    >>> mcnemar_exact([1, 1, 1, 1, 0], [0, 0, 0, 0, 0])
    (0.0, 0.125)
    """
    xa = _binary(a, "a")
    xb = _binary(b, "b")
    if xa.shape != xb.shape:
        raise StatsError(f"a has {xa.size} outcomes and b has {xb.size}; expected paired outcomes")
    only_a = int(np.sum(xa & ~xb))
    only_b = int(np.sum(~xa & xb))
    statistic = min(only_a, only_b)
    pvalue = min(1.0, 2.0 * float(binom_cdf(statistic, only_a + only_b, 0.5)))
    return float(statistic), pvalue



@dataclass(frozen=True)
class RunComparison:
    """Two candidates (or runs) compared task by task, over the tasks both ran.

    The sampling unit is the task: each side's attempts of a task are averaged first, and
    the comparison is over the per-task differences. Attempt labels never pair trials.
    ``n_tasks`` says how many tasks were paired, ``only_a``/``only_b`` which were left out
    (and ``notes`` repeats both).

    Attributes
    ----------
    a, b
        The two labels compared (values of the ``by`` column).
    value
        The reward column compared.
    difference
        Mean over paired tasks of (``a``'s mean on the task − ``b``'s), with a paired t
        interval over tasks. Positive: ``a`` scores higher.
    pvalue
        Two-sided p-value of the paired t test over tasks (H0: no difference).
    n_tasks
        Number of paired tasks.
    min_detectable
        The difference a comparison of this many tasks would detect 80 % of the time at
        the 5 % level, given the observed spread of the per-task differences (which holds
        the task × candidate interaction; the power is averaged over what the true spread
        may be, by the noncentral t). With one 0/1 attempt a side on every task the power
        is summed exactly over the three-valued differences, at the spread they would
        have at that difference
        (:func:`metrickit.compute.power.single_attempt_detectable_difference`). NaN when
        every task has the same difference: no spread to judge power by (``notes`` says
        so, and ``underpowered`` is True).
    underpowered
        True when the test did not reject and the observed difference is smaller than
        ``min_detectable``, or there is no spread to judge power by: "no difference
        found" then says little.
    mcnemar
        ``(statistic, pvalue)`` of McNemar's exact test, only where pairing is genuine:
        every paired task has exactly one 0/1 trial in each run. Else None (``notes``).
    wins, losses, ties
        Tasks where ``a``'s mean is higher, lower, equal.
    tasks
        pandas DataFrame, one row per paired task: ``n_a``, ``n_b``, ``mean_a``, ``mean_b``,
        ``difference``, ``winner``, ``flip`` (``"pass→fail"``: ``a`` passes the task and
        ``b`` fails it; ``"fail→pass"`` the reverse; a run passes a task when its mean
        there is at least 0.5), ``influence`` (how much the overall difference moves when
        the task is left out: overall minus leave-one-out), and ``trials_a``/``trials_b``
        (the trial folders, when the table has ``trial_dir``).
    only_a, only_b
        Tasks that only one side ran (not in the comparison; ``b``'s under its own labels).
    notes
        Everything left out or not computed, and why.
    """

    a: Any
    b: Any
    value: str
    difference: Interval
    pvalue: float
    n_tasks: int
    min_detectable: float
    underpowered: bool
    mcnemar: tuple[float, float] | None
    wins: int
    losses: int
    ties: int
    tasks: Any = field(repr=False)
    only_a: list[Any] = field(default_factory=list)
    only_b: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def flips(self) -> Any:
        """The tasks one run passes and the other fails, with their trial folders."""
        return self.tasks[self.tasks["flip"] != ""].reset_index(drop=True)

    def __str__(self) -> str:
        d = self.difference
        lines = [
            f"{self.a} vs {self.b} on {self.n_tasks} paired task(s), value {self.value!r}",
            f"  difference (a - b): {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}] "
            f"({d.confidence * 100:g}% paired t over tasks), p = {self.pvalue:.4g}",
            f"  tasks won / lost / tied by {self.a}: {self.wins} / {self.losses} / {self.ties}",
        ]
        flips = self.flips
        if len(flips):
            counts = flips["flip"].value_counts()
            lines.append(
                "  flips: " + ", ".join(f"{k} {v}" for k, v in counts.items())
                + " (see .flips for the tasks and trial folders)"
            )
        if self.mcnemar is not None:
            lines.append(
                f"  McNemar exact: statistic {self.mcnemar[0]:g}, p = {self.mcnemar[1]:.4g}"
            )
        if self.only_a:
            lines.append(f"  only in {self.a}: {self.only_a}")
        if self.only_b:
            lines.append(f"  only in {self.b}: {self.only_b}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _display(self) -> tuple[str, Any, list[str]]:
        """Headline (the pair under their short names), the per-task table, notes."""
        short_a, short_b = (short_names([self.a, self.b])
                            if str(self.a) != str(self.b) else [str(self.a)] * 2)
        d = self.difference
        headline = (
            f"{short_a} vs {short_b} on {self.n_tasks:,} paired task(s), {self.value!r}: "
            f"difference {d.estimate:+.4f} [{d.low:+.4f}, {d.high:+.4f}] "
            f"({d.confidence * 100:g}% paired t over tasks), p = {self.pvalue:.4g}\n"
            f"tasks won / lost / tied by {short_a}: {self.wins} / {self.losses} / {self.ties}"
        )
        if self.mcnemar is not None:
            headline += f"\nMcNemar exact: p = {self.mcnemar[1]:.4g}"
        flips = self.flips
        table = flips if len(flips) else self.tasks
        table = table[[c for c in table.columns if c not in ("trials_a", "trials_b")]]
        if "winner" in table:
            names = {self.a: short_a, self.b: short_b}
            table = table.assign(winner=[names.get(w, w) for w in table["winner"]])
        notes = list(self.notes)
        if self.only_a:
            notes.append(f"{len(self.only_a):,} task(s) only in {short_a}: not compared")
        if self.only_b:
            notes.append(f"{len(self.only_b):,} task(s) only in {short_b}: not compared")
        if len(flips):
            notes.append("the table shows the flips (tasks one side passes and the other "
                         "fails); .tasks has every paired task")
        return headline, table, notes

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="RunComparison")

    def __repr__(self) -> str:
        return result_repr("RunComparison", *self._display())


def paired_t(d: Any, *, confidence: float = 0.95) -> tuple[Interval, float]:
    """Paired t interval and two-sided p-value of the mean of per-task differences ``d``.

    When every difference is the same (no spread), the t statistic is undefined: the
    interval is the point, and the p-value is the exact sign-flip one (``2 / 2**T``, or 1
    when all differences are 0), which is what a permutation test over tasks gives.
    """
    x = as_values(d, "differences")
    t_count = x.size
    iv = mean_ci(x, method="analytic", confidence=confidence)
    if t_count < 2:
        return replace(iv, method="paired-t", note="one task: no interval"), math.nan
    if not has_spread(iv.se, iv.estimate):
        p = 1.0 if not has_spread(abs(iv.estimate), 0.0) else min(1.0, 2.0 / 2.0**t_count)
        note = (f"every task has the same difference ({iv.estimate:+g}): the interval has "
                "no width and says nothing about the tasks not run")
        return replace(iv, low=iv.estimate, high=iv.estimate, method="paired-t",
                       note=note), p
    t_stat = iv.estimate / iv.se
    p = float(2 * t_sf(abs(t_stat), t_count - 1))
    note = f"few tasks ({t_count})" if t_count < FEW else ""
    return replace(iv, method="paired-t", note=note), p



def compare_runs(
    trials: Any,
    a: Any,
    b: Any,
    *,
    by: str = "candidate",
    task: str = "task_name",
    value: str | None = None,
    policy: Policy = "0.25",
    task_map: Mapping[Any, Any] | Callable[[Any], Any] | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> RunComparison:
    """Compare two candidates (or runs, agents, models, ...) of a trial table, task by task.

    Each side's attempts of a task are averaged; the headline is the mean of the per-task
    differences over the tasks **both** sides ran, with a paired t interval and test over
    tasks (its false-positive rate stays at or below 5.6 % with 5-30 tasks in the coverage
    benchmark). McNemar's test is added only when each paired task has one 0/1 trial per
    side. Tasks only one side ran are left out and listed (``only_a``, ``only_b``).

    Parameters
    ----------
    trials
        A trial table from any metrickit reader (pandas or polars), or any frame with the
        ``by``, ``task`` and value columns.
    a, b
        The two values of ``by`` to compare.
    by
        Column that tells the sides apart: ``"candidate"`` (default: one recorded
        configuration, what every reader fills), or ``"eval"``, ``"run"``, ``"agent"``,
        ``"model"``, ... A table without the column is refused with a message naming
        ``by=`` and the columns there are.
    task
        Column that pairs them. A task is ``(source, task_name)``: when the two sides' rows
        hold several sources the label is ``source/task_name`` (a task without a source is
        its own namespace, labelled by its name alone), so tasks of different sources never
        pair by accident.
    value
        Reward column; default the only reward key the two sides have.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0 (Harbor 0.25), ``"0.26"``
        it is left out. Running trials never count; ``notes`` says how many were left out.
        Trials whose evaluation has no ``value`` key (NA) are left out too, with a note.
    task_map
        Pairs tasks whose labels differ between the sides (a Terminal-Bench 1 run and a
        Harbor run of the same tasks): renames ``b``'s task labels onto ``a``'s, as a
        mapping (labels it lacks stay as they are) or a callable ``label -> label``. The
        labels are those ``only_a``/``only_b`` show (``source/task_name`` when the sides
        hold several sources). ``tasks["task_b"]`` keeps ``b``'s own label.
    confidence
        Confidence level of ``difference``.
    seed
        Unused (the comparison is exact); kept so calls that pass it keep working.

    Returns
    -------
    RunComparison
        The difference's interval stays within the range a difference of the values can
        take (``[-1, 1]`` for 0/1 rewards).

    Raises
    ------
    StatsError
        ``by`` or ``task`` not a column, ``a`` or ``b`` absent (or equal), no task in common,
        no value column, a ``task_map`` that gives no label.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2", "q3"] * 2, "model": ["m1"] * 3 + ["m2"] * 3,
    ...                    "ok": [1, 1, 0, 0, 1, 0]})
    >>> t = mk.trials_from_frame(df, task="id", reward="ok", model="model")
    >>> result = mk.compare_runs(t, "m1", "m2")
    >>> result.n_tasks, result.wins, result.losses, result.ties
    (3, 1, 0, 2)
    >>> -1 <= result.difference.low and result.difference.high <= 1
    True
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials

    del seed
    df = as_pandas(trials)
    require_by(list(df.columns), by, "compare_runs")
    if task not in df.columns:
        raise StatsError(f"compare_runs: task={task!r} is not a column; columns are "
                         f"{list(df.columns)}")
    labels = df[by]
    present = list(dict.fromkeys(labels.dropna().tolist()))
    sides = {}
    for name, label in (("a", a), ("b", b)):
        mask = _equals(labels, label)
        if not mask.any():
            raise StatsError(f"{name}={label!r} is not a value of {by!r}; values are {present}")
        sides[name] = mask
    if (sides["a"] & sides["b"]).any():
        raise StatsError(f"a and b are both {a!r}: compare two different values of {by!r}")
    df = df[sides["a"] | sides["b"]].assign(_side=np.where(sides["a"][sides["a"] | sides["b"]],
                                                           "a", "b"))
    counted = counted_trials(df.reset_index(drop=True), policy=policy)
    df = counted.frame
    notes: list[str] = counted.notes()
    column = value_column(df, value)
    missing = pd.to_numeric(df[column]).isna().to_numpy()  # NA: absent from the evaluation
    for side, label in (("a", a), ("b", b)):
        rows = (df["_side"] == side).to_numpy()
        if not rows.any():
            raise StatsError(f"{label!r} has no trial that counts (policy {policy}: running "
                             "trials never count)")
        if missing[rows].all():
            raise StatsError(
                f"{column!r} is missing (NA) for every trial of {label!r}: no trial of its "
                "evaluation has that reward key, so there is nothing to compare; pick a "
                "key both runs have"
            )
    n_missing = int(missing.sum())
    if n_missing:
        df = df[~missing]
        notes.append(
            f"{n_missing} trial(s) left out: {column!r} is missing (NA) there, their "
            "evaluation has no such key"
        )
    df = df.assign(**{task: task_labels(df, task).to_numpy()})  # source/task when needed
    is_b = (df["_side"] == "b").to_numpy()
    df["_task_b"] = df[task]
    if task_map is not None:
        renamed = _map_tasks(df.loc[is_b, task], task_map)
        df.loc[is_b, task] = renamed.to_numpy()
        pairs = pd.DataFrame({"to": renamed.to_numpy(),
                              "own": df.loc[is_b, "_task_b"].to_numpy()}).drop_duplicates()
        merged = int((pairs["to"].value_counts() > 1).sum())
        if merged:
            notes.append(
                f"task_map sends several of {b!r}'s tasks onto {merged} label(s): their "
                "trials are averaged together there"
            )
    x = pd.to_numeric(df[column]).astype("float64")
    df = df.assign(**{column: x.to_numpy()})
    da = df[~is_b]
    db = df[is_b]
    mean_a = da.groupby(task, sort=False)[column].agg(["size", "mean"])
    mean_b = db.groupby(task, sort=False)[column].agg(["size", "mean"])
    # the tasks in a's order, and where each is in b's (by hash, as `in` would look)
    in_b = mean_b.index.get_indexer(mean_a.index)
    paired = in_b >= 0
    common = mean_a.index[paired].tolist()
    only_a = mean_a.index[~paired].tolist()
    b_only = mean_a.index.get_indexer(mean_b.index) < 0
    if task_map is None:  # each of b's tasks is its own name
        own_b = {t: [t] for t in mean_b.index.tolist()}
        only_b = mean_b.index[b_only].tolist()
    else:  # each of b's tasks' own names (under task_map), first seen first, each once
        named = db.drop_duplicates([task, "_task_b"])
        own_b = dict(zip(mean_b.index, _lists_by_task(named, task, "_task_b", mean_b.index),
                         strict=True))
        only_b = [o for t in mean_b.index[b_only].tolist() for o in own_b[t]]
    if not common:
        hint = "" if task_map is not None else (
            "; pass task_map= when the two name their tasks differently (tasks of different "
            "sources never pair by themselves)"
        )
        raise StatsError(
            f"{a!r} and {b!r} have no {task!r} in common; nothing to pair ({a!r} tasks like "
            f"{only_a[:3]}, {b!r} tasks like {only_b[:3]}){hint}"
        )
    rows_a, rows_b = np.flatnonzero(paired), in_b[paired]
    ma = mean_a["mean"].to_numpy(dtype=np.float64)[rows_a]
    mb = mean_b["mean"].to_numpy(dtype=np.float64)[rows_b]
    size_a = mean_a["size"].to_numpy()[rows_a]
    size_b = mean_b["size"].to_numpy()[rows_b]
    diff = ma - mb
    t_count = len(common)
    total = float(diff.sum())
    influence = (
        total / t_count - (total - diff) / (t_count - 1) if t_count > 1 else np.full(1, np.nan)
    )
    pass_a, pass_b = ma >= 0.5, mb >= 0.5
    flip = np.where(pass_a & ~pass_b, "pass→fail", np.where(~pass_a & pass_b, "fail→pass", ""))
    table = pd.DataFrame(
        {
            task: common,
            "n_a": size_a,
            "n_b": size_b,
            "mean_a": ma,
            "mean_b": mb,
            "difference": diff,
            "winner": np.where(diff > 0, str(a), np.where(diff < 0, str(b), "tie")),
            "flip": flip,
            "influence": influence,
        }
    )
    if task_map is not None:
        table["task_b"] = [", ".join(map(str, own_b[t])) for t in common]
    if "trial_dir" in df.columns:
        for suffix, part in (("a", da), ("b", db)):
            table["trials_" + suffix] = _lists_by_task(part, task, "trial_dir", common)
    if only_a or only_b:
        shown = "; ".join(
            f"only {label!r} ran {len(tasks)}: {_few(tasks)}"
            for label, tasks in ((a, only_a), (b, only_b)) if tasks
        )
        notes.append(
            f"paired on the {t_count} task(s) both ran; {len(only_a) + len(only_b)} task(s) "
            f"ran in only one of the two runs and are left out ({shown}; see only_a, only_b)"
        )
    interval, pvalue = paired_t(diff, confidence=confidence)
    # A difference of two means of values in [lo, hi] lies within [-(hi - lo), hi - lo].
    span = float(x.max() - x.min()) if len(x) else math.nan
    if math.isfinite(span) and (interval.low < -span or interval.high > span):
        interval = replace(interval, low=max(interval.low, -span), high=min(interval.high, span))
        notes.append(f"the t interval is cut to the range a difference can take (±{span:g})")
    sd = float(diff.std(ddof=1)) if t_count > 1 else math.nan
    single = bool(
        (size_a == 1).all() and (size_b == 1).all()
        and np.isin(x[np.isfinite(x)], (0.0, 1.0)).all()
    )
    detectable = (
        single_attempt_detectable_difference(diff, 1 - confidence, 0.8) if single
        else observed_detectable_difference(sd, t_count, 1 - confidence, 0.8)
    )
    # No spread (every task the same difference, e.g. both runs identical): the test and
    # its power are undefined, so power is not claimed.
    no_spread = t_count > 1 and not has_spread(sd, float(diff.mean()))
    if no_spread:
        detectable = math.nan
    underpowered = bool(
        not pvalue < 1 - confidence and (no_spread or abs(interval.estimate) < detectable)
    ) if t_count > 1 else True
    if t_count < 2:
        notes.append("one paired task only: no interval and no test")
    elif no_spread:
        notes.append(
            f"every paired task has the same difference ({interval.estimate:+g}): no spread "
            "to judge power by (min_detectable is NaN), and the zero-width interval says "
            "nothing about tasks not run; more tasks, or tasks that are not all passed or "
            "all failed by both, would"
        )
    elif underpowered and math.isfinite(span) and detectable >= span > 0:
        notes.append(
            f"underpowered: with {t_count} tasks and this spread no difference within the "
            f"range a difference can take (±{span:g}) would be found 80 % of the time; not "
            "finding one says little"
        )
    elif underpowered:
        notes.append(
            f"underpowered: with {t_count} tasks and this spread a difference must be about "
            f"±{detectable:.3f} to be found 80 % of the time; not finding one says little"
        )
    if interval.note and not no_spread:
        notes.append(f"{interval.note}: the t interval's coverage can fall short")
    mcnemar = _mcnemar_single_attempt(da, db, column, (size_a, ma), (size_b, mb), notes)
    return RunComparison(
        a=a,
        b=b,
        value=column,
        difference=interval,
        pvalue=pvalue,
        n_tasks=t_count,
        min_detectable=detectable,
        underpowered=underpowered,
        mcnemar=mcnemar,
        wins=int(np.sum(diff > 0)),
        losses=int(np.sum(diff < 0)),
        ties=int(np.sum(diff == 0)),
        tasks=table,
        only_a=only_a,
        only_b=only_b,
        notes=notes,
    )


def _equals(labels: Any, label: Any) -> npt.NDArray[np.bool_]:
    """Rows whose label is ``label`` (a null label matches nothing; no NA ambiguity)."""
    import pandas as pd

    if is_null(label):
        return np.zeros(len(labels), dtype=bool)
    equal = pd.Series(labels, copy=False).eq(label)
    return np.asarray(equal.fillna(False).to_numpy(dtype=bool), dtype=bool)


def _lists_by_task(part: Any, task: str, column: str, tasks: Sequence[Any]
                   ) -> list[list[Any]]:
    """Each of ``tasks``' values of ``column`` in ``part`` (trial folders, task names), in
    row order (``[]`` for a task it lacks): one stable sort of the rows by task, not a
    Python function per task."""
    import pandas as pd

    codes, uniques = pd.factorize(part[task], sort=False)
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]  # a row without a task belongs to none
    values = part[column].to_numpy(dtype=object)[order].tolist()
    ends = np.cumsum(np.bincount(codes[order], minlength=len(uniques))).tolist()
    starts = [0, *ends[:-1]]
    at = pd.Index(uniques).get_indexer(pd.Index(list(tasks), dtype=object)).tolist()
    return [values[starts[i]:ends[i]] if i >= 0 else [] for i in at]


def _map_tasks(labels: Any, task_map: Mapping[Any, Any] | Callable[[Any], Any]) -> Any:
    """``labels`` (a pandas Series) renamed by ``task_map``; StatsError where it gives none."""
    if callable(task_map):
        mapper = task_map
    elif isinstance(task_map, Mapping):
        def mapper(label: Any) -> Any:
            return task_map.get(label, label)
    else:
        raise StatsError(
            f"task_map={task_map!r}; expected a mapping of task labels or a callable "
            "label -> label"
        )
    out = {}
    for label in dict.fromkeys(labels.tolist()):
        mapped = mapper(label)
        if is_null(mapped):
            raise StatsError(
                f"task_map gave {mapped!r} for the task {label!r}; expected a task label (one "
                "of the other side's, or any other to leave the task unpaired)"
            )
        out[label] = mapped
    return labels.map(out)


def _few(items: Sequence[Any], n: int = 5) -> str:
    shown = ", ".join(map(str, items[:n]))
    return shown + (f" and {len(items) - n} more" if len(items) > n else "")


def _mcnemar_single_attempt(
    da: Any, db: Any, column: str, a: tuple[Any, Any], b: tuple[Any, Any], notes: list[str]
) -> tuple[float, float] | None:
    """McNemar's exact test over the paired tasks where each side has one 0/1 trial a task;
    ``a`` and ``b``: each side's trials per paired task and their mean (a task's one value,
    where it has one trial)."""
    values = np.concatenate([da[column].to_numpy(float), db[column].to_numpy(float)])
    if not np.all((values == 0) | (values == 1)):
        notes.append("McNemar's test not computed: the values are not all 0/1")
        return None
    (size_a, left), (size_b, right) = a, b
    if not ((size_a == 1).all() and (size_b == 1).all()):
        notes.append(
            "McNemar's test not computed: a task has several attempts in a run, so trials "
            "cannot be paired one to one (the paired t test over tasks is the comparison)"
        )
        return None
    return mcnemar_exact(left, right)
