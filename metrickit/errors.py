"""Exceptions and warnings metrickit raises and emits.

Every error subclasses :class:`MetrickitError` and the matching built-in, so
``except ValueError`` keeps working for callers who do not know metrickit. Every warning
subclasses :class:`MetrickitWarning`, so ``warnings.simplefilter("ignore",
MetrickitWarning)`` silences metrickit alone.
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
    """A Harbor ``metric.py`` script failed, timed out or wrote an unusable result.

    ``stderr_tail`` holds the end of what the script wrote to stderr.
    """

    def __init__(self, message: str, stderr_tail: str = "") -> None:
        if stderr_tail:
            message = f"{message}\n--- end of the script's stderr ---\n{stderr_tail}"
        super().__init__(message)
        self.stderr_tail = stderr_tail


class MetricScriptTimeout(MetricScriptError, TimeoutError):
    """A metric script ran past its timeout and was killed."""


class MetricScriptExit(MetricScriptError):
    """A metric script exited with a non-zero status."""


class MetricScriptOutputError(MetricScriptError):
    """A metric script wrote no output file, or one that is not a JSON object of numbers."""


class ScorerError(MetrickitError, ValueError):
    """A scorer cannot be loaded or used."""


class SpecError(MetrickitError, ValueError):
    """A REWARD_SPEC is invalid; ``problems`` lists every problem found, one message each."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class RewardInputError(MetrickitError, ValueError):
    """A value given to ``reward()`` or ``RewardSpec.score_frame`` that the spec cannot score."""


class TrialSourceError(MetrickitError, ValueError):
    """An evaluation log, output folder, run folder or tidy table that cannot be read into a
    trial table (Inspect AI, lm-evaluation-harness, Terminal-Bench, ``trials_from_frame``)."""


class JudgeNotConfiguredError(MetrickitError, RuntimeError):
    """``skynet.llm()`` was called but no judge model was configured with ``set_judge``."""


class StatsError(MetrickitError, ValueError):
    """Input a statistic cannot be computed from (empty, non-binary for Wilson, a column
    that does not exist, a pass@k ``k`` that is not a positive integer, ...)."""


class StoreError(MetrickitError, RuntimeError):
    """A run store that cannot be opened or written (locked by another process past the
    wait, a changed run under an id it already holds, a file that is not a store)."""


class MetrickitWarning(UserWarning):
    """Base class of every warning metrickit emits."""


class PassAtKSkipped(MetrickitWarning):
    """pass@k was not computed for an evaluation (or a k); the message says why."""


class UncopiedInputWarning(MetrickitWarning):
    """A case's input could not be deep-copied before a scorer call."""


@dataclass(frozen=True)
class Problem:
    """One problem found in an input, with enough context to find and fix it.

    ``line`` is 1-based; ``key`` is the reward key involved, if any; ``value`` the bad
    value as written (its ``repr``, shortened: ``"'high'"``, ``"NaN"``), if any.
    """

    source: str
    line: int
    message: str
    key: str | None = None
    value: str | None = None

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"
