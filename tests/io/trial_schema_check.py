"""The check every reader's test runs: same columns and dtypes as read_harbor_job."""

from __future__ import annotations

from typing import Any

import metrickit as mk

KIND_PREFIX = "_kind_"
KWARG_PREFIX = "kwarg_"


def _harbor(backend: str) -> Any:
    return mk.read_harbor_job(mk.examples.path("harbor_jobs"), backend=backend)


def _dtypes(frame: Any) -> dict[str, str]:
    if type(frame).__module__.startswith("polars"):
        return {k: str(v) for k, v in frame.schema.items()}
    return {k: str(v) for k, v in frame.dtypes.items()}


def reward_columns(frame: Any) -> list[str]:
    names = list(frame.columns)
    return [c for c in names if KIND_PREFIX + c in names]


def assert_trial_schema(frame: Any, backend: str) -> None:
    """The non-reward columns are read_harbor_job's, in its order and with its dtypes;
    every reward column is float with an enum/categorical ``_kind_`` companion; the
    ``kwarg_<name>`` columns (one per agent kwarg, as many as the table's kwargs) come
    last, text like the other text columns."""
    harbor = _harbor(backend)
    expect = {c: t for c, t in _dtypes(harbor).items()
              if not _is_reward(harbor, c) and not c.startswith(KWARG_PREFIX)}
    got_all = _dtypes(frame)
    got = {c: t for c, t in got_all.items()
           if not _is_reward(frame, c) and not c.startswith(KWARG_PREFIX)}
    assert list(got) == list(expect), (list(got), list(expect))
    for column, dtype in expect.items():
        assert got[column] == dtype, (column, got[column], dtype)
    names = list(frame.columns)
    kwargs = [c for c in names if c.startswith(KWARG_PREFIX)]
    assert names[len(names) - len(kwargs):] == sorted(kwargs), names
    for column in kwargs:
        assert got_all[column] == expect["agent_kwargs"], (column, got_all[column])
    kind_dtype = _dtypes(harbor)[KIND_PREFIX + reward_columns(harbor)[0]]
    for key in reward_columns(frame):
        assert got_all[key] in ("float64", "Float64"), (key, got_all[key])
        assert got_all[KIND_PREFIX + key] == kind_dtype, (key, got_all[KIND_PREFIX + key])


def _is_reward(frame: Any, column: str) -> bool:
    names = set(frame.columns)
    return KIND_PREFIX + column in names or (
        column.startswith(KIND_PREFIX) and column[len(KIND_PREFIX) :] in names
    )
