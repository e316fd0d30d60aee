"""Shared steps of the non-Harbor trial readers (Inspect AI, lm-evaluation-harness,
Terminal-Bench 1, tidy tables): one row dict and one reward dict per trial in, the trial
table out.

Each reader builds, per trial, a row dict holding the trial table's metadata columns
(``job``, ``eval``, ``agent``, ..., ``trial_dir``; ``_status`` only when the trial is
``running`` or ``invalid``) and a reward dict (``{key: bool | int | float}``, ``{}`` or
None). :func:`build_trials` turns both lists into the frame.

The frame itself comes from the shared trial-table builders of
:mod:`metrickit._core.schema`, the ones ``read_harbor_job`` uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from metrickit._core.schema import (
    KIND_PREFIX,
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    TRIAL_STATUSES,
    trials_pandas,
    trials_polars,
)
from metrickit.errors import RewardInputError

Backend = Literal["pandas", "polars"]

META: tuple[str, ...] = LEADING_COLUMNS
TAIL: tuple[str, ...] = TRAILING_COLUMNS
#: every column a reader fills (``_status``, ``has_reward`` and the reward columns come
#: from the reward dicts)
ROW_COLUMNS = tuple(c for c in (*META, *TAIL) if c not in ("_status",))


def eval_key(agent: str | None, model: str | None, source: str | None) -> str:
    """Harbor's evaluation key: ``agent__model__source`` (``agent__source`` without a
    model; source ``adhoc`` when there is none), the rule of ``read_harbor_job``'s ``eval``.

    Examples
    --------
    >>> eval_key("generate", "gpt-4o", "gsm8k")
    'generate__gpt-4o__gsm8k'
    >>> eval_key("oracle", None, None)
    'oracle__adhoc'
    """
    dataset = source or "adhoc"
    return f"{agent}__{model}__{dataset}" if model else f"{agent}__{dataset}"


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


def _value_kind(value: Any) -> tuple[float, int] | None:
    if isinstance(value, bool):
        return (1.0 if value else 0.0), 3
    if isinstance(value, int | np.integer):
        if abs(int(value)) > 2**53:
            return None
        return float(value), 1
    if isinstance(value, float | np.floating):
        if not math.isfinite(float(value)):
            return None
        return float(value), 2
    return None


def build_trials(
    rows: Sequence[dict[str, Any]],
    rewards: Sequence[Mapping[str, Any] | None],
    backend: Backend,
    *,
    where: Sequence[str] | None = None,
) -> Any:
    """The trial table from one row dict and one reward dict per trial.

    ``_status``: ``running``/``invalid`` when the row says so, else ``ok`` (a reward with
    keys), ``empty`` (``{}``) or ``null`` (None). ``has_reward``: the reward dict is not
    None (unless the row sets it). Zero-fill: within one ``eval`` a key some trial lacks is
    0 with ``_kind_<key> == "missing"``, as Harbor fills it; a key that no trial of an
    ``eval`` has is NA (NaN) for that whole evaluation, never 0. ``where`` names each row
    for error messages (file:line, sample ...).
    """
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas' or 'polars'")
    n = len(rows)
    keys = sorted({k for r in rewards if r for k in r})
    clash = [k for k in keys if k in META or k in TAIL or k.startswith(KIND_PREFIX)]
    if clash:
        raise RewardInputError(
            f"reward key {clash[0]!r} clashes with a trial-table column of the same name; "
            "rename the score/metric"
        )
    values = {k: np.zeros(n, dtype=np.float64) for k in keys}
    kinds = {k: np.zeros(n, dtype=np.uint8) for k in keys}
    status: list[str] = []
    for i, (row, reward) in enumerate(zip(rows, rewards, strict=True)):
        if row.get("_status") in ("running", "invalid"):
            status.append(row["_status"])
        else:
            status.append("null" if reward is None else ("ok" if reward else "empty"))
        for key, value in (reward or {}).items():
            checked = _value_kind(value)
            if checked is None:
                label = where[i] if where is not None else f"row {i}"
                raise RewardInputError(
                    f"{label}: reward {key!r} is {value!r} ({type(value).__name__}); "
                    "expected a finite number (int, float or bool)"
                )
            values[key][i], kinds[key][i] = checked
    evals = [r.get("eval") for r in rows]
    for key in keys:
        present_evals = {e for e, kind in zip(evals, kinds[key], strict=True) if kind}
        absent = np.fromiter((e not in present_evals for e in evals), dtype=bool, count=n)
        values[key][absent] = np.nan
    columns: dict[str, list[Any]] = {c: [r.get(c) for r in rows] for c in ROW_COLUMNS}
    columns["has_reward"] = [
        (rw is not None) if r.get("has_reward") is None else bool(r["has_reward"])
        for r, rw in zip(rows, rewards, strict=True)
    ]
    columns["reward_valid"] = [
        bool(r["reward_valid"]) if r.get("reward_valid") is not None else False for r in rows
    ]
    return _frame(columns, status, keys, values, kinds, backend)


def _frame(
    columns: dict[str, list[Any]],
    status: list[str],
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
    backend: Backend,
) -> Any:
    """The frame, by the shared trial-table builders of :mod:`metrickit._core.schema`."""
    codes = np.array([TRIAL_STATUSES.index(s) for s in status], dtype=np.int8)
    # Harbor's n_steps counts the steps of a multi-step trial, 0 for a single-step one; the
    # other formats have no steps: 0 as well (the schema holds no null there)
    columns["n_steps"] = [0 if v is None else v for v in columns["n_steps"]]
    if backend == "polars":
        return trials_polars(columns, codes, keys, values, kinds)
    return trials_pandas(columns, codes, keys, values, kinds)
