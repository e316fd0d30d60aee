"""Shared steps of the non-Harbor trial readers (Inspect AI, lm-evaluation-harness,
Terminal-Bench 1, tidy tables): one row dict and one reward dict per trial in, the trial
table out.

Each reader builds, per trial, a row dict holding the trial table's metadata columns
(``run``, ``job``, ``eval``, ``agent``, ..., ``trial_dir``; ``_status`` only when the trial
is ``running`` or ``invalid``) and a reward dict (``{key: bool | int | float}``, ``{}`` or
None). :func:`build_trials` turns both lists into the frame. A reader fills what its files
record about the run and the configuration (``run``, ``agent_version``, ``agent_kwargs`` as
canonical JSON, ``dataset``, ``dataset_version``, ``harness_version``, ``format``); the
rules every reader shares fill the rest: :func:`fill_runs` (a row without a ``run``
belongs to its job, its file or the table) and the candidate labels
(:func:`metrickit._core.identity.assign_candidates`, with the ``kwarg_<name>`` columns).
A key of the row dict that is no column of the trial table is not kept.

The frame itself comes from the shared trial-table builders of
:mod:`metrickit._core.schema`, the ones ``read_harbor_job`` uses.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal, ParamSpec, TypeVar

import numpy as np

from metrickit._core.identity import KWARG_PREFIX, assign_candidates
from metrickit._core.schema import (
    KIND_PREFIX,
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    TRIAL_STATUSES,
    check_backend,
    trials_pandas,
    trials_polars,
)
from metrickit._core.values import MISSING, describe_value
from metrickit.errors import MetrickitError, TrialSourceError
from metrickit.io.jsonl import parse_rows

Backend = Literal["pandas", "polars"]

META: tuple[str, ...] = LEADING_COLUMNS
TAIL: tuple[str, ...] = TRAILING_COLUMNS
#: every column a reader fills (``_status``, ``has_reward`` and the reward columns come
#: from the reward dicts)
ROW_COLUMNS = tuple(c for c in (*META, *TAIL) if c not in ("_status",))


_P = ParamSpec("_P")
_R = TypeVar("_R")
_UNSET: Any = object()
#: a lone surrogate that is not one of ``os.fsdecode``'s (U+DC80..U+DCFF keep the bytes of
#: a path that is not UTF-8; the trial-table builders handle those as paths)
_SURROGATE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


class Cursor:
    """Where a reader is in its input: the file (with line or trial), and the field and
    value it is reading. A reader that sets ``field``/``value`` (or calls :meth:`at`)
    before a step makes an unexpected failure of that step name them."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.field: str | None = None
        self.value: Any = _UNSET

    def at(self, field: str | None, value: Any = _UNSET) -> Any:
        """Note the field (and value) read next; returns ``value``."""
        self.field, self.value = field, value
        return value

    def message(self, exc: BaseException) -> str:
        parts = [self.where]
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        if self.value is not _UNSET:
            parts.append(f"value {describe_value(self.value)}")
        what = str(exc).splitlines()[0][:300] if str(exc) else ""
        return (": ".join(parts) + f": cannot be read ({type(exc).__name__}"
                + (f": {what}" if what else "") + "); expected what the format documents "
                "(see docs/readers.md and RELIABILITY.md)")


def unexpected(exc: BaseException) -> bool:
    """An exception a reader did not raise on purpose, from input it did not expect: not a
    metrickit error, a warning turned into an error, a missing optional dependency, or an
    interrupt (those pass through unchanged)."""
    return isinstance(exc, Exception) and not isinstance(
        exc, MetrickitError | Warning | ImportError)


@contextmanager
def reading(
    where: str | Any, *, error: type[MetrickitError] = TrialSourceError
) -> Iterator[Cursor]:
    """The one place a reader's unexpected failure becomes a metrickit error.

    Inside ``with reading(file) as at:`` any exception that is not a metrickit error
    (``ValueError``, ``TypeError``, ``KeyError``, ``OverflowError``, ``RecursionError``,
    ``UnicodeError``, ``OSError``, a ``zipfile.BadZipFile``, a library's own error ...) is
    raised again as ``error`` (:class:`~metrickit.errors.TrialSourceError` unless given)
    naming ``where`` and the field and value ``at`` points to, the original chained as
    its cause.

    Examples
    --------
    >>> with reading("run/results.json: results[0]") as at:  # doctest: +ELLIPSIS
    ...     int(at.at("total_input_tokens", "12k"))
    Traceback (most recent call last):
    metrickit.errors.TrialSourceError: run/results.json: results[0]: field 'total_input_tokens': value '12k' (str): cannot be read (ValueError: ...
    """  # noqa: E501
    at = Cursor(str(where))
    try:
        yield at
    except Exception as exc:
        if not unexpected(exc):
            raise
        raise error(at.message(exc)) from exc


def guarded(
    what: str, *, error: type[MetrickitError] = TrialSourceError
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate a public reader so that nothing but metrickit's documented errors leaves it:
    an unexpected exception becomes ``error`` naming the reader and the path it was given
    (the reader's own :func:`reading` blocks name the file, field and value first)."""

    def wrap(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def reader(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if not unexpected(exc) or (
                    isinstance(exc, ValueError) and str(exc).startswith("backend=")
                ):
                    raise
                source: Any = args[0] if args else next(iter(kwargs.values()), "?")
                shown = (repr(os.fspath(source)) if isinstance(source, str | os.PathLike)
                         else f"a {type(source).__name__} of {len(source)} rows"
                         if hasattr(source, "columns") else describe_value(source, 120))
                raise error(Cursor(f"{what}({shown})").message(exc)) from exc

        return reader

    return wrap


def split_model(name: str | None) -> tuple[str | None, str | None]:
    """``provider/model`` -> (``model``, ``provider``), split at the first ``/``, the way
    Harbor stores ``anthropic/claude-sonnet-4-5`` as model ``claude-sonnet-4-5`` and
    provider ``anthropic``. A name without ``/`` has no provider.

    Examples
    --------
    >>> split_model("openai/gpt-4o")
    ('gpt-4o', 'openai')
    >>> split_model("openrouter/anthropic/claude-3")
    ('anthropic/claude-3', 'openrouter')
    >>> split_model("gpt2")
    ('gpt2', None)
    """
    if not name:
        return None, None
    provider, sep, model = name.partition("/")
    return (model, provider) if sep and model else (name, None)


def parse_time(value: Any) -> datetime | None:
    """An ISO 8601 timestamp (``...+00:00`` or ``...Z``) as an aware UTC datetime; None
    stays None. A naive timestamp is taken as UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        stamp = value
    else:
        text = str(value)
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        stamp = datetime.fromisoformat(text)
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC)


def ms_between(start: datetime | None, end: datetime | None) -> float | None:
    """Milliseconds from ``start`` to ``end``; None when either is missing."""
    if start is None or end is None:
        return None
    return (end - start).total_seconds() * 1000.0


def empty_row() -> dict[str, Any]:
    """A row with every column the readers fill set to None."""
    return dict.fromkeys(ROW_COLUMNS)


def build_trials(
    rows: Sequence[dict[str, Any]],
    rewards: Sequence[Mapping[str, Any] | None],
    backend: Backend,
    *,
    where: Sequence[str] | None = None,
    reward_field: str = "rewards",
    error: type[Exception] = TrialSourceError,
) -> Any:
    """The trial table from one row dict and one reward dict per trial, in row order.

    ``_status``: ``running``/``invalid`` when the row says so, else ``ok`` (a reward with
    keys), ``empty`` (``{}``) or ``null`` (None). ``has_reward``: the reward dict is not
    None (unless the row sets it). Reward values follow the reward-file rules (finite
    numbers or booleans, integers exact in a float64). Zero-fill: within one ``eval`` a key
    some trial lacks is 0 with ``_kind_<key> == "missing"``, as Harbor fills it; a key that
    no trial of an ``eval`` has is NA (NaN, still ``missing``) for that whole evaluation,
    never 0. When no trial has a reward yet there is one ``reward`` column, all missing.
    ``where`` names each row for error messages (file:line, sample ...), ``reward_field``
    the field its rewards came from; ``error`` is the exception class raised.
    """
    check_backend(backend)
    parsed, problems = parse_rows("<trials>", list(rewards))
    if problems:
        p = problems[0]
        label = where[p.line - 1] if where is not None else f"row {p.line}"
        raise error(f"{label}: {reward_field}: {p.message}")
    status = parsed.status.astype(np.int8)
    for i, row in enumerate(rows):
        if row.get("_status") in ("running", "invalid"):
            status[i] = TRIAL_STATUSES.index(row["_status"])
    columns: dict[str, list[Any]] = {c: [r.get(c) for r in rows] for c in ROW_COLUMNS}
    columns["has_reward"] = [
        (rw is not None) if r.get("has_reward") is None else bool(r["has_reward"])
        for r, rw in zip(rows, rewards, strict=True)
    ]
    columns["reward_valid"] = [
        bool(r["reward_valid"]) if r.get("reward_valid") is not None else False for r in rows
    ]
    label = where[0] if where else "the rewards"
    return trial_table(columns, status, parsed.values, parsed.kinds, backend, origin=label,
                       error=error, where=where)


def trial_table(
    columns: Mapping[str, Sequence[Any]],
    status: np.ndarray,
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
    backend: Backend,
    *,
    origin: str = "the rewards",
    error: type[Exception] = TrialSourceError,
    where: Sequence[str] | None = None,
) -> Any:
    """The trial table from columns: one sequence per column of :data:`ROW_COLUMNS` plus
    ``has_reward`` and ``reward_valid``, the status codes, and per reward key its values
    and kind codes (checked already). Applies the trial-table rules every reader shares:
    text is text (no lone UTF-16 surrogate, which no file and no frame can hold), one
    all-missing ``reward`` column when no trial has a reward, no reward key named like a
    column, and NA for a key no trial of an evaluation has. ``where`` names each row for
    error messages (else ``origin`` and the row's position)."""
    n = len(status)
    for column, cells in columns.items():
        # one search of the column's distinct text joined (the pattern is one character)
        if not _SURROGATE.search("\n".join([v for v in _distinct(cells) if isinstance(v, str)])):
            continue
        for i, value in enumerate(cells):  # the first bad row, for the message
            if isinstance(value, str) and _SURROGATE.search(value):
                label = where[i] if where is not None else f"{origin}: row {i}"
                raise error(
                    f"{label}: {column} {value[:80]!r} holds a lone UTF-16 surrogate (not "
                    "text a file or a frame can hold: a broken \\u escape at the source); "
                    "expected text"
                )
    values, kinds = dict(values), dict(kinds)
    keys = list(values)
    if not keys:
        # No trial has a reward yet: one all-missing ``reward`` column keeps the frame a
        # trial table (else every numeric column would look like a reward key).
        keys = ["reward"]
        values["reward"] = np.zeros(n, dtype=np.float64)
        kinds["reward"] = np.zeros(n, dtype=np.uint8)
    added = {*META, *TAIL}
    clash = [k for k in keys if k in added or k.startswith((KIND_PREFIX, KWARG_PREFIX))]
    if clash:
        raise error(
            f"reward key {clash[0]!r} (in {origin}) clashes with a column of the trial table; "
            "rename the key at its source (the verifier's reward, the score or metric)"
        )
    cols = {c: list(v) for c, v in columns.items()}
    fill_runs(cols, origin)
    assign_candidates(cols)
    # Harbor aggregates each evaluation of each run on its own keys
    _missing_per_evaluation(list(zip(cols["run"], cols["eval"], strict=True)), values, kinds)
    return _frame(cols, status, keys, values, kinds, backend)


def _distinct(cells: Sequence[Any]) -> Iterable[Any]:
    """The distinct values of a column (each looked at once), or all of them where a value
    cannot be hashed."""
    try:
        return set(cells)
    except TypeError:
        return cells


def fill_runs(columns: dict[str, list[Any]], origin: str) -> None:
    """A row without a ``run`` belongs to its ``job``, else to its source file
    (``trial_dir``), else to ``origin`` (the one table it came from); a row without a
    ``dataset`` was evaluated on its ``source``."""
    runs, datasets = columns["run"], columns["dataset"]
    for i, run in enumerate(runs):
        if run is None:
            runs[i] = columns["job"][i] or columns["trial_dir"][i] or origin
        if datasets[i] is None:  # the tasks' source is the dataset unless a reader says so
            datasets[i] = columns["source"][i]


def _missing_per_evaluation(
    evals: list[Any], values: dict[str, np.ndarray], kinds: dict[str, np.ndarray]
) -> None:
    """NaN for a key in the rows of every evaluation in which no trial has it: Harbor
    aggregates each evaluation on its own keys, so the key is not a dimension there."""
    if not evals:
        return
    codes, n_evals = _codes(evals)
    for key in values:
        has = np.zeros(n_evals, dtype=bool)
        has[codes[kinds[key] != MISSING]] = True
        if not has.all():
            values[key][~has[codes]] = np.nan


def _codes(labels: list[Any]) -> tuple[np.ndarray, int]:
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(labels, dtype=object), use_na_sentinel=False)
    return codes, len(uniques)


def _frame(
    columns: dict[str, list[Any]],
    status: np.ndarray,
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
    backend: Backend,
) -> Any:
    """The frame, by the shared trial-table builders of :mod:`metrickit._core.schema`."""
    codes = status
    # Harbor's n_steps counts the steps of a multi-step trial, 0 for a single-step one; the
    # other formats have no steps: 0 as well (the schema holds no null there)
    columns["n_steps"] = [0 if v is None else v for v in columns["n_steps"]]
    if backend == "polars":
        return trials_polars(columns, codes, keys, values, kinds)
    return trials_pandas(columns, codes, keys, values, kinds)
