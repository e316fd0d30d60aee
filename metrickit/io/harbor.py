"""Harbor job folders as trial tables.

Harbor writes each run as ``jobs/<job>/`` with a job ``result.json`` and one folder per
trial holding the trial's own ``result.json`` (see ``docs/contracts.md``, section 1).
:func:`read_harbor_job` turns one job, several, or a folder of jobs into one row per
trial:

``job``, ``eval``, ``agent``, ``agent_version``, ``model``, ``model_provider``, ``source``
    where the trial belongs. ``eval`` is Harbor's evaluation key
    ``agent__model__source`` (``agent__source`` without a model, source ``adhoc`` when the
    task has none); ``model`` is ``agent_info.model_info.name``, which Harbor already
    stores without the provider prefix (``anthropic/claude-sonnet-4-5`` →
    ``claude-sonnet-4-5``).
``task_name``, ``trial_name``, ``attempt``
    ``attempt`` numbers the trials of one task within a job and evaluation, 1, 2, ... in
    order of start time.
``_status``
    ``"ok"`` (a reward with keys), ``"empty"`` (``{}``), ``"null"`` (no verifier result:
    no reward), ``"running"`` (a trial folder without ``result.json``; Harbor is still
    working on it), or ``"invalid"`` (with ``errors="report"``: the file could not be read).
``has_reward``, ``reward_valid``
    ``has_reward``: the verifier produced rewards. ``reward_valid``: Harbor 0.26's
    ``TrialResult.reward_valid`` (a non-empty reward and no recorded exception whose
    error policy says the reward is not a valid measurement).
``<key>``, ``_kind_<key>``
    one float column per reward key, zero-filled, with the same ``_kind_`` companion as
    :func:`metrickit.read_rewards` (``missing``/``int``/``float``/``bool``), so
    ``mk.aggregate(trials, by="eval")`` reproduces the job's ``metrics``. When no trial has a
    reward yet, there is one ``reward`` column, all 0 and ``missing``.
``exception_type``, ``exception_message``, ``step_exception_type``
    the trial-level exception (kept even when the trial also has a reward) and the first
    step-level one of a multi-step trial.
``n_input_tokens``, ``n_cache_tokens``, ``n_output_tokens``, ``cost_usd``, ``n_steps``
    as ``TrialResult.compute_token_cost_totals`` computes them (summed over steps for
    multi-step trials; null when the agent reported nothing).
``started_at``, ``finished_at``, ``environment_setup_ms``, ``agent_setup_ms``,
``agent_execution_ms``, ``verifier_ms``, ``total_ms``
    UTC timestamps and phase durations in milliseconds. For a multi-step trial the agent
    and verifier durations are summed over its steps.
``trial_dir``
    the trial's folder.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from metrickit.io.harbor_trials import (
    _FLOAT_COLUMNS,
    _INT_COLUMNS,
    _META,
    _TAIL,
    _TIME_COLUMNS,
    RUNNING,
    _find_jobs,
    _load_json,
    _read_trial,
    _running_row,
    _subdirs,
    _Trial,
    eval_key,
)
from metrickit.errors import HarborJobError, Problem
from metrickit.io.rewards import INVALID, KIND_PREFIX, KINDS, parse_rows, string_dtype

__all__ = [
    "Policy",
    "eval_key",
    "job_metrics",
    "read_harbor_job",
    "read_job_result",
    "summarize_job",
]

Policy = Literal["0.25", "0.26"]
Backend = Literal["pandas", "polars"]

TRIAL_STATUSES = ("ok", "empty", "null", "invalid", "running")
_PROGRESS_MIN = 200

# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------


@overload
def read_harbor_job(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = ...,
    errors: Literal["raise"] = ...,
    progress: bool | None = ...,
) -> Any: ...
@overload
def read_harbor_job(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = ...,
    errors: Literal["report"],
    progress: bool | None = ...,
) -> tuple[Any, list[Problem]]: ...


def read_harbor_job(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = "pandas",
    errors: Literal["raise", "report"] = "raise",
    progress: bool | None = None,
) -> Any:
    """Read Harbor job folders into one row per trial.

    Parameters
    ----------
    path_or_paths
        A job folder (``jobs/<job>``), a list of them, or a folder of jobs (``jobs/``).
    backend
        ``"pandas"`` (default) or ``"polars"``.
    errors
        ``"raise"`` (default): a trial ``result.json`` that is corrupt, truncated or does
        not fit Harbor's model raises :class:`~metrickit.errors.HarborJobError` naming the
        file, the field and the value. ``"report"``: return ``(frame, problems)``; each bad
        trial keeps a row with ``_status == "invalid"``.
    progress
        Show a ``tqdm.auto`` progress bar: None (default) shows one from 200 trials on.

    Returns
    -------
    DataFrame, or ``(DataFrame, list[Problem])`` with ``errors="report"``
        One row per trial folder, rows ordered by job, then start time (running trials
        last), then trial name. See the module docstring for the columns.

    Raises
    ------
    HarborJobError
        No job at the path, a bad trial file (with ``errors="raise"``), a reward key that
        clashes with a column this function adds.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_harbor_job("data/harbor_jobs/2025-06-02__10-00-00")
    >>> len(trials), trials["eval"].iloc[0]
    (24, 'terminus-2__claude-sonnet-4-5__terminal-bench-mini')
    >>> mk.aggregate(trials, by="eval")
    {'terminus-2__claude-sonnet-4-5__terminal-bench-mini': {'mean': 0.5}}
    """
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas' or 'polars'")
    if errors not in ("raise", "report"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'report'")
    if isinstance(path_or_paths, str | os.PathLike):
        roots = [Path(path_or_paths)]
    else:
        roots = [Path(p) for p in path_or_paths]
        if not roots:
            raise HarborJobError("read_harbor_job got an empty list; pass at least one job folder")
    jobs = [job for root in roots for job in _find_jobs(root)]
    folders = [(job, trial) for job in jobs for trial in _subdirs(job)]
    trials = _read_all([f for _, f in folders], progress)
    problems = [t.problem for t in trials if t.problem is not None]
    if problems and errors == "raise":
        message = str(problems[0])
        if len(problems) > 1:
            message += (
                f" (and {len(problems) - 1} more bad trial file(s); "
                "read_harbor_job(..., errors='report') lists them all)"
            )
        raise HarborJobError(message)
    known: dict[tuple[Any, Any], dict[str, Any]] = {}
    for t in trials:
        if t.config_agent is not None:
            known.setdefault(
                t.config_agent,
                {k: t.row[k] for k in ("agent_version", "model", "model_provider")},
            )
    for (job, folder), t in zip(folders, trials, strict=True):
        if t.status == RUNNING:
            t.row = _running_row(folder, known)
        t.row["job"] = job.name
        t.row["trial_dir"] = str(folder)
    frame = _build(trials, backend)
    return (frame, problems) if errors == "report" else frame


def _read_all(folders: list[Path], progress: bool | None) -> list[_Trial]:
    """Every trial folder read, in order, in this process: json parsing and validation
    hold the GIL, so threads run slower than one thread, and a second reader process
    measured 0.80-1.14x on two cores, too little for its cost."""
    show = progress if progress is not None else len(folders) >= _PROGRESS_MIN
    if not show:
        return [_read_trial(f) for f in folders]
    from tqdm.auto import tqdm

    with tqdm(total=len(folders), desc="reading trials", unit="trial") as bar:
        trials = []
        for folder in folders:
            trials.append(_read_trial(folder))
            bar.update(1)
        return trials


def _order(trials: list[_Trial]) -> list[int]:
    """Jobs in the order given; within a job by start time (running last), then name."""
    far = datetime.max.replace(tzinfo=UTC)
    job_rank: dict[str, int] = {}
    for t in trials:
        job_rank.setdefault(t.row["job"], len(job_rank))

    def key(i: int) -> tuple[Any, ...]:
        row = trials[i].row
        started = row["started_at"]
        return (job_rank[row["job"]], started is None, started or far, row["trial_name"] or "")

    return sorted(range(len(trials)), key=key)


def _build(trials: list[_Trial], backend: Backend) -> Any:
    order = _order(trials)
    trials = [trials[i] for i in order]
    parsed, reward_problems = parse_rows("<trials>", [t.rewards for t in trials])
    if reward_problems:
        p = reward_problems[0]
        t = trials[p.line - 1]
        raise HarborJobError(
            f"{t.folder / 'result.json'}: verifier_result.rewards: {p.message}"
        )
    status = parsed.status.copy()
    for i, t in enumerate(trials):
        if t.status in (RUNNING, INVALID):
            status[i] = t.status
    keys = list(parsed.values)
    if not keys:
        # No trial has a reward yet: one all-missing ``reward`` column keeps the frame a
        # reward frame (else every numeric column would look like a reward key).
        keys = ["reward"]
        parsed.values["reward"] = np.zeros(len(trials), dtype=np.float64)
        parsed.kinds["reward"] = np.zeros(len(trials), dtype=np.uint8)
    clash = [k for k in keys if k in _META or k in _TAIL or k.startswith(KIND_PREFIX)]
    if clash:
        raise HarborJobError(
            f"reward key {clash[0]!r} (in {trials[0].folder.parent}) clashes with a column "
            "read_harbor_job adds; rename the key in the verifier's reward.json"
        )
    # attempt: 1, 2, ... per (job, eval, task) in row order
    seen: dict[tuple[Any, Any, Any], int] = {}
    for t in trials:
        k = (t.row["job"], t.row["eval"], t.row["task_name"])
        seen[k] = seen.get(k, 0) + 1
        t.row["attempt"] = seen[k]
    columns: dict[str, list[Any]] = {c: [t.row[c] for t in trials] for c in (*_META, *_TAIL)
                                     if c != "_status"}
    if backend == "polars":
        return _to_polars(columns, status, keys, parsed.values, parsed.kinds)
    return _to_pandas(columns, status, keys, parsed.values, parsed.kinds)


def _to_pandas(
    columns: dict[str, list[Any]],
    status: np.ndarray,
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
) -> Any:
    import pandas as pd

    data: dict[str, Any] = {}
    for name in _META:
        if name == "_status":
            data[name] = pd.Categorical.from_codes(
                status.astype(np.int8), categories=pd.Index(list(TRIAL_STATUSES))
            )
        elif name in ("has_reward", "reward_valid"):
            data[name] = np.asarray(columns[name], dtype=bool)
        elif name == "attempt":
            data[name] = np.asarray(columns[name], dtype=np.int64)
        else:
            data[name] = pd.array(columns[name], dtype=string_dtype(columns[name], "string"))
    for key in keys:
        data[key] = values[key]
    for key in keys:
        data[KIND_PREFIX + key] = pd.Categorical.from_codes(
            kinds[key], categories=pd.Index(list(KINDS))
        )
    for name in _TAIL:
        col = columns[name]
        if name in _INT_COLUMNS:
            data[name] = pd.array(col, dtype="Int64")
        elif name in _FLOAT_COLUMNS:
            data[name] = np.array([np.nan if v is None else v for v in col], dtype=np.float64)
        elif name in _TIME_COLUMNS:
            data[name] = pd.to_datetime(pd.Series(col, dtype=object), utc=True).astype(
                "datetime64[us, UTC]"
            )
        elif name == "n_steps":
            data[name] = np.asarray(col, dtype=np.int64)
        else:
            data[name] = pd.array(col, dtype=string_dtype(col, "string"))
    return pd.DataFrame(data)


def _to_polars(
    columns: dict[str, list[Any]],
    status: np.ndarray,
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
) -> Any:
    import polars as pl

    series: dict[str, pl.Series] = {}
    for name in _META:
        if name == "_status":
            series[name] = pl.Series(
                name, [TRIAL_STATUSES[s] for s in status], dtype=pl.Enum(TRIAL_STATUSES)
            )
        elif name in ("has_reward", "reward_valid"):
            series[name] = pl.Series(name, columns[name], dtype=pl.Boolean)
        elif name == "attempt":
            series[name] = pl.Series(name, columns[name], dtype=pl.Int64)
        else:
            series[name] = _polars_strings(name, columns[name], columns["trial_dir"])
    for key in keys:
        series[key] = pl.Series(key, values[key], dtype=pl.Float64)
    for key in keys:
        series[KIND_PREFIX + key] = pl.Series(
            KIND_PREFIX + key, [KINDS[k] for k in kinds[key]], dtype=pl.Enum(KINDS)
        )
    for name in _TAIL:
        col = columns[name]
        if name in _INT_COLUMNS or name == "n_steps":
            series[name] = pl.Series(name, col, dtype=pl.Int64)
        elif name in _FLOAT_COLUMNS:
            series[name] = pl.Series(name, col, dtype=pl.Float64)
        elif name in _TIME_COLUMNS:
            series[name] = pl.Series(name, col, dtype=pl.Datetime("us", "UTC"))
        else:
            series[name] = _polars_strings(name, col, columns["trial_dir"])
    return pl.DataFrame(series)


def _polars_strings(name: str, col: list[Any], folders: list[Any]) -> Any:
    """A polars String column; a folder name that is not UTF-8 is refused, naming the trial."""
    import polars as pl

    from metrickit.io.rewards import not_utf8_label, printable

    for value, folder in zip(col, folders, strict=True):
        if isinstance(value, str) and not_utf8_label([value]):
            raise HarborJobError(
                f"{printable(str(folder))}: the trial folder's path is not UTF-8 (bytes "
                f"{os.fsencode(str(folder))!r}); polars holds UTF-8 text only, so the "
                f"{name!r} column cannot hold it. Use backend='pandas' (which keeps the path "
                "as os.fsdecode gives it) or rename the folder"
            )
    return pl.Series(name, col, dtype=pl.String)


# ---------------------------------------------------------------------------
# Job metrics
# ---------------------------------------------------------------------------


def _rows_for_policy(trials: Any, policy: Policy) -> Any:
    """The rows Harbor's job metrics see under ``policy``, as a native frame."""
    import narwhals as nw

    if policy not in ("0.25", "0.26"):
        raise ValueError(
            f"policy={policy!r}; expected '0.25' (a trial without reward counts as 0) or "
            "'0.26' (it is left out)"
        )
    nf = nw.from_native(trials, eager_only=True)
    for col in ("_status", "reward_valid", "eval"):
        if col not in nf.columns:
            raise HarborJobError(
                f"the frame has no {col!r} column; expected a trial table from read_harbor_job"
            )
    status = nf.get_column("_status").cast(nw.String)
    if (status == "invalid").any():
        raise HarborJobError(
            "the trial table has invalid rows (from errors='report'); drop them explicitly "
            "(trials[trials['_status'] != 'invalid']) before computing job metrics"
        )
    keep = status != "running"
    if policy == "0.26":
        keep = keep & nf.get_column("reward_valid")
    return nf.filter(keep).to_native()


def job_metrics(
    trials: Any,
    *,
    policy: Policy = "0.25",
    metric: str = "mean",
    by: str | Sequence[str] = "eval",
) -> dict[Any, dict[str, Any]]:
    """The ``metrics`` Harbor stores in the job's ``result.json``, per evaluation.

    Parameters
    ----------
    trials
        A table from :func:`read_harbor_job`.
    policy
        ``"0.25"`` (default, as Harbor's metrics page describes): every finished trial
        counts; a trial without a reward counts as 0. ``"0.26"``: only trials with
        ``reward_valid`` count (a reward, and no exception that invalidates it); an
        evaluation with no such trial gets ``{}`` (Harbor writes ``"metrics": []``).
        Running trials never count: Harbor computes metrics over finished trials.
    metric
        ``"mean"`` (Harbor's default), ``"sum"``, ``"min"`` or ``"max"``.
    by
        Grouping column(s); ``"eval"`` is Harbor's.

    Returns
    -------
    dict
        ``{eval_key: {"mean": ...}}``, equal to ``stats.evals[eval_key].metrics[0]``.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_harbor_job("data/harbor_jobs/2025-06-02__10-00-00")
    >>> job_metrics(trials, policy="0.26")
    {'terminus-2__claude-sonnet-4-5__terminal-bench-mini': {'mean': 0.5217391304347826}}
    """
    from metrickit.compute.aggregate import aggregate, group_indices

    rows = _rows_for_policy(trials, policy)
    out = aggregate(rows, metric, by=by) if len(rows) else {}
    # Evaluations with no counted trial: Harbor's "metrics": [] (listed, not dropped).
    # A running trial whose config.json is not written yet has no evaluation: not listed.
    return {label: out.get(label, {}) for label in group_indices(_known_rows(trials, by), by)}


def _known_rows(trials: Any, by: str | Sequence[str]) -> Any:
    """``trials`` without the running trials whose group is unknown (a null ``by`` value).

    Harbor creates a trial folder before it writes the trial's ``config.json``; until
    then the trial is running with no ``eval``. It counts nowhere, so it is no group.
    """
    import narwhals as nw

    nf = nw.from_native(trials, eager_only=True)
    by_cols = [by] if isinstance(by, str) else list(by)
    if "_status" not in nf.columns or any(c not in nf.columns for c in by_cols):
        return trials  # group_indices names the missing column
    unknown = nf.get_column(by_cols[0]).is_null()
    for col in by_cols[1:]:
        unknown = unknown | nf.get_column(col).is_null()
    unknown = unknown & (nf.get_column("_status").cast(nw.String) == "running")
    if not unknown.any():
        return trials
    return nf.filter(~unknown).to_native()


def read_job_result(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The job's own ``result.json`` (Harbor's ``JobResult``) as a dict.

    Raises
    ------
    HarborJobError
        No ``result.json`` in the folder, or not valid JSON.
    """
    file = Path(path) / "result.json" if Path(path).is_dir() else Path(path)
    try:
        obj = json.loads(file.read_bytes())
    except FileNotFoundError:
        raise HarborJobError(
            f"{file}: no such file; a Harbor job writes result.json when it starts"
        ) from None
    except json.JSONDecodeError as exc:
        raise HarborJobError(
            f"{file}: not valid JSON ({exc.msg} at line {exc.lineno}); expected a Harbor JobResult"
        ) from None
    if not isinstance(obj, dict):
        raise HarborJobError(f"{file}: holds a {type(obj).__name__}; expected a JSON object")
    return obj


# ---------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------


def _fmt_int(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else (
        f"{int(value):,}"
    )


def _detect_policy(path: Path) -> tuple[Policy, str]:
    versions = set()
    for job in _find_jobs(path):
        obj = _load_json(job / "result.json")
        if isinstance(obj, dict):
            versions.add("0.26" if "schema_version" in obj else "0.25")
    if versions == {"0.26"}:
        return "0.26", "the job result.json has schema_version: written by Harbor >= 0.26"
    return "0.25", "Harbor 0.25's rule, as the metrics page describes"


def summarize_job(
    path: str | os.PathLike[str], *, policy: Policy | Literal["auto"] = "auto"
) -> str:
    """Readable per-evaluation summary of a Harbor job folder (``metrickit summarize``).

    Per evaluation: trials (finished / running), mean ± 95% CI of each reward key (analytic;
    clustered by task when tasks have several attempts), Harbor's metric under ``policy``,
    pass@k, errors by type, tokens and cost. ``policy="auto"`` uses 0.26 when every job's
    ``result.json`` was written by Harbor >= 0.26 (it has ``schema_version``), else 0.25.
    """
    import pandas as pd

    from metrickit.compute.passk import PassAtKSkipped, pass_at_k
    from metrickit.io.rewards import reward_keys
    from metrickit.compute.stats import mean_ci

    why = "chosen by the caller"
    if policy == "auto":
        policy, why = _detect_policy(Path(path))
    trials = read_harbor_job(path, progress=False)
    metrics = job_metrics(trials, policy=policy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PassAtKSkipped)
        passk = pass_at_k(trials, policy=policy)
    keys = reward_keys(trials)
    lines = [
        f"Harbor job {Path(path)}: {len(trials)} trial(s)",
        f"policy {policy} ({why})",
    ]
    known = _known_rows(trials, "eval")
    if len(known) < len(trials):
        lines.append(
            f"{len(trials) - len(known)} running trial(s) without config.json yet "
            "(evaluation not known, not counted)"
        )
    for label, idx in _groups(known):
        sub = known.iloc[idx]
        running = int((sub["_status"].astype(str) == "running").sum())
        done = sub[sub["_status"].astype(str) != "running"]
        lines.append("")
        lines.append(f"{label}")
        lines.append(
            f"  trials: {len(done)} finished, {running} running; tasks: "
            f"{done['task_name'].nunique()}; with reward: {int(done['has_reward'].sum())}"
        )
        # The interval is for the number Harbor reports: the trials its policy counts.
        counted = done if policy == "0.25" else done[done["reward_valid"].astype(bool)]
        for key in keys:
            present = done[KIND_PREFIX + key].astype(str) != "missing"
            if not present.any() or len(counted) == 0:
                continue
            ci = mean_ci(
                counted[key].to_numpy(dtype=float), clusters=counted["task_name"].to_numpy()
            )
            spread = (
                "" if math.isnan(ci.half_width) else f" [{ci.low:.4f}, {ci.high:.4f}]"
            )
            tasks = f", tasks={ci.n_clusters}" if ci.n_clusters else ""
            note = f"; {ci.note}" if ci.note else ""
            lines.append(
                f"  {key}: mean {ci.estimate:.4f}{spread} (95% CI, {ci.method}, "
                f"trials={ci.n}{tasks}, policy {policy}{note})"
            )
        lines.append(f"  Harbor metrics ({policy}): {metrics.get(label, {})}")
        if label in passk.skipped:
            lines.append(f"  pass@k: not computed ({passk.skipped[label]})")
        elif passk.harbor.get(label):
            shown = ", ".join(f"pass@{k} {v:.4f}" for k, v in passk.harbor[label].items())
            lines.append(f"  {shown}")
        else:
            lines.append("  pass@k: none (a task has fewer than 2 finished trials)")
        errors = done["exception_type"].dropna().value_counts()
        if len(errors):
            listed = ", ".join(f"{name} {count}" for name, count in errors.items())
            lines.append(f"  errors: {int(errors.sum())} ({listed})")
        else:
            lines.append("  errors: 0")
        cost = pd.to_numeric(done["cost_usd"]).sum(min_count=1)
        lines.append(
            "  tokens: input {} (cache {}), output {}; cost ${}".format(
                _fmt_int(done["n_input_tokens"].sum(min_count=1)),
                _fmt_int(done["n_cache_tokens"].sum(min_count=1)),
                _fmt_int(done["n_output_tokens"].sum(min_count=1)),
                "-" if pd.isna(cost) else f"{cost:.4f}",
            )
        )
    return "\n".join(lines)


def _groups(trials: Any) -> list[tuple[Any, np.ndarray]]:
    from metrickit.compute.aggregate import group_indices

    return list(group_indices(trials, "eval").items())

