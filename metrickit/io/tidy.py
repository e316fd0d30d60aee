"""Any tidy table as a trial table, and trial tables of several sources as one.

:func:`trials_from_frame` maps the columns of a table with one row per trial (a promptfoo
CSV, a Weave export, a team's own results) onto the trial table of
:func:`metrickit.read_harbor_job`, checking the mapping. :func:`concat_trials` stacks trial
tables from different readers (Harbor, Inspect AI, lm-eval, Terminal-Bench, tidy tables).
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

from metrickit._core.identity import canonical_kwargs, with_candidates
from metrickit._core.schema import check_backend
from metrickit._core.values import (
    BOOL,
    FLOAT,
    INT,
    MAX_EXACT_INT,
    MISSING,
    NULL,
    OK,
    check_value,
    is_null,
)
from metrickit.errors import MetrickitWarning, TrialSourceError
from metrickit.io.trials import (
    KIND_PREFIX,
    KWARG_PREFIX,
    META,
    ROW_COLUMNS,
    TAIL,
    guarded,
    parse_time,
    trial_table,
)

__all__ = ["concat_trials", "trials_from_frame"]

_SHOWN = 5
_MAX_FLOAT_INT = int(np.finfo(np.float64).max)
_SURROGATE = re.compile("[\ud800-\udfff]")
#: a median trial longer than this is taken as a column in another unit (a warning)
MAX_PLAUSIBLE_MS = 30 * 24 * 3600 * 1000.0


def _native_backend(df: Any) -> Literal["pandas", "polars"]:
    module = type(df).__module__
    if module.startswith("polars"):
        return "polars"
    if module.startswith("pandas"):
        return "pandas"
    raise TrialSourceError(
        f"expected a pandas or polars DataFrame, got {type(df).__module__}.{type(df).__name__}"
    )


@guarded("trials_from_frame")
def trials_from_frame(
    df: Any,
    *,
    task: str,
    reward: str | Sequence[str],
    candidate: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    attempt: str | None = None,
    source: str | None = None,
    run: str | None = None,
    agent_version: str | None = None,
    dataset: str | None = None,
    dataset_version: str | None = None,
    group: str | None = None,
    agent_kwargs: str | None = None,
    latency_ms: str | None = None,
    cost_usd: str | None = None,
    input_tokens: str | None = None,
    output_tokens: str | None = None,
    error: str | None = None,
    exception_type: str | None = None,
    started_at: str | None = None,
    finished_at: str | None = None,
    trial_dir: str | None = None,
    backend: Literal["pandas", "polars"] | None = None,
) -> Any:
    """A trial table from a tidy table with one row per trial.

    Every argument but ``df`` and ``backend`` names a column of ``df``.

    Parameters
    ----------
    df
        A pandas or polars DataFrame, one row per (candidate, task, attempt).
    task
        The task (item, sample, test case) id; becomes ``task_name`` (as text).
    reward
        One reward column or several; each becomes a reward column of the same name with its
        ``_kind_`` companion (``bool``, ``int`` or ``float`` from the column's values). A
        missing value (None/NaN/null) is that key missing for that trial (0 with ``_kind_``
        ``missing``, as Harbor fills it); a row missing all of them has no reward
        (``_status`` ``null``).
    candidate
        The label the table gives what is compared (a prompt variant, a system name);
        becomes ``variant`` and ``eval``, and the ``candidate`` label is this label (with
        ``agent``/``model`` in front when those are given too). Without it ``eval`` is
        ``agent__model__source`` from the columns given (``adhoc`` for the source when
        there is none).
    agent, model, source
        Columns for ``agent``, ``model``, ``source``.
    run
        The run each row came from (a job, a date, a results file); rows of different runs
        with one recorded configuration pool into one candidate. Without it the table is
        one run, named ``"table"``.
    agent_version, dataset, dataset_version
        Columns for ``agent_version``, ``dataset`` (what the candidate was evaluated on;
        without it, the ``source``) and ``dataset_version``: parts of the configuration,
        so rows that differ in any of them are different candidates.
    group
        A category of tasks (a subject, a difficulty); becomes ``task_group``.
    agent_kwargs
        The agent's settings: a column of dicts or of JSON object text (``'{"temp": 0}'``);
        becomes canonical JSON in ``agent_kwargs`` and one ``kwarg_<name>`` column each.
        Rows with different settings are different candidates.
    attempt
        Attempt numbers (integers >= 1); without it, the rows of one (run, candidate,
        task) are numbered 1, 2, ... in table order.
    latency_ms, cost_usd, input_tokens, output_tokens
        Become ``total_ms``, ``cost_usd``, ``n_input_tokens``, ``n_output_tokens``. Token
        counts are whole numbers from 0 to 2**53. A median ``latency_ms`` above 30 days
        gives a :class:`~metrickit.errors.MetrickitWarning` naming the column and the unit
        it more likely is (nanoseconds, microseconds, seconds are not converted for you).
    error
        An error message column: a value that is not null and not blank becomes
        ``exception_message`` with ``exception_type`` ``"error"``, and ``reward_valid``
        False (an empty string is no error: exports write ``""`` for none).
    exception_type
        The error's type or class (``"AgentTimeoutError"``): a value that is not null and
        not blank becomes ``exception_type`` (in place of ``"error"``), and ``reward_valid``
        False, with or without ``error``.
    started_at, finished_at
        When each trial started and finished: datetimes or ISO 8601 text
        (``"2026-01-11T19:28:25.796872Z"``; a time without a zone is UTC). Without
        ``latency_ms``, ``total_ms`` is their difference.
    trial_dir
        Where each trial's files are (a folder or a URL); becomes ``trial_dir``.
    backend
        ``"pandas"`` or ``"polars"``; None (default): the backend of ``df``.

    Returns
    -------
    DataFrame
        The trial table, rows in table order; columns the table lacks are null;
        ``format`` is ``"table"``.

    Raises
    ------
    TrialSourceError
        A named column is missing, a reward is not a finite number or bool, a token count
        not a whole number, an attempt not an integer >= 1, a task id or run null, an
        agent kwargs value that is not a dict or JSON object text, a timestamp that is
        not a datetime or ISO 8601 text, or two rows have the same (run, candidate, task,
        attempt): the message names the column, the row (0-based position) and the value.

    Warns
    -----
    MetrickitWarning
        The median ``latency_ms`` is above 30 days: the column is likely in another unit.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> from metrickit.io.tidy import trials_from_frame
    >>> df = pd.DataFrame({"id": ["q1", "q2", "q1", "q2"], "prompt": ["a", "a", "b", "b"],
    ...                    "correct": [1, 0, 1, 1], "ms": [120.0, 95.5, 130.0, 80.0]})
    >>> t = trials_from_frame(df, task="id", candidate="prompt", reward="correct",
    ...                       latency_ms="ms")
    >>> t[["run", "candidate", "task_name", "attempt", "correct", "_kind_correct", "total_ms"]]
         run candidate task_name  attempt  correct _kind_correct  total_ms
    0  table         a        q1        1      1.0           int     120.0
    1  table         a        q2        1      0.0           int      95.5
    2  table         b        q1        1      1.0           int     130.0
    3  table         b        q2        1      1.0           int      80.0
    >>> mk.aggregate(t, by="eval")
    {'a': {'mean': 0.5}, 'b': {'mean': 1.0}}

    Two runs of one model pool into one candidate; settings that differ keep them apart:

    >>> df = pd.DataFrame({"id": ["q1", "q1", "q1"], "day": ["mon", "tue", "tue"],
    ...                    "llm": ["gpt-x"] * 3, "ok": [1, 0, 1],
    ...                    "kw": ['{"temp": 0}', '{"temp": 0}', '{"temp": 1}']})
    >>> t = trials_from_frame(df, task="id", reward="ok", run="day", model="llm",
    ...                       agent_kwargs="kw")
    >>> t[["run", "candidate", "kwarg_temp"]]
       run       candidate kwarg_temp
    0  mon  gpt-x · temp=0          0
    1  tue  gpt-x · temp=0          0
    2  tue  gpt-x · temp=1          1
    """
    import narwhals as nw

    if backend is not None:
        check_backend(backend)
    out_backend = backend or _native_backend(df)
    nf = nw.from_native(df, eager_only=True)
    rewards = [reward] if isinstance(reward, str) else list(reward)
    if not rewards:
        raise TrialSourceError("reward=[] names no column; pass at least one reward column")
    mapping = {
        "task": task, "candidate": candidate, "agent": agent, "model": model,
        "attempt": attempt, "source": source, "run": run, "agent_version": agent_version,
        "dataset": dataset, "dataset_version": dataset_version, "group": group,
        "agent_kwargs": agent_kwargs, "latency_ms": latency_ms, "cost_usd": cost_usd,
        "input_tokens": input_tokens, "output_tokens": output_tokens, "error": error,
        "exception_type": exception_type, "started_at": started_at,
        "finished_at": finished_at, "trial_dir": trial_dir,
    }
    named = [(arg, col) for arg, col in mapping.items() if col is not None]
    named += [("reward", col) for col in rewards]
    missing = [f"{arg}={col!r}" for arg, col in named if col not in nf.columns]
    if missing:
        raise TrialSourceError(
            f"trials_from_frame: no column for {', '.join(missing)}; the table has columns "
            f"{list(nf.columns)}"
        )
    import pandas as pd

    pdf = nf.select(list(dict.fromkeys(c for _, c in named))).to_pandas()
    n = len(pdf)
    columns: dict[str, Any] = {c: [None] * n for c in ROW_COLUMNS}
    task_na = pdf[task].isna().to_numpy()
    if task_na.any():
        raise TrialSourceError(
            f"trials_from_frame: row {int(np.flatnonzero(task_na)[0])}: task column {task!r} "
            "is null; every trial needs a task id"
        )
    columns["task_name"] = _text(pdf[task])
    for arg in ("agent", "model", "source", "agent_version", "dataset", "dataset_version"):
        if mapping[arg] is not None:
            columns[arg] = _text(pdf[mapping[arg]])
    if group is not None:
        columns["task_group"] = _text(pdf[group])
    if trial_dir is not None:
        columns["trial_dir"] = _text(pdf[trial_dir])
    for arg in ("started_at", "finished_at"):
        name = mapping[arg]
        if name is not None:
            columns[arg] = _times(pdf[name], name)
    if run is not None:
        run_na = pdf[run].isna().to_numpy()
        if run_na.any():
            raise TrialSourceError(
                f"trials_from_frame: row {int(np.flatnonzero(run_na)[0])}: run column "
                f"{run!r} is null; every trial needs its run"
            )
        columns["run"] = _text(pdf[run])
    else:
        columns["run"] = ["table"] * n  # the table is one run
    columns["format"] = ["table"] * n
    if agent_kwargs is not None:
        columns["agent_kwargs"] = _kwargs(pdf[agent_kwargs], agent_kwargs)
    if candidate is not None:
        columns["variant"] = columns["eval"] = _text(pdf[candidate])
    else:
        columns["eval"] = _each_distinct(
            lambda a, m, s: "__".join([*(p for p in (a, m) if p), s or "adhoc"]),
            columns["agent"], columns["model"], columns["source"])
    # One trial per (run, candidate, task, attempt): the candidate is ``eval`` and every
    # recorded part of the configuration ``eval`` does not spell out.
    config = _each_distinct(
        lambda *parts: "\x1f".join("" if v is None else v for v in parts),
        columns["eval"], columns["agent_version"], columns["agent_kwargs"],
        columns["dataset"], columns["dataset_version"])
    keys = pd.DataFrame({"run": columns["run"], "config": config, "task": columns["task_name"]})
    if attempt is not None:
        keys["attempt"] = _whole(pdf[attempt], attempt, minimum=1, what="an integer >= 1",
                                 nulls=False, label="attempt column")
    else:
        keys["attempt"] = (
            keys.groupby(["run", "config", "task"], sort=False, dropna=False).cumcount() + 1
        )
    same = keys.duplicated(keep=False).to_numpy()
    if same.any():
        second = int(np.flatnonzero(keys.duplicated(keep="first").to_numpy())[0])
        dup = keys.iloc[second]
        first = int(np.flatnonzero(same & (keys == dup).all(axis=1).to_numpy())[0])
        raise TrialSourceError(
            f"trials_from_frame: rows {first} and {second} are the same trial "
            f"(run {dup['run']!r}, candidate {columns['eval'][second]!r}, task "
            f"{dup['task']!r}, attempt {dup['attempt']}); expected one row per (run, "
            "candidate, task, attempt): pass attempt= to number repeated rows, or run= / "
            "candidate= if they belong to different runs or candidates"
        )
    columns["attempt"] = keys["attempt"].tolist()
    for arg, target in (("latency_ms", "total_ms"), ("cost_usd", "cost_usd")):
        name = mapping[arg]
        if name is not None:
            columns[target] = _finite(pdf[name], name)
    if latency_ms is not None:
        _check_latency_unit(columns["total_ms"], latency_ms)
    elif started_at is not None and finished_at is not None:
        columns["total_ms"] = [
            None if a is None or b is None else (b - a).total_seconds() * 1000.0
            for a, b in zip(columns["started_at"], columns["finished_at"], strict=True)
        ]
    for arg, target in (("input_tokens", "n_input_tokens"), ("output_tokens", "n_output_tokens")):
        name = mapping[arg]
        if name is not None:
            columns[target] = _whole(pdf[name], name, minimum=0,
                                     what="a whole number of tokens from 0 to 2**53 or null",
                                     nulls=True)
    # a blank message is no error (exports write "" for none)
    message = [
        m if m is not None and m.strip() else None
        for m in (_text(pdf[error]) if error is not None else [None] * n)
    ]
    types = [
        t if t is not None and t.strip() else None
        for t in (_text(pdf[exception_type]) if exception_type is not None else [None] * n)
    ]
    failed = np.array([m is not None or t is not None for m, t in zip(message, types,
                                                                     strict=True)], dtype=bool)
    if error is not None or exception_type is not None:
        columns["exception_type"] = [t if t is not None else ("error" if m is not None
                                                                else None)
                                     for t, m in zip(types, message, strict=True)]
        columns["exception_message"] = message
    values: dict[str, np.ndarray] = {}
    kinds: dict[str, np.ndarray] = {}
    for c in rewards:
        values[c], kinds[c] = _reward_column(pdf[c], c)
    present = np.zeros(n, dtype=bool)
    for k in kinds.values():
        present |= k != MISSING
    # a row without any reward value is a trial without a result (Harbor's null)
    status = np.where(present, OK, NULL).astype(np.int8)
    columns["has_reward"] = present.tolist()
    columns["reward_valid"] = (present & ~failed).tolist()
    return trial_table(columns, status, values, kinds, out_backend,
                       origin="trials_from_frame")


def _kwargs(series: Any, column: str) -> list[str | None]:
    """A column of agent kwargs (dicts, or JSON object text) as canonical JSON."""
    out: list[str | None] = []
    parsed: dict[str, str | None] = {}  # the same text is parsed once
    na = series.isna().to_numpy()
    for i, (value, missing) in enumerate(zip(series.tolist(), na, strict=True)):
        if missing:
            out.append(None)
            continue
        if isinstance(value, str):
            if value not in parsed:
                try:
                    obj = json.loads(value) if value.strip() else {}
                except ValueError:
                    obj = None
                if not isinstance(obj, dict):
                    raise TrialSourceError(
                        f"trials_from_frame: agent_kwargs column {column!r}, row {i}: "
                        f"{value[:80]!r} is not a JSON object; expected a dict, JSON object "
                        "text ('{\"temperature\": 0}') or null"
                    )
                parsed[value] = canonical_kwargs(obj)
            out.append(parsed[value])
        elif isinstance(value, Mapping):
            out.append(canonical_kwargs(dict(value)))
        else:
            raise TrialSourceError(
                f"trials_from_frame: agent_kwargs column {column!r}, row {i}: {value!r} "
                f"({type(value).__name__}); expected a dict, JSON object text or null"
            )
    return out


def _each_distinct(fn: Callable[..., str], *columns: list[Any]) -> list[str]:
    """``fn`` of each row's values of ``columns`` (text or None), computed once for each
    distinct row: a table has few configurations and many trials."""
    rows = list(zip(*columns, strict=True))
    done = {row: fn(*row) for row in dict.fromkeys(rows)}
    return [done[row] for row in rows]


def _text(series: Any) -> list[str | None]:
    """A column as text, None where it is null; text with a lone UTF-16 surrogate (which no
    frame backend can hold) is refused naming the column and row."""
    na = series.isna().to_numpy()
    out = [None if missing else str(v) for v, missing in zip(series.tolist(), na, strict=True)]
    if not _SURROGATE.search("\n".join([t for t in set(out) if t is not None])):
        return out  # one search of the distinct text joined (the pattern is one character)
    for i, text in enumerate(out):  # the first bad row, for the message
        if text is not None and _SURROGATE.search(text):
            raise TrialSourceError(
                f"trials_from_frame: column {series.name!r}, row {i}: {text[:80]!r} holds a "
                "lone UTF-16 surrogate (a broken \\u escape at the source); expected text"
            )
    return out


def _bad_row(
    series: Any, bad: np.ndarray, column: str, expected: str, what: str = "column"
) -> TrialSourceError:
    row = int(np.flatnonzero(bad)[0])
    value = series.iloc[row]
    if isinstance(value, np.generic):
        value = value.item()
    return TrialSourceError(
        f"trials_from_frame: {what} {column!r}, row {row}: {value!r} "
        f"({type(value).__name__}); expected {expected}"
    )


def _numbers(
    series: Any, column: str, expected: str, label: str = "column"
) -> tuple[np.ndarray, np.ndarray]:
    """Float values and the null mask of a column that must hold numbers (not bools)."""
    import pandas as pd

    na = series.isna().to_numpy()
    if pd.api.types.is_bool_dtype(series.dtype) or not pd.api.types.is_numeric_dtype(
        series.dtype
    ):
        ok = np.array([m or (isinstance(v, int | float) and not isinstance(v, bool)
                             and (isinstance(v, float) or abs(v) <= _MAX_FLOAT_INT))
                       for v, m in zip(series.tolist(), na, strict=True)], dtype=bool)
        if not ok.all():
            raise _bad_row(series, ~ok, column, expected, label)
        return np.array([np.nan if m else float(v) for v, m in
                         zip(series.tolist(), na, strict=True)], dtype=np.float64), na
    return series.to_numpy(dtype=np.float64, na_value=np.nan), na


def _finite(series: Any, column: str) -> list[float | None]:
    expected = "a finite number or null"
    x, na = _numbers(series, column, expected)
    bad = ~na & ~np.isfinite(x)
    if bad.any():
        raise _bad_row(series, bad, column, expected)
    return [None if m else v for v, m in zip(x.tolist(), na, strict=True)]


def _whole(
    series: Any, column: str, *, minimum: int, what: str, nulls: bool, label: str = "column"
) -> list[Any]:
    x, na = _numbers(series, column, what, label)
    bad = (na if not nulls else np.zeros(len(x), dtype=bool)) | (
        ~na & ~((x == np.floor(x)) & (x >= minimum) & (x <= MAX_EXACT_INT) & np.isfinite(x))
    )
    if bad.any():
        raise _bad_row(series, bad, column, what, label)
    return [None if m else int(v) for v, m in zip(x.tolist(), na, strict=True)]


def _times(series: Any, column: str) -> list[Any]:
    """A column of timestamps (datetimes or ISO 8601 text) as aware UTC datetimes."""
    na = series.isna().to_numpy()
    out: list[Any] = []
    for i, (value, missing) in enumerate(zip(series.tolist(), na, strict=True)):
        if missing:
            out.append(None)
            continue
        try:
            if not isinstance(value, str) and not hasattr(value, "tzinfo"):
                raise TypeError
            stamp: Any = parse_time(value)
            if hasattr(stamp, "to_pydatetime"):
                stamp = stamp.to_pydatetime()
        except (TypeError, ValueError, OverflowError):
            raise _bad_row(series, np.arange(len(na)) == i, column,
                           "a datetime or ISO 8601 text ('2026-01-11T19:28:25Z') or null",
                           "timestamp column") from None
        out.append(stamp)
    return out


_UNITS = (("nanoseconds", 1e6), ("microseconds", 1e3))


def _check_latency_unit(total_ms: list[float | None], column: str) -> None:
    """Warn when the median trial of a ``latency_ms`` column is longer than 30 days: the
    column is likely in another unit (otel-bench's ``Duration`` is in nanoseconds)."""
    known = [v for v in total_ms if v is not None]
    if not known:
        return
    ordered = np.sort(np.asarray(known, dtype=np.float64))
    mid = len(ordered) // 2  # halves first: the mean of two values near 1e308 overflows
    median = float(ordered[mid] if len(ordered) % 2 else ordered[mid - 1] / 2 + ordered[mid] / 2)
    if median <= MAX_PLAUSIBLE_MS:
        return
    unit, factor = next(((u, f) for u, f in _UNITS if median / f <= MAX_PLAUSIBLE_MS),
                        _UNITS[0])
    warnings.warn(
        f"trials_from_frame: latency_ms={column!r}: the median trial takes "
        f"{_duration(median)} ({median:.4g} ms), more than 30 days; is {column!r} in "
        f"{unit}? Then pass it divided by {factor:,.0f} (median {_duration(median / factor)})",
        MetrickitWarning,
        stacklevel=4,
    )


def _duration(ms: float) -> str:
    for unit, size in (("years", 365.25 * 86400e3), ("days", 86400e3), ("hours", 3600e3),
                       ("minutes", 60e3), ("seconds", 1e3)):
        if ms >= size:
            return f"{ms / size:.3g} {unit}"
    return f"{ms:.3g} ms"


def _reward_column(series: Any, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Values and kind codes of a reward column: null is a missing reward, bools, ints
    and floats keep their kind (Harbor sums ints and floats differently)."""
    import pandas as pd

    expected = "a finite number or a bool (None/NaN for a missing reward)"
    na = series.isna().to_numpy()
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        x, kind = series.to_numpy(dtype=np.float64, na_value=0.0), BOOL
    elif pd.api.types.is_integer_dtype(dtype):
        # unsigned as unsigned (2**64 - 1 read as int64 is -1), signed compared both ways
        # (abs(-2**63) is -2**63 in int64)
        unsigned = pd.api.types.is_unsigned_integer_dtype(dtype)
        ints = series.to_numpy(dtype=np.uint64 if unsigned else np.int64, na_value=0)
        too_big = (ints > MAX_EXACT_INT) if unsigned else (
            (ints > MAX_EXACT_INT) | (ints < -MAX_EXACT_INT))
        if too_big.any():
            raise _bad_row(series, too_big, column, f"|x| <= 2**53; {expected}", "reward column")
        x, kind = ints.astype(np.float64), INT
    elif pd.api.types.is_float_dtype(dtype):
        x, kind = series.to_numpy(dtype=np.float64, na_value=np.nan), FLOAT
        bad = ~na & ~np.isfinite(x)
        if bad.any():
            raise _bad_row(series, bad, column, expected, "reward column")
    else:  # object column: each value on its own, by the reward-file rules
        x = np.zeros(len(series), dtype=np.float64)
        codes = np.zeros(len(series), dtype=np.uint8)
        for i, (v, missing) in enumerate(zip(series.tolist(), na, strict=True)):
            if missing:
                continue
            checked = check_value(column, v.item() if isinstance(v, np.generic) else v)
            if isinstance(checked, str):
                raise TrialSourceError(
                    f"trials_from_frame: reward column {column!r}, row {i}: {v!r} "
                    f"({type(v).__name__}) is not a reward; expected {expected}"
                )
            x[i], codes[i] = checked
        return x, codes
    return np.where(na, 0.0, x), np.where(na, MISSING, kind).astype(np.uint8)












def concat_trials(
    frames: Sequence[Any],
    *,
    task_map: Mapping[str, str] | None = None,
) -> Any:
    """Stack trial tables from different sources into one.

    Parameters
    ----------
    frames
        Trial tables (from :func:`metrickit.read_harbor_job`, ``read_inspect_log``,
        ``read_lm_eval_samples``, ``read_terminal_bench``, ``trials_from_frame``), all
        pandas or all polars.
    task_map
        Renames task ids (``{"inspect-sample-id": "harbor-task-name"}``) so the same task
        has one name across sources; ids not in the map stay.

    Returns
    -------
    DataFrame
        Rows of each table in order. Reward columns are the union of the tables' (sorted),
        each with its ``_kind_`` companion: a reward key a table does not have is NA (with
        ``_kind_`` ``missing``) on that table's rows, never 0, since no trial of its
        evaluations had it (docs/contracts.md, section 5). Within a table the zero-fill is
        the reader's. ``candidate`` is computed anew over all the rows (a label unique
        across the tables; runs of one recorded configuration pool, from any table), and so
        are the ``kwarg_<name>`` columns (null where a row's kwargs lack the name).

    Raises
    ------
    TrialSourceError
        No frames, mixed backends, a table that is not a trial table (no ``_kind_`` reward
        column or no ``run``/``eval``/``task_name`` column), or the same (run, candidate,
        source, task, attempt) twice: a table given twice, or two tables with one run name.

    Examples
    --------
    >>> import pandas as pd
    >>> from metrickit.io.tidy import concat_trials, trials_from_frame
    >>> a = trials_from_frame(pd.DataFrame({"id": ["q1"], "ok": [True], "m": ["x"]}),
    ...                       task="id", reward="ok", model="m")
    >>> b = trials_from_frame(pd.DataFrame({"id": ["q1"], "f1": [0.5], "m": ["y"]}),
    ...                       task="id", reward="f1", model="m")
    >>> concat_trials([a, b])[["candidate", "f1", "ok", "_kind_f1", "_kind_ok"]]
      candidate   f1   ok _kind_f1 _kind_ok
    0         x  NaN  1.0  missing     bool
    1         y  0.5  NaN    float  missing
    """
    frames = list(frames)
    if not frames:
        raise TrialSourceError("concat_trials got no tables; pass a list of trial tables")
    backends = {_native_backend(f) for f in frames}
    if len(backends) > 1:
        raise TrialSourceError(
            "concat_trials got pandas and polars tables; convert them to one backend first "
            "(polars_frame.to_pandas() or polars.from_pandas(pandas_frame))"
        )
    keys: list[str] = []
    for i, frame in enumerate(frames):
        columns = list(frame.columns)
        missing = [c for c in ("run", "eval", "task_name", "attempt", "_status")
                   if c not in columns]
        frame_keys = [c for c in columns if KIND_PREFIX + c in columns]
        if missing or not frame_keys:
            raise TrialSourceError(
                f"concat_trials: table {i} is not a trial table (missing "
                f"{missing or ['a reward column with its _kind_ companion']}); expected tables "
                "from metrickit's readers or trials_from_frame"
            )
        keys.extend(k for k in frame_keys if k not in keys)
    keys.sort()
    if backends == {"polars"}:
        return _concat_polars(frames, keys, task_map)
    return _concat_pandas(frames, keys, task_map)


def _order(columns: list[str], keys: list[str]) -> list[str]:
    """The readers' column order: the trial table's, then any other column the tables
    had, then the ``kwarg_<name>`` columns sorted (as the readers place them)."""
    known = [*META, *keys, *(KIND_PREFIX + k for k in keys), *TAIL]
    extra = [c for c in columns if c not in known and not c.startswith(KWARG_PREFIX)]
    kwargs = sorted(c for c in columns if c.startswith(KWARG_PREFIX))
    return [*known, *extra, *kwargs]


def _concat_pandas(frames: list[Any], keys: list[str], task_map: Mapping[str, str] | None) -> Any:
    import numpy as np
    import pandas as pd

    kinds = frames[0][KIND_PREFIX + next(k for k in frames[0].columns if KIND_PREFIX + k in
                                          frames[0].columns)].cat.categories
    parts = []
    for frame in frames:
        part = frame.copy()
        for key in keys:
            if key not in part.columns:
                part[key] = np.full(len(part), np.nan)
                part[KIND_PREFIX + key] = pd.Categorical(["missing"] * len(part), categories=kinds)
        parts.append(part)
    columns: list[str] = []
    for part in parts:
        columns.extend(c for c in part.columns if c not in columns)
    out = pd.concat(parts, ignore_index=True)
    for key in keys:
        out[KIND_PREFIX + key] = pd.Categorical(out[KIND_PREFIX + key], categories=kinds)
    out["_status"] = pd.Categorical(out["_status"], categories=parts[0]["_status"].cat.categories)
    if task_map:
        out["task_name"] = out["task_name"].map(lambda t: task_map.get(t, t)).astype("string")
    out = with_candidates(out)
    _check_unique(out)
    return out[_order(list(out.columns), keys)]


def _concat_polars(frames: list[Any], keys: list[str], task_map: Mapping[str, str] | None) -> Any:
    import polars as pl

    kinds = pl.Enum(["missing", "int", "float", "bool"])
    parts = []
    for frame in frames:
        extra = []
        for key in keys:
            if key not in frame.columns:
                extra += [
                    pl.lit(None, dtype=pl.Float64).alias(key),
                    pl.lit("missing", dtype=kinds).alias(KIND_PREFIX + key),
                ]
        parts.append(frame.with_columns(extra) if extra else frame)
    out = pl.concat(parts, how="diagonal")
    if task_map:
        out = out.with_columns(pl.col("task_name").replace(dict(task_map)))
    out = with_candidates(out)
    _check_unique(out)
    return out.select(_order(out.columns, keys))


#: what makes a trial one trial across stacked tables
_TRIAL_KEY = ("run", "candidate", "source", "task_name", "attempt")


def _check_unique(frame: Any) -> None:
    """Refuse two rows of one (run, candidate, source, task, attempt): one trial twice."""
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    columns = [nf.get_column(c).to_list() for c in _TRIAL_KEY]
    seen: dict[tuple[Any, ...], int] = {}
    for i, raw in enumerate(zip(*columns, strict=True)):
        key = tuple(None if is_null(v) else v for v in raw)
        if key in seen:
            raise TrialSourceError(
                f"concat_trials: rows {seen[key]} and {i} are the same trial (run {key[0]!r}, "
                f"candidate {key[1]!r}, source {key[2]!r}, task {key[3]!r}, attempt "
                f"{key[4]}): a table given twice, a task_map that sends two tasks to one "
                "name, or two tables with one run name (trials_from_frame names its run "
                "'table' unless run= names a column)"
            )
        seen[key] = i
