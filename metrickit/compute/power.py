"""Planning a comparison: the smallest difference a design detects, the tasks it needs."""

from __future__ import annotations

import math

from metrickit.compute.intervals import sps
from metrickit.errors import StatsError


def detectable_difference(sd: float, n_tasks: int, alpha: float, power: float) -> float:
    if n_tasks < 2:
        return math.inf
    df = n_tasks - 1
    crit = float(sps.t.ppf(1 - alpha / 2, df)) + float(sps.t.ppf(power, df))
    return crit * sd / math.sqrt(n_tasks)


def _difference_sd(attempts: int, base_rate: float, task_spread: float) -> float:
    if attempts < 1:
        raise StatsError(f"attempts={attempts!r}; expected at least 1")
    if not 0 < base_rate < 1:
        raise StatsError(f"base_rate={base_rate!r}; expected a rate strictly between 0 and 1")
    within = base_rate * (1 - base_rate) - task_spread**2
    if not task_spread >= 0 or within <= 0:
        raise StatsError(
            f"task_spread={task_spread!r}; expected 0 <= task_spread < "
            f"sqrt(base_rate * (1 - base_rate)) = {math.sqrt(base_rate * (1 - base_rate)):.3f}"
        )
    return math.sqrt(2 * within / attempts)


def min_detectable_difference(
    n_tasks: int,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """The smallest difference in pass rate that :func:`compare_runs` detects with ``power``.

    The design: two runs on the same ``n_tasks`` tasks, ``attempts`` 0/1 attempts per task
    each, compared by the paired t test over tasks at level ``alpha``. Task pass rates
    vary around ``base_rate`` with standard deviation ``task_spread`` (0: every task is
    equally hard; harder and easier tasks make attempts more alike within a task, which
    shrinks the noise of a per-task mean). The per-task difference then has standard
    deviation ``sqrt(2 (p(1-p) - spread**2) / attempts)``, and the answer is
    ``(t_{1-alpha/2} + t_{power}) * sd / sqrt(n_tasks)`` with ``n_tasks - 1`` degrees of
    freedom. It assumes a run's improvement is the same on every task; checked by
    simulation in the tests.

    Examples
    --------
    >>> from metrickit.compute.stats import min_detectable_difference
    >>> round(min_detectable_difference(100, attempts=3, base_rate=0.5), 3)
    0.116
    """
    sd = _difference_sd(attempts, base_rate, task_spread)
    return detectable_difference(sd, n_tasks, alpha, power)


def tasks_needed(
    difference: float,
    attempts: int = 1,
    base_rate: float = 0.5,
    *,
    task_spread: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """How many tasks :func:`compare_runs` needs to detect ``difference`` with ``power``.

    The inverse of :func:`min_detectable_difference` (same design and assumptions).

    Examples
    --------
    >>> from metrickit.compute.stats import tasks_needed
    >>> tasks_needed(0.1, attempts=3, base_rate=0.5)
    133
    """
    if not difference > 0:
        raise StatsError(f"difference={difference!r}; expected a positive difference in rate")
    sd = _difference_sd(attempts, base_rate, task_spread)
    low, high = 2, 4
    while detectable_difference(sd, high, alpha, power) > difference:
        low, high = high, high * 2
        if high > 10**9:
            raise StatsError(f"difference={difference!r} needs more than 10**9 tasks")
    while low < high:
        mid = (low + high) // 2
        if detectable_difference(sd, mid, alpha, power) <= difference:
            high = mid
        else:
            low = mid + 1
    return low
