"""Harbor job folders as trial tables.

Harbor writes each run as ``jobs/<job>/`` with a job ``result.json`` and one folder per
trial holding the trial's own ``result.json`` (see ``docs/contracts.md``, section 1).
:func:`read_harbor_job` turns one job, several, or a folder of jobs into one row per
trial:

``run``, ``job``
    the job's ``job_name`` (its ``config.json``), else the job folder's name. ``run`` is
    unique per job folder: two folders given with the same name (six jobs all in folders
    called ``job`` have distinct names; two copies of one job do not) become
    ``<parent>/<name>``, so two folders never merge into one run.
``candidate``
    the label of the trial's recorded configuration (``metrickit._core.identity``): jobs
    whose agent, version, model, agent kwargs and dataset (version) all agree pool into one
    candidate, any difference keeps them apart (``agent · model · harness=pi``).
``agent_kwargs``, ``kwarg_<name>``
    ``config.agent.kwargs`` (the agent's ``--ak`` settings) as canonical JSON (null when
    empty), and one text column per kwarg; for a running trial, from its own
    ``config.json``.
``dataset``, ``dataset_version``, ``harness_version``
    the trial's ``source``; the ``version`` (or ``ref``) the job's ``config.json``
    ``datasets`` give that dataset (null for a local dataset); ``harbor.version`` from the
    job's ``lock.json`` (Harbor >= 0.18). ``variant`` and ``task_group``: null.
``eval``, ``agent``, ``agent_version``, ``model``, ``model_provider``, ``source``
    where the trial belongs. ``eval`` is Harbor's evaluation key
    ``agent__model__source`` (``agent__source`` without a model, source ``adhoc`` when the
    task has none); ``model`` is ``agent_info.model_info.name``, which Harbor already
    stores without the provider prefix (``anthropic/claude-sonnet-4-5`` →
    ``claude-sonnet-4-5``).
``task_name``, ``trial_name``, ``attempt``
    ``attempt`` numbers the trials of one task within a job (folder) and evaluation, 1,
    2, ... in order of start time.
``_status``
    ``"ok"`` (a reward with keys), ``"empty"`` (``{}``), ``"null"`` (no verifier result:
    no reward), ``"running"`` (a trial folder without ``result.json``; Harbor is still
    working on it), or ``"invalid"`` (with ``errors="report"``: the file could not be read).
``has_reward``, ``reward_valid``
    ``has_reward``: the verifier produced rewards. ``reward_valid``: Harbor 0.26's
    ``TrialResult.reward_valid`` (a non-empty reward and no recorded exception whose
    error policy says the reward is not a valid measurement).
``<key>``, ``_kind_<key>``
    one float column per reward key with the same ``_kind_`` companion as
    :func:`metrickit.read_rewards` (``missing``/``int``/``float``/``bool``): zero-filled
    within an evaluation as Harbor fills it, NA where no trial of the evaluation has the key
    (``docs/contracts.md``, section 5), so ``mk.aggregate(trials, by="eval")`` reproduces the
    job's ``metrics``. When no trial has a reward yet, there is one ``reward`` column, all 0
    and ``missing``.
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
``trial_dir``, ``format``
    the trial's folder; ``"harbor"``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

from metrickit._core.schema import (
    TRIAL_STATUSES,
    check_backend,
    eval_key,
)
from metrickit._core.values import INVALID
from metrickit.errors import HarborJobError, Problem
from metrickit.io.harbor_trials import (
    RUNNING,
    TrialRecord,
    find_jobs,
    job_info,
    read_trial,
    run_names,
    running_row,
    subdirs,
)
from metrickit.io.trials import build_trials, guarded

__all__ = ["eval_key", "read_harbor_job", "read_job_result"]

Backend = Literal["pandas", "polars"]

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


@guarded("read_harbor_job", error=HarborJobError)
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
    check_backend(backend)
    if errors not in ("raise", "report"):
        raise ValueError(f"errors={errors!r}; expected 'raise' or 'report'")
    if isinstance(path_or_paths, str | os.PathLike):
        roots = [Path(path_or_paths)]
    else:
        roots = [Path(p) for p in path_or_paths]
        if not roots:
            raise HarborJobError("read_harbor_job got an empty list; pass at least one job folder")
    jobs = [job for root in roots for job in find_jobs(root)]
    _refuse_repeats(jobs)
    infos = [job_info(job) for job in jobs]
    runs = dict(zip(jobs, run_names(jobs, [i.name for i in infos]), strict=True))
    info_of = dict(zip(jobs, infos, strict=True))
    folders = [(job, trial) for job in jobs for trial in subdirs(job)]
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
            t.row = running_row(folder, known)
        info = info_of[job]
        t.row.update(
            run=runs[job],
            job=info.name,
            dataset=t.row["source"],
            dataset_version=info.dataset_versions.get(t.row["source"] or ""),
            harness_version=info.harness_version,
            format="harbor",
            trial_dir=str(folder),
        )
    frame = _build(trials, backend)
    return (frame, problems) if errors == "report" else frame


def _refuse_repeats(jobs: list[Path]) -> None:
    """A job folder reached twice (given twice, or as itself and inside its parent) would
    count each of its trials twice: refused, never merged silently."""
    seen: dict[Path, Path] = {}
    for job in jobs:
        real = job.resolve()
        if real in seen:
            how = "" if seen[real] == job else f" (as {seen[real]} and {job})"
            raise HarborJobError(
                f"{job}: this job folder is reached twice{how}, so each of its trials would "
                "be counted twice: pass each job once (a folder of jobs already includes "
                "every job in it)"
            )
        seen[real] = job


def _read_all(folders: list[Path], progress: bool | None) -> list[TrialRecord]:
    """Every trial folder read, in order, in this process: json parsing and validation
    hold the GIL, so threads run slower than one thread, and a second reader process
    measured 0.80-1.14x on two cores, too little for its cost."""
    show = progress if progress is not None else len(folders) >= _PROGRESS_MIN
    if not show:
        return [read_trial(f) for f in folders]
    from tqdm.auto import tqdm

    with tqdm(total=len(folders), desc="reading trials", unit="trial") as bar:
        trials = []
        for folder in folders:
            trials.append(read_trial(folder))
            bar.update(1)
        return trials


def _order(trials: list[TrialRecord]) -> list[int]:
    """Jobs in the order given; within a job by start time (running last), then name."""
    far = datetime.max.replace(tzinfo=UTC)
    job_rank: dict[str, int] = {}
    for t in trials:
        job_rank.setdefault(t.row["run"], len(job_rank))

    def key(i: int) -> tuple[Any, ...]:
        row = trials[i].row
        started = row["started_at"]
        return (job_rank[row["run"]], started is None, started or far, row["trial_name"] or "")

    return sorted(range(len(trials)), key=key)


def _build(trials: list[TrialRecord], backend: Backend) -> Any:
    order = _order(trials)
    trials = [trials[i] for i in order]
    # attempt: 1, 2, ... per (job, eval, task) in row order; ``run`` is the job folder
    # (two folders with one job_name are two runs, never one job's attempts)
    seen: dict[tuple[Any, Any, Any], int] = {}
    for t in trials:
        k = (t.row["run"], t.row["eval"], t.row["task_name"])
        seen[k] = seen.get(k, 0) + 1
        t.row["attempt"] = seen[k]
    rows = []
    for t in trials:
        row = dict(t.row)
        if t.status in (RUNNING, INVALID):
            row["_status"] = TRIAL_STATUSES[t.status]
        rows.append(row)
    return build_trials(
        rows,
        [t.rewards for t in trials],
        backend,
        where=[str(t.folder / "result.json") for t in trials],
        reward_field="verifier_result.rewards",
        error=HarborJobError,
    )








# ---------------------------------------------------------------------------
# Job metrics
# ---------------------------------------------------------------------------








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









