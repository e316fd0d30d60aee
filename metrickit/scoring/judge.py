"""The judge model a scorer reaches through ``skynet.llm``.

The service routes ``llm(...)`` to its "metric model". metrickit has no model of its own, so
the user plugs one in: any callable ``judge(prompt, **kwargs) -> str`` (``kwargs`` holds what
the scorer passed, e.g. ``input=...``), set with :func:`set_judge`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from metrickit._core.values import short_repr
from metrickit.errors import JudgeNotConfiguredError, ScorerError

__all__ = ["Judge", "get_judge", "llm", "set_judge"]

Judge = Callable[..., Any]
_judge: Judge | None = None

NOT_CONFIGURED = (
    "skynet.llm() was called but no judge model is configured. metrickit does not call a model "
    "by itself: give it one with metrickit.set_judge(judge), where judge(prompt, **kwargs) "
    "returns the model's answer as a string (kwargs holds what the scorer passed, e.g. input=...). "
    "Example: mk.set_judge(lambda prompt, input=None: client.complete(prompt + '\\n' + input))"
)


def set_judge(judge: Judge | None) -> Judge | None:
    """Configure the judge model that ``skynet.llm(...)`` calls; return the previous one.

    Parameters
    ----------
    judge
        A callable ``judge(prompt, **kwargs) -> str``, or None to remove the judge.

    Examples
    --------
    >>> import metrickit as mk
    >>> previous = mk.set_judge(lambda prompt, **kw: "PASS. Looks right.")
    >>> from metrickit.scoring.skynet import llm
    >>> llm("Answer PASS or FAIL.", input="2 + 2 = 4")
    'PASS. Looks right.'
    >>> _ = mk.set_judge(previous)
    """
    global _judge
    if judge is not None and not callable(judge):
        raise TypeError(
            f"set_judge() needs a callable judge(prompt, **kwargs) -> str, got {judge!r}"
        )
    previous, _judge = _judge, judge
    return previous


def get_judge() -> Judge | None:
    """The judge set with :func:`set_judge`, or None."""
    return _judge


def llm(prompt: str, **kwargs: Any) -> str:
    """Ask the configured judge model; what ``from skynet import llm`` gives a scorer.

    Raises
    ------
    JudgeNotConfiguredError
        No judge was configured; the message says how to configure one.
    ScorerError
        The judge returned something other than a non-empty string (None, a number, a
        dict, ``""``): a scorer would read it as a verdict. The message names what it got.
    """
    judge = _judge
    if judge is None:
        raise JudgeNotConfiguredError(NOT_CONFIGURED)
    answer = judge(prompt, **kwargs)
    if not isinstance(answer, str) or not answer.strip():
        raise ScorerError(
            f"the judge returned {short_repr(answer, 80)} ({type(answer).__name__}); "
            "skynet.llm() needs the model's answer as a non-empty string: make the function "
            "given to metrickit.set_judge return the reply's text (e.g. "
            "reply.choices[0].message.content)")
    return answer
