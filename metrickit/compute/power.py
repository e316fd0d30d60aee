"""Planning a comparison: the smallest difference a design detects, the tasks it needs.

The design is :func:`metrickit.compare_runs`': two candidates on the same tasks, each
task's attempts averaged, a paired t test over tasks. The per-task difference ``d`` has
variance

    ``omega**2 + (w_a + w_b) / attempts``

where ``omega`` is the standard deviation over tasks of the true per-task gain (the task ×
candidate interaction of Miller 2024, "Adding Error Bars to Evals": tasks differ in how
much a candidate gains) and ``w`` a candidate's within-task variance of one attempt
(``p(1-p) - task_spread**2`` for 0/1 rewards). Power is the noncentral t's: the test over
``T`` tasks rejects with probability ``P(|t'| > t_{1-alpha/2, T-1})``, ``t'`` noncentral t
with ``T - 1`` degrees of freedom and noncentrality ``delta sqrt(T) / sd(d)``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from metrickit._core.display import result_html, result_repr, short_names
from metrickit._core.dist import chi2_ppf, nct_cdf, nct_sf, t_ppf
from metrickit.errors import StatsError

if TYPE_CHECKING:
    from metrickit._core.frame import Policy


def _brentq(f: Callable[[float], float], a: float, b: float, xtol: float) -> float:
    """A root of ``f`` bracketed by ``[a, b]``: ``scipy.optimize.brentq`` (its C code,
    step for step, so the same iterates and the same root; ``rtol`` its default
    ``4 * eps``, at most 100 iterations). Importing ``scipy.optimize`` costs a report a
    third of a second for two roots."""
    rtol = 4 * np.finfo(float).eps
    xpre, xcur = float(a), float(b)
    xblk = fblk = spre = scur = 0.0
    fpre, fcur = f(xpre), f(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1, fpre) == math.copysign(1, fcur):
        raise StatsError(f"no root between {a!r} and {b!r}: f has one sign at both ends")
    for _ in range(100):
        if fpre != 0 and fcur != 0 and math.copysign(1, fpre) != math.copysign(1, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):
                spre, scur = scur, stry  # a good short step
            else:
                spre = scur = sbis
        else:
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = f(xcur)
    raise StatsError(f"no root between {a!r} and {b!r} within 100 iterations")


def power_at(difference: float, sd: float, n_tasks: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t test over ``n_tasks`` tasks at level ``alpha`` when
    the per-task differences have mean ``difference`` and standard deviation ``sd``.

    Examples
    --------
    >>> from metrickit.compute.power import power_at
    >>> round(power_at(0.5, 1.0, 34), 3)
    0.808
    """
    if n_tasks < 2:
        return math.nan
    if not sd > 0:
        return math.nan
    df = n_tasks - 1
    crit = float(t_ppf(1 - alpha / 2, df))
    ncp = abs(difference) * math.sqrt(n_tasks) / sd
    # the far tail is negligible where nct_cdf turns NaN (large ncp, few df)
    far = float(np.nan_to_num(nct_cdf(-crit, df, ncp), nan=0.0))
    return float(nct_sf(crit, df, ncp)) + far


def detectable_difference(sd: float, n_tasks: int, alpha: float, power: float) -> float:
    """The difference the paired t test over ``n_tasks`` tasks detects with ``power``
    (exact, by the noncentral t), for per-task differences of standard deviation ``sd``.
    NaN when ``sd`` is 0 or undefined (no spread to judge power by), inf for one task."""
    if n_tasks < 2:
        return math.inf
    if not (math.isfinite(sd) and sd > 0):
        return math.nan
    df = n_tasks - 1
    # the normal-theory value is a good start; the exact answer lies a little above it
    guess = (float(t_ppf(1 - alpha / 2, df)) + float(t_ppf(power, df))) / math.sqrt(
        n_tasks)
    high = 2 * guess
    while power_at(high, 1.0, n_tasks, alpha) < power:
        high *= 2
    ncp = _brentq(lambda x: power_at(x, 1.0, n_tasks, alpha) - power, 0.0, high, xtol=1e-12)
    return float(ncp) * sd


@functools.lru_cache(maxsize=256)
def _spread_factor(n_tasks: int, alpha: float, power: float) -> float:
    """How much to widen a detectable difference computed from an observed spread so that
    its power, averaged over what the true spread may be (``s**2 ~ sd**2 chi2_df / df``),
    is ``power``: a plug-in spread is too small as often as too large, and power falls off
    faster below the target than it rises above (1.10 at 10 tasks, 1.03 at 30)."""
    df = n_tasks - 1
    q = np.sqrt(chi2_ppf((np.arange(400) + 0.5) / 400, df) / df)
    base = detectable_difference(1.0, n_tasks, alpha, power)
    crit = float(t_ppf(1 - alpha / 2, df))

    def shortfall(k: float) -> float:
        ncp = k * base * math.sqrt(n_tasks) * q
        far = np.nan_to_num(nct_cdf(-crit, df, ncp), nan=0.0)
        return float(np.mean(nct_sf(crit, df, ncp) + far)) - power

    high = 2.0
    while shortfall(high) < 0:
        high *= 2
    return float(_brentq(shortfall, 1.0, high, xtol=1e-6))


def observed_detectable_difference(
    sd: float, n_tasks: int, alpha: float = 0.05, power: float = 0.8
) -> float:
    """The difference a comparison of ``n_tasks`` tasks whose per-task differences have
    observed standard deviation ``sd`` detects with ``power`` (averaged over the true
    spread's uncertainty; :func:`detectable_difference` takes a known spread). NaN when
    ``sd`` is 0 (no spread to judge power by), inf for one task."""
    if n_tasks < 2:
        return math.inf
    if not (math.isfinite(sd) and sd > 0):
        return math.nan
    return detectable_difference(sd, n_tasks, alpha, power) * _spread_factor(
        n_tasks, float(alpha), float(power))


# Single 0/1 attempts: up to this many tasks the power is summed exactly over the
# outcomes; beyond it the normal-theory answer differs by less than its own rounding.
_EXACT_TASKS = 200


@functools.lru_cache(maxsize=64)
def _rejecting_outcomes(n_tasks: int, alpha: float) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray]:
    """Every outcome of ``n_tasks`` per-task differences in {-1, 0, 1} that the paired t
    test rejects, as counts of +1 and -1 and the log of the outcome's multinomial
    coefficient. The test is :func:`metrickit.compute.paired.paired_t`'s: ``|t|`` beyond
    the t quantile, and when every difference is the same nonzero value the sign-flip
    p-value ``2 / 2**T``."""
    up, down = np.meshgrid(np.arange(n_tasks + 1), np.arange(n_tasks + 1), indexing="ij")
    inside = up + down <= n_tasks
    up, down = up[inside], down[inside]
    mean = (up - down) / n_tasks
    spread = (up + down) / n_tasks - mean**2  # the plain variance: s**2 (T - 1) / T
    crit = float(t_ppf(1 - alpha / 2, n_tasks - 1))
    flat = spread <= 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(mean) * math.sqrt(n_tasks - 1) / np.sqrt(spread)
    reject = np.where(flat, (up + down == n_tasks) & (2.0 / 2.0**n_tasks < alpha), t > crit)
    log_fact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, n_tasks + 1)))])
    log_ways = log_fact[n_tasks] - log_fact[up] - log_fact[down] - log_fact[
        n_tasks - up - down]
    return up[reject], down[reject], log_ways[reject]


def _xlogy(count: np.ndarray, p: float) -> np.ndarray:
    """``count * log(p)``, 0 where the count is 0 (even when ``p`` is)."""
    if p > 0:
        return np.asarray(count * math.log(p), dtype=np.float64)
    return np.where(count == 0, 0.0, -np.inf)


def single_attempt_power(
    difference: float, differ: float, n_tasks: int, alpha: float = 0.05
) -> float:
    """Exact power of the paired t test over ``n_tasks`` tasks of one 0/1 attempt each
    side, when the true difference is ``difference`` and, at no difference, a task's two
    attempts differ with probability ``differ``.

    Each task's difference is -1, 0 or 1. Shifting the two sides' rates apart by
    ``difference`` (each by half, around the task's own midpoint: the smallest change in
    the spread a shift can make) leaves P(the attempts differ) = ``differ +
    difference**2 / 2``, so the differences' variance falls from ``differ`` to ``differ -
    difference**2 / 2``: 0/1 rewards are less noisy away from 1/2, and a power computed
    from the spread seen at no difference is too low. When the rates cannot move that far
    without one side's -1 vanishing, it is 0. The power is the sum of the multinomial
    probabilities of the outcomes the test rejects (:func:`_rejecting_outcomes`), exact
    where the noncentral t's is not (a few tasks' three-valued, skewed differences).
    """
    d = abs(float(difference))
    if n_tasks < 2 or not 0 < differ <= 1:
        return math.nan
    if d >= 1:
        return 1.0 if 2.0 / 2.0**n_tasks < alpha else 0.0
    plus = min(1.0, max(d, (differ + d * d / 2 + d) / 2))
    minus = plus - d
    same = max(0.0, 1.0 - plus - minus)
    up, down, log_ways = _rejecting_outcomes(n_tasks, float(alpha))
    log_p = (log_ways + _xlogy(up, plus) + _xlogy(down, minus)
             + _xlogy(n_tasks - up - down, same))
    return float(np.exp(log_p).sum())


def single_attempt_detectable_difference(
    differences: Any, alpha: float = 0.05, power: float = 0.8
) -> float:
    """:func:`observed_detectable_difference` for one 0/1 attempt a side on every task
    (``differences`` in {-1, 0, 1}, one a task): the difference found with ``power``,
    from the exact power at the spread the differences would have there
    (:func:`single_attempt_power`; the share of tasks whose attempts differ, less half the
    observed mean's square, is the chance they differ at no difference), widened for the
    noise in that observed spread as :func:`observed_detectable_difference` widens
    (:func:`_spread_factor`). The noncentral t with the spread seen at no difference
    claims 0.80 where 0.87 is achieved at 10 tasks (``benchmarks/coverage_power.py``
    ``own-mdd``). NaN with no spread, inf for one task; beyond :data:`_EXACT_TASKS` tasks
    the normal-theory answer."""
    d = np.asarray(differences, dtype=np.float64)
    n_tasks = d.size
    if n_tasks < 2:
        return math.inf
    sd = float(d.std(ddof=1))
    if not (math.isfinite(sd) and sd > 0):
        return math.nan
    if n_tasks > _EXACT_TASKS:
        return observed_detectable_difference(sd, n_tasks, alpha, power)
    differ = float(np.mean(d * d)) - float(d.mean()) ** 2 / 2

    def shortfall(x: float) -> float:
        return single_attempt_power(x, differ, n_tasks, alpha) - power

    top = 1.0 - 1e-9  # a difference of 1 leaves no spread: the sign-flip test's own case
    if shortfall(top) < 0:
        return math.inf  # no difference a 0/1 pair can have is found that often
    found = _brentq(shortfall, 0.0, top, xtol=1e-9)
    return found * _spread_factor(n_tasks, float(alpha), float(power))


@dataclass(frozen=True)
class PilotVariance:
    """What a pilot trial table says about the noise of a paired comparison.

    Attributes
    ----------
    base_rate
        Mean over tasks of each task's mean (over the candidates in the pilot).
    within
        Within-task variance of one attempt, per candidate in the pilot (the mean over
        tasks with at least two attempts of the attempts' sample variance); 0 when no task
        has two attempts (then planning more attempts is assumed not to help: cautious).
    task_spread
        Standard deviation over tasks of a candidate's true task means (averaged over the
        candidates in the pilot): the between-task spread left once attempt noise is taken
        out.
    interaction
        Standard deviation over tasks of the true per-task difference between the two
        candidates (Miller's omega). With one candidate in the pilot it cannot be
        measured: it is then ``sqrt(2) * task_spread``, what it would be if the two
        candidates' task means were unrelated (cautious: candidates that find the same
        tasks hard differ less).
    n_tasks
        Tasks in the pilot (both candidates ran them, with two).
    candidates
        The candidates the pilot holds.
    notes
        How the figures were obtained, and what was assumed.
    """

    base_rate: float
    within: tuple[float, ...]
    task_spread: float
    interaction: float
    n_tasks: int
    candidates: tuple[Any, ...]
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        headline, _, notes = self._display()
        return "\n".join([headline, *(f"  note: {n}" for n in notes)])

    def _display(self) -> tuple[str, Any, list[str]]:
        import pandas as pd

        names = short_names(list(self.candidates)) if self.candidates else []
        headline = (
            f"Pilot of {self.n_tasks:,} task(s), {len(self.candidates)} candidate(s): "
            f"base rate {self.base_rate:.3g}, task spread {self.task_spread:.3g}, "
            f"interaction (sd of per-task differences) {self.interaction:.3g}"
        )
        table = pd.DataFrame({"candidate": names,
                              "within-task variance": list(self.within)[: len(names)]})
        return headline, table, list(self.notes)

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="PilotVariance")

    def __repr__(self) -> str:
        return result_repr("PilotVariance", *self._display())

    def difference_sd(self, attempts: int) -> float:
        """Standard deviation of a per-task difference with ``attempts`` attempts a side."""
        w = self.within if len(self.within) == 2 else self.within * 2
        return math.sqrt(self.interaction**2 + sum(w) / attempts)


def pilot_variance(
    pilot: Any,
    *,
    by: str = "candidate",
    task: str = "task_name",
    value: str | None = None,
    policy: Policy = "0.25",
) -> PilotVariance:
    """Estimate the variance components of a paired comparison from a pilot trial table.

    Parameters
    ----------
    pilot
        A trial table (any metrickit reader, or a frame with the ``by``, ``task`` and value
        columns) with one or two candidates. With two, the task × candidate interaction is
        measured on the tasks both ran; with one it is bounded (see
        :class:`PilotVariance`).
    by, task, value, policy
        As in :func:`metrickit.compare_runs`.

    Returns
    -------
    PilotVariance

    Raises
    ------
    StatsError
        Not one or two candidates, fewer than 3 shared tasks, a missing column.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> rows = [{"task": f"t{t}", "model": m, "ok": int((t + a + (m == "b")) % 3 == 0)}
    ...         for t in range(12) for m in "ab" for a in range(3)]
    >>> pilot = mk.trials_from_frame(pd.DataFrame(rows), task="task", reward="ok",
    ...                              model="model")
    >>> v = mk.pilot_variance(pilot)
    >>> v.n_tasks, len(v.within)
    (12, 2)
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials
    from metrickit.compute.tables import as_pandas, require_by, task_labels, value_column

    df_all = as_pandas(pilot)
    require_by(list(df_all.columns), by, "pilot_variance")
    df = as_pandas(counted_trials(df_all, policy=policy).frame)
    column = value_column(df, value)
    x = pd.to_numeric(df[column]).astype("float64")
    keep = x.notna().to_numpy()
    labels = task_labels(df, task)
    cells = pd.DataFrame({"c": df[by].to_numpy(), "t": np.asarray(labels, dtype=object),
                          "x": x.to_numpy()})[keep]
    candidates = tuple(dict.fromkeys(cells["c"].tolist()))
    if len(candidates) not in (1, 2):
        raise StatsError(
            f"pilot= has {len(candidates)} values of by={by!r} ({list(candidates)[:5]}); "
            "expected the two candidates to compare, or one"
        )
    stats = cells.groupby(["c", "t"], sort=False)["x"].agg(["size", "mean", "var"])
    wide = {c: stats.loc[c] for c in candidates}
    shared = [t for t in wide[candidates[0]].index
              if all(t in wide[c].index for c in candidates)]
    if len(shared) < 3:
        which = " both candidates ran" if len(candidates) == 2 else ""
        raise StatsError(
            f"pilot= has {len(shared)} task(s){which}; expected at least 3 to estimate how "
            "tasks vary"
        )
    notes: list[str] = []
    within = []
    noise = []  # per candidate, per task: the attempt noise in its task mean
    for c in candidates:
        part = wide[c].loc[shared]
        repeated = part["size"] >= 2
        w = float(part.loc[repeated, "var"].mean()) if repeated.any() else 0.0
        within.append(w)
        noise.append(w / part["size"].to_numpy(dtype=np.float64))
    if within.count(0.0) == len(within) and not all(
            (wide[c].loc[shared, "size"] >= 2).any() for c in candidates):
        notes.append("no task has two attempts in the pilot: attempt noise cannot be told "
                     "from task spread, so more attempts are assumed not to help (cautious)")
    means = np.column_stack([wide[c].loc[shared, "mean"].to_numpy(np.float64)
                             for c in candidates])
    noise_mean = [float(np.mean(n_)) for n_ in noise]
    spreads = [max(0.0, float(np.var(means[:, i], ddof=1)) - noise_mean[i])
               for i in range(len(candidates))]
    task_spread = math.sqrt(float(np.mean(spreads)))
    if len(candidates) == 2:
        d = means[:, 0] - means[:, 1]
        omega2 = max(0.0, float(np.var(d, ddof=1)) - sum(noise_mean))
        notes.append(f"interaction measured on the {len(shared)} tasks both candidates ran")
    else:
        omega2 = 2.0 * task_spread**2
        notes.append(
            "one candidate in the pilot: how much tasks differ in a candidate's gain cannot "
            "be measured; taken as if the two candidates' task means were unrelated "
            "(interaction = sqrt(2) * task_spread, cautious)"
        )
    return PilotVariance(
        base_rate=float(means.mean()),
        within=tuple(within),
        task_spread=task_spread,
        interaction=math.sqrt(omega2),
        n_tasks=len(shared),
        candidates=candidates,
        notes=notes,
    )


def _difference_sd(
    attempts: int, base_rate: float, task_spread: float, interaction: float, pilot: Any,
    pilot_options: dict[str, Any],
) -> float:
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise StatsError(f"attempts={attempts!r}; expected a whole number, at least 1")
    if not interaction >= 0:
        raise StatsError(f"interaction={interaction!r}; expected a standard deviation >= 0")
    if pilot is not None:
        if task_spread or interaction:
            raise StatsError(
                "pass pilot= or task_spread=/interaction=, not both: the pilot's estimates "
                "replace them"
            )
        estimate = pilot if isinstance(pilot, PilotVariance) else pilot_variance(
            pilot, **pilot_options)
        return estimate.difference_sd(attempts)
    if not 0 < base_rate < 1:
        raise StatsError(f"base_rate={base_rate!r}; expected a rate strictly between 0 and 1")
    within = base_rate * (1 - base_rate) - task_spread**2
    if not task_spread >= 0 or within <= 0:
        raise StatsError(
            f"task_spread={task_spread!r}; expected 0 <= task_spread < "
            f"sqrt(base_rate * (1 - base_rate)) = {math.sqrt(base_rate * (1 - base_rate)):.3f}"
        )
    return math.sqrt(interaction**2 + 2 * within / attempts)


def min_detectable_difference(
    n_tasks: int,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    interaction: float = 0.0,
    pilot: Any = None,
    by: str = "candidate",
    task: str = "task_name",
    value: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest difference in mean reward that :func:`compare_runs` detects with ``power``.

    The design: two candidates on the same ``n_tasks`` tasks, ``attempts`` attempts per
    task each, compared by the paired t test over tasks at level ``alpha``. The answer is
    exact for normal per-task differences (noncentral t with ``n_tasks - 1`` degrees of
    freedom); the coverage benchmark checks it on 0/1 rewards.

    Parameters
    ----------
    n_tasks, attempts
        The planned design.
    base_rate, task_spread
        0/1 rewards: the mean pass rate, and the standard deviation over tasks of a
        candidate's task pass rates (harder and easier tasks; 0: all equally hard).
    interaction
        Standard deviation over tasks of the true per-task gain of one candidate over the
        other (tasks differ in how much a candidate gains: Miller 2024's omega). 0 assumes
        every task moves by the same amount, which overstates power when they do not; a
        pilot measures it.
    pilot
        A pilot trial table with the two candidates (or one, or a
        :class:`PilotVariance`): its variance components (:func:`pilot_variance`) replace
        ``base_rate``, ``task_spread`` and ``interaction``. ``by``, ``task`` and ``value``
        read it.
    alpha, power
        Level of the test and the power wanted.

    Returns
    -------
    float

    Examples
    --------
    >>> from metrickit.compute.power import min_detectable_difference
    >>> round(min_detectable_difference(100, attempts=3, base_rate=0.5), 3)
    0.115
    >>> round(min_detectable_difference(100, attempts=3, base_rate=0.5, interaction=0.2), 3)
    0.129
    """
    sd = _difference_sd(attempts, base_rate, task_spread, interaction, pilot,
                        {"by": by, "task": task, "value": value})
    return detectable_difference(sd, n_tasks, alpha, power)


def tasks_needed(
    difference: float,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    interaction: float = 0.0,
    pilot: Any = None,
    by: str = "candidate",
    task: str = "task_name",
    value: str | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """How many tasks :func:`compare_runs` needs to detect ``difference`` with ``power``.

    The inverse of :func:`min_detectable_difference` (same design, parameters and
    assumptions): the fewest tasks whose power at ``difference`` is at least ``power``.

    Examples
    --------
    >>> from metrickit.compute.power import tasks_needed
    >>> tasks_needed(0.1, attempts=3, base_rate=0.5)
    133
    >>> tasks_needed(0.1, attempts=3, base_rate=0.5, interaction=0.2)
    165
    """
    if not difference > 0:
        raise StatsError(f"difference={difference!r}; expected a positive difference in rate")
    sd = _difference_sd(attempts, base_rate, task_spread, interaction, pilot,
                        {"by": by, "task": task, "value": value})
    if not sd > 0:
        return 2

    def enough(n: int) -> bool:
        return power_at(difference, sd, n, alpha) >= power

    low, high = 2, 4
    while not enough(high):
        low, high = high, high * 2
        if high > 10**9:
            raise StatsError(f"difference={difference!r} needs more than 10**9 tasks")
    while low < high:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid + 1
    return low
