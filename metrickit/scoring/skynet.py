"""Compatibility layer for scorer files written for the optimisation service.

Scorer files do ``from skynet import llm, reward, observation, service_cost``. metrickit
registers this module as ``skynet`` when it loads or runs a scorer file
(:func:`metrickit.load_scorer`, :func:`metrickit.check_scorer`), so those files run
unchanged. Elsewhere (a notebook, your own tests), call :func:`install` first::

    import metrickit.scoring.skynet
    metrickit.scoring.skynet.install()   # now `import skynet` gives this module
    from skynet import llm, reward

``install`` leaves an already imported ``skynet`` module alone.

* ``reward`` is :func:`metrickit.reward`;
* ``observation()`` / ``service_cost()`` return the current case's measured latency (ms) and
  cost (USD), set by :func:`metrickit.score_cases` and :func:`metrickit.check_scorer`;
* ``llm(prompt, **kwargs)`` calls the judge configured with :func:`metrickit.set_judge`
  and raises :class:`metrickit.JudgeNotConfiguredError` (saying how) without one.
"""

from __future__ import annotations

import sys
from types import ModuleType

from metrickit.scoring.current import observation, service_cost
from metrickit.scoring.judge import llm
from metrickit.scoring.spec import reward

__all__ = ["install", "llm", "observation", "reward", "service_cost"]


def install() -> ModuleType:
    """Register this module as ``skynet`` (unless one is imported already) and return it."""
    return sys.modules.setdefault("skynet", sys.modules[__name__])
