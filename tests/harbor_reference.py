"""Plain-Python reference implementations of Harbor 0.25, written for the tests.

``harbor_sum_py`` is CPython 3.12's ``sum`` written out in Python, so the tests can
check metrickit's vectorised version on Python 3.11 too; ``test_harbor_math`` checks this
reference itself against a real Python >= 3.12 where one is installed, and against a
golden corpus produced by one.
"""

from __future__ import annotations

import math


def harbor_sum_py(values: list[int | float]) -> int | float:
    it = iter(values)
    i_result = 0
    overflowed = False  # CPython's C-long int sum overflowed: plain + from then on
    for item in it:
        if isinstance(item, int):
            i_result += item
            overflowed = overflowed or not -(2**63) <= i_result <= 2**63 - 1
            continue
        if overflowed:
            result = i_result + item
            for x in it:
                result = result + x
            return result
        f_result = i_result + item  # int + float
        c = 0.0
        for x in it:
            if isinstance(x, float):
                t = f_result + x
                if abs(f_result) >= abs(x):
                    c += (f_result - t) + x
                else:
                    c += (x - t) + f_result
                f_result = t
            else:
                f_result += float(x)
        if c and math.isfinite(c):
            f_result += c
        return f_result
    return i_result


def aggregate_reward_dicts(rewards, metric_name, agg):
    """harbor/metrics/base.py, verbatim in behaviour."""
    reward_keys = sorted({key for reward in rewards if reward is not None for key in reward})
    if len(reward_keys) <= 1:
        values = [0 if reward is None else next(iter(reward.values()), 0) for reward in rewards]
        return {metric_name: agg(values)}
    return {
        key: agg([0 if reward is None else reward.get(key, 0) for reward in rewards])
        for key in reward_keys
    }


def _as_harbor(rewards):
    # Harbor's pydantic models turn JSON booleans into floats.
    return [
        None if r is None else {k: (float(v) if isinstance(v, bool) else v) for k, v in r.items()}
        for r in rewards
    ]


def harbor_aggregate(rewards, metric="mean"):
    rewards = _as_harbor(rewards)
    fns = {
        "mean": lambda v: harbor_sum_py(v) / len(v) if v else 0,
        "sum": harbor_sum_py,
        "min": min,
        "max": max,
    }
    return aggregate_reward_dicts(rewards, metric, fns[metric])


def large_case(seed: int, n: int, style: str) -> list[int | float]:
    """A long reward column made with Python's own ``random`` (its stream is stable
    across versions), so a golden sum computed by Python 3.12 stays valid."""
    import random

    rng = random.Random(seed)
    out: list[int | float] = []
    for _ in range(n):
        u = rng.random()
        if style == "rewards":  # 0/1 ints, four-decimal floats, zero fills
            out.append(rng.randint(0, 1) if u < 0.3 else 0 if u < 0.4 else round(rng.random(), 4))
        elif style == "wide":  # magnitudes from 1e-3 to 1e16, both signs, some ints
            out.append(
                rng.randint(-5, 5) if u < 0.2 else rng.gauss(0, 1) * 10.0 ** rng.randint(-3, 16)
            )
        else:  # "cancel": huge values that cancel, small ones in between
            out.append(rng.choice([1e16, -1e16, 1.0, 1, 0.1, -0.1, 3e-17]))
    return out
