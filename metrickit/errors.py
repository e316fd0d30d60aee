"""Exceptions raised by metrickit.

Every error subclasses :class:`MetrickitError` and the matching built-in, so
``except ValueError`` keeps working for callers who do not know metrickit.
"""

from __future__ import annotations

from dataclasses import dataclass


class MetrickitError(Exception):
    """Base class of every error metrickit raises on purpose."""


class RewardFileError(MetrickitError, ValueError):
    """A reward file (or in-memory rows) does not follow Harbor's reward JSONL contract."""


class AggregationError(MetrickitError, ValueError):
    """An aggregate cannot be computed (empty input for min/max, invalid rows, ...)."""


class HarborJobError(MetrickitError, ValueError):
    """A Harbor job or trial folder cannot be read."""


class MetricError(MetrickitError, ValueError):
    """A metric (built-in, user-defined or a metric script) failed or returned garbage."""


class MetricScriptError(MetricError):
    """A Harbor ``metric.py`` script failed, timed out or wrote an unusable result."""


class ScorerError(MetrickitError, ValueError):
    """A scorer cannot be loaded or used."""


class SpecError(MetrickitError, ValueError):
    """A REWARD_SPEC is invalid."""


@dataclass(frozen=True)
class Problem:
    """One problem found in an input, with enough context to find and fix it.

    ``line`` is 1-based; ``key`` is the reward key involved, if any.
    """

    source: str
    line: int
    message: str
    key: str | None = None
    value: str | None = None

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"
