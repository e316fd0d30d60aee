"""Did this change make things worse? A regression gate for CI: a baseline and a candidate,
paired on the tasks both ran, decided with a stated margin and level.

For each value the gate estimates the mean over shared tasks of the per-task difference
(candidate minus baseline, each side's attempts of a task averaged: the task is the
sampling unit), oriented so that positive is better, with a two-sided ``1 - 2 alpha``
interval whose each bound is a one-sided ``1 - alpha`` bound (:func:`score_bounds`):

- **pass** (exit 0): the lower bound is above ``-margin``: the candidate is shown no worse
  than the baseline by more than the margin (non-inferiority at level ``alpha``);
- **regression** (exit 1): the upper bound is below ``-margin``: the candidate is shown
  worse by more than the margin;
- **inconclusive** (exit 3): neither can be shown; the result says how many tasks would
  settle it, at the spread observed.

Several values give one verdict each; the overall verdict is a regression if any value
regressed, else inconclusive if any is, else a pass.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np

from metrickit._core.display import result_html, result_repr
from metrickit._core.dist import t_ppf
from metrickit.errors import StatsError

Direction = Literal["higher", "lower"]
Verdict = Literal["pass", "regression", "inconclusive"]
EXIT_CODES: dict[str, int] = {"pass": 0, "regression": 1, "inconclusive": 3}
#: Columns where less is better (a gate on them flips the sign of the difference).
LOWER_IS_BETTER = ("cost_usd", "total_ms", "agent_execution_ms", "n_input_tokens",
                   "n_output_tokens", "n_cache_tokens")
_MAX_TASKS = 10**7

__all__ = ["GateResult", "GateValue", "gate"]


@dataclass(frozen=True)
class GateValue:
    """The gate's decision on one value."""

    value: str
    direction: Direction
    margin: float
    verdict: Verdict
    #: candidate minus baseline, in the value's units (not oriented)
    difference: float
    #: the interval of the difference, in the value's units: its bounds are the one-sided
    #: ``1 - alpha`` bounds the verdict is read from (see :func:`score_bounds`)
    low: float
    high: float
    confidence: float
    n_tasks: int
    only_baseline: list[str]
    only_candidate: list[str]
    #: tasks that would settle an inconclusive verdict at the spread observed (None: not
    #: inconclusive, or no spread to plan from)
    tasks_needed: int | None
    #: tasks a 0/1 value passed (per-task mean >= 0.5) in the baseline and fails now, and back
    pass_to_fail: list[str]
    fail_to_pass: list[str]
    mean_baseline: float
    mean_candidate: float
    notes: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        """One sentence on why the verdict is what it is."""
        higher = self.direction == "higher"
        worse_end, better_end = (self.low, self.high) if higher else (self.high, self.low)
        limit = f"{-self.margin if higher else self.margin:+g}"
        if self.verdict == "pass":
            return (f"the interval's worse end ({_signed(worse_end)}) is on the good side of "
                    f"{limit}: not worse than the baseline by more than the margin")
        if self.verdict == "regression":
            return (f"the interval's better end ({_signed(better_end)}) is past {limit}: worse "
                    "than the baseline by more than the margin")
        need = (f"; about {self.tasks_needed:,} paired tasks would settle it"
                if self.tasks_needed else "")
        return (f"the interval holds both no change and a change past {limit}: neither a pass "
                f"nor a regression can be shown{need}")


@dataclass(frozen=True)
class GateResult:
    """The verdicts of :func:`gate`: one per value and an overall one."""

    verdict: Verdict
    values: list[GateValue]
    alpha: float
    baseline: str
    candidate: str

    @property
    def exit_code(self) -> int:
        """0 pass, 1 regression, 3 inconclusive (2 is for bad input, from the CLI)."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "exit_code": self.exit_code, "alpha": self.alpha,
            "baseline": self.baseline, "candidate": self.candidate,
            "values": [{**asdict(v), "reason": v.reason} for v in self.values],
        }

    def to_json(self) -> str:
        """The result as JSON (a value without a bound, NaN, is ``null``)."""
        return json.dumps(_no_nan(self.to_dict()), indent=2, allow_nan=False)

    def to_markdown(self, *, max_tasks: int = 10) -> str:
        """A short summary fit for a pull-request comment."""
        icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️"}[self.verdict]
        lines = [
            f"### {icon} metrickit gate: **{self.verdict}**",
            "",
            f"`{self.candidate}` against `{self.baseline}`, paired by task "
            f"(level {self.alpha:g} one-sided per bound).",
            "",
            "| value | verdict | difference | "
            f"{(1 - 2 * self.alpha) * 100:g}% interval | margin | tasks paired |",
            "| --- | --- | ---: | --- | ---: | ---: |",
        ]
        for v in self.values:
            better = "higher is better" if v.direction == "higher" else "lower is better"
            lines.append(
                f"| {v.value} ({better}) | {v.verdict} | {_signed(v.difference)} | "
                f"[{_signed(v.low)}, {_signed(v.high)}] | {v.margin:g} | {v.n_tasks:,} |"
            )
        for v in self.values:
            lines += ["", f"**{v.value}**: {v.reason}."]
            left = len(v.only_baseline) + len(v.only_candidate)
            if left:
                lines.append(
                    f"{left} task(s) ran on one side only and are not compared "
                    f"({len(v.only_baseline)} baseline only, {len(v.only_candidate)} "
                    "candidate only)."
                )
            for name, tasks in (("pass → fail", v.pass_to_fail), ("fail → pass", v.fail_to_pass)):
                if tasks:
                    shown = ", ".join(f"`{t}`" for t in tasks[:max_tasks])
                    more = f" and {len(tasks) - max_tasks} more" if len(tasks) > max_tasks else ""
                    lines.append(f"- {name} ({len(tasks)}): {shown}{more}")
            lines += [f"- note: {n}" for n in v.notes]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.to_markdown()

    def _display(self) -> tuple[str, Any]:
        """Headline (the overall verdict) and one row per value, its reason and notes in
        the ``notes`` column."""
        import pandas as pd

        headline = f"{self.verdict}: {self.candidate} against {self.baseline}, paired by task"
        table = pd.DataFrame({
            "value": [v.value for v in self.values],
            "verdict": [v.verdict for v in self.values],
            "difference": [v.difference for v in self.values],
            "low": [v.low for v in self.values],
            "high": [v.high for v in self.values],
            "margin": [v.margin for v in self.values],
            "n_tasks": [v.n_tasks for v in self.values],
            "notes": ["; ".join([v.reason, *v.notes]) for v in self.values],
        })
        return headline, table

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="GateResult")

    def __repr__(self) -> str:
        return result_repr("GateResult", *self._display())

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _signed(x: float) -> str:
    if not math.isfinite(x):
        return "–"
    text = f"{x:+.4g}"
    return "0" if text in ("+0", "-0") else text


def _no_nan(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_nan(v) for v in obj]
    return obj


def gate(
    baseline: Any,
    candidate: Any,
    *,
    value: str | Sequence[str] = "reward",
    margin: float | Mapping[str, float] = 0.02,
    direction: Direction | Mapping[str, Direction] | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    policy: Literal["0.25", "0.26"] = "0.25",
    task_map: Mapping[str, str] | Callable[[str], str] | None = None,
) -> GateResult:
    """Decide whether ``candidate`` regressed against ``baseline``, paired by task.

    Parameters
    ----------
    baseline, candidate
        Trial tables (pandas or polars, one candidate each), or anything
        :func:`metrickit.load` reads (a path or a list of paths).
    value
        The value column(s) to gate on; default ``"reward"``.
    margin
        How much worse counts as a regression, in the value's units (``0.02``: two
        points of a pass rate); one number for every value or a mapping per value.
    direction
        ``"higher"`` or ``"lower"`` is better, one for all or a mapping per value; default
        ``"lower"`` for cost, time and token columns, ``"higher"`` otherwise.
    alpha
        The level of each one-sided decision (default 0.05): equal candidates are called
        a regression at most this often.
    power
        The power ``tasks_needed`` plans for when the verdict is inconclusive.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"`` a
        trial without a valid reward counts as 0, ``"0.26"`` it is left out.
    task_map
        Renames the candidate's task labels onto the baseline's (a mapping or a
        callable), for sides whose tasks are named differently.

    Returns
    -------
    GateResult
        ``.verdict``, ``.exit_code``, ``.values`` (one :class:`GateValue` each),
        ``.to_markdown()``, ``.to_json()``.

    Raises
    ------
    StatsError
        A side with no trial, several candidates, no such value column, no task in
        common, or a margin that is not a positive number.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> def side(passed):
    ...     df = pd.DataFrame({"task": [f"t{i}" for i in range(40)], "ok": passed})
    ...     return mk.trials_from_frame(df, task="task", reward="ok")
    >>> base = side([1] * 30 + [0] * 10)
    >>> mk.gate(base, side([1] * 30 + [0] * 10), value="ok", margin=0.1).verdict
    'pass'
    >>> mk.gate(base, side([1] * 10 + [0] * 30), value="ok", margin=0.1).verdict
    'regression'
    """
    if not 0 < alpha < 0.5:
        raise StatsError(f"alpha={alpha!r}; expected a level between 0 and 0.5")
    values = [value] if isinstance(value, str) else list(value)
    if not values:
        raise StatsError("value=[] names no column; pass at least one value to gate on")
    base_df, base_name = _side(baseline, "baseline", policy)
    cand_df, cand_name = _side(candidate, "candidate", policy)
    results = []
    for name in values:
        m = margin[name] if isinstance(margin, Mapping) else margin
        if not (isinstance(m, int | float) and not isinstance(m, bool) and m >= 0
                and math.isfinite(m)):
            raise StatsError(f"margin for {name!r} is {m!r}; expected a number >= 0")
        if isinstance(direction, Mapping):
            d = direction.get(name, _default_direction(name))
        else:
            d = direction or _default_direction(name)
        if d not in ("higher", "lower"):
            raise StatsError(f"direction for {name!r} is {d!r}; expected 'higher' or 'lower'")
        results.append(_gate_one(base_df, cand_df, name, float(m), d, alpha, power, task_map))
    verdicts = {r.verdict for r in results}
    overall: Verdict = ("regression" if "regression" in verdicts
                        else "inconclusive" if "inconclusive" in verdicts else "pass")
    return GateResult(overall, results, alpha, base_name, cand_name)


def _default_direction(name: str) -> Direction:
    return "lower" if name in LOWER_IS_BETTER or name.endswith("_ms") else "higher"


def _side(source: Any, what: str, policy: Literal["0.25", "0.26"]) -> tuple[Any, str]:
    """A side's counted trials as pandas, and its name."""
    import narwhals as nw

    from metrickit._core.frame import counted_trials

    if isinstance(source, str | os.PathLike) or (
        isinstance(source, list | tuple) and source and isinstance(source[0], str | os.PathLike)
    ):
        from metrickit.io.registry import load

        label = str(source) if isinstance(source, str | os.PathLike) else ", ".join(
            map(str, source))
        source = load(source)
    else:
        label = what
    counted = counted_trials(source, policy=policy)
    df = nw.from_native(counted.frame, eager_only=True).to_pandas()
    if not len(df):
        raise StatsError(f"the {what} has no trial that counts (running trials never count)")
    if "candidate" in df.columns:
        names = list(dict.fromkeys(df["candidate"].dropna().tolist()))
        if len(names) > 1:
            raise StatsError(
                f"the {what} holds {len(names)} candidates {names[:6]}; a gate compares one "
                "candidate with one baseline: select one first (trials[trials['candidate'] "
                "== ...])"
            )
        if names and label == what:
            label = str(names[0])
    df.attrs["notes"] = counted.notes()
    return df, label


def _task_means(df: Any, value: str, task_map: Any) -> tuple[Any, int]:
    import pandas as pd

    from metrickit.compute.stats import task_labels

    labels = task_labels(df, "task_name").astype(str)
    if task_map is not None:
        labels = labels.map(task_map if callable(task_map) else lambda t: task_map.get(t, t))
    x = pd.to_numeric(df[value]).astype("float64")
    na = x.isna().to_numpy()
    means = x[~na].groupby(labels[~na].to_numpy(), sort=False).mean()
    return means, int(na.sum())


def _gate_one(
    base: Any, cand: Any, value: str, margin: float, direction: Direction, alpha: float,
    power: float, task_map: Any,
) -> GateValue:
    for what, df in (("baseline", base), ("candidate", cand)):
        if value not in df.columns:
            raise StatsError(
                f"value={value!r} is not a column of the {what}; columns are {list(df.columns)}"
            )
    mb, na_b = _task_means(base, value, None)
    mc, na_c = _task_means(cand, value, task_map)
    notes = list(dict.fromkeys([*base.attrs.get("notes", []), *cand.attrs.get("notes", [])]))
    for what, n in (("baseline", na_b), ("candidate", na_c)):
        if n:
            notes.append(f"{n} {what} trial(s) have no {value!r} (NA) and are left out")
    common = [t for t in mb.index if t in mc.index]
    only_b = [t for t in mb.index if t not in mc.index]
    only_c = [t for t in mc.index if t not in mb.index]
    if not common:
        raise StatsError(
            f"the baseline and the candidate have no task in common for {value!r} "
            f"(baseline tasks like {only_b[:3]}, candidate tasks like {only_c[:3]}); pass "
            "task_map= when the two name their tasks differently"
        )
    b = mb.loc[common].to_numpy(np.float64)
    c = mc.loc[common].to_numpy(np.float64)
    sign = 1.0 if direction == "higher" else -1.0
    oriented = sign * (c - b)
    confidence = 1 - 2 * alpha
    low, high = score_bounds(oriented, alpha)
    n = len(common)
    if not (math.isfinite(low) and math.isfinite(high)):
        verdict: Verdict = "inconclusive"
        notes.append(f"{n} paired task(s): too few for an interval at level {alpha:g}")
    elif low > -margin:
        verdict = "pass"
    elif high < -margin:
        verdict = "regression"
    else:
        verdict = "inconclusive"
    if n >= 2 and low == high:
        notes.append("every paired task moved by the same amount: the interval has no width")
    needed = _tasks_needed(oriented, margin, alpha, power) if verdict == "inconclusive" else None
    binary = bool(np.isin(np.concatenate([base[value].dropna(), cand[value].dropna()]),
                          (0.0, 1.0)).all())
    passed_b, passed_c = b >= 0.5, c >= 0.5
    p2f = [t for t, x, y in zip(common, passed_b, passed_c, strict=True) if x and not y]
    f2p = [t for t, x, y in zip(common, passed_b, passed_c, strict=True) if y and not x]
    d_low, d_high = sorted((sign * low, sign * high))
    return GateValue(
        value=value, direction=direction, margin=margin, verdict=verdict,
        difference=float(np.mean(c - b)), low=d_low, high=d_high, confidence=confidence,
        n_tasks=n, only_baseline=only_b, only_candidate=only_c, tasks_needed=needed,
        pass_to_fail=p2f if binary else [], fail_to_pass=f2p if binary else [],
        mean_baseline=float(b.mean()), mean_candidate=float(c.mean()), notes=notes,
    )


def score_bounds(d: Any, alpha: float) -> tuple[float, float]:
    """The two one-sided ``1 - alpha`` bounds of the mean of per-task differences ``d``.

    They are the limits of the values ``delta`` that a score-type t test does not reject:
    ``|mean(d) - delta| <= t * sqrt(mean((d - delta)**2) / n)``, with the spread taken
    around ``delta`` itself rather than around the sample mean. In closed form the bounds
    are ``mean(d) -+ t * sqrt(v / (n - t**2))`` with ``v`` the mean squared deviation and
    ``t`` Student's ``1 - alpha`` quantile with ``n - 1`` degrees of freedom. So "the lower
    bound is above ``-margin``" is exactly the test of ``mean = -margin`` at level
    ``alpha``. The spread around the null holds the level where the plain t interval does
    not (0/1 rewards, one attempt, 10 tasks, at the margin: a pass 4.7 % of the time
    against 8.6 % for the t interval; benchmarks/coverage.py, scenario ``gate``). NaN
    bounds when ``n <= t**2`` (four tasks or fewer at alpha 0.05).
    """
    x = np.asarray(d, dtype=np.float64)
    n = x.size
    if n < 2:
        return math.nan, math.nan
    t = float(t_ppf(1 - alpha, n - 1))
    if n <= t * t:
        return math.nan, math.nan
    mean = float(x.mean())
    v = float(np.mean((x - mean) ** 2))
    half = t * math.sqrt(v / (n - t * t))
    return mean - half, mean + half


def _tasks_needed(d: Any, margin: float, alpha: float, power: float) -> int | None:
    """Paired tasks that decide, with ``power``, if the true difference is the one
    observed and the spread stays as observed: toward a pass when the estimate is above
    ``-margin``, toward a regression when below."""
    if len(d) < 2:
        return None
    sd = float(np.std(d, ddof=1))
    gap = abs(float(np.mean(d)) + margin)
    if not sd > 0 or not gap > 0:
        return None
    n = 2
    while n < _MAX_TASKS:
        crit = float(t_ppf(1 - alpha, n - 1)) + float(t_ppf(power, n - 1))
        if crit * sd / math.sqrt(n) <= gap:
            return n
        n = n + 1 if n < 64 else int(n * 1.05) + 1
    return None
