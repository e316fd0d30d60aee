"""Terminal-Bench 1 run folders as trial tables.

``tb run`` (terminal-bench 0.2.x, before the move to Harbor) writes ``runs/<run_id>/`` with
``run_metadata.json`` (``RunMetadata``: ``run_id``, ``agent_name``, ``model_name``,
``dataset_name``, ``dataset_version``, ``n_attempts``, ``start_time``/``end_time``, ...), a
``results.json`` (``BenchmarkResults``: ``results``, one ``TrialResults`` per finished trial,
plus ``accuracy`` and ``pass_at_k``) rewritten after every trial, and
``<task_id>/<trial_name>/results.json`` per trial (field names from
``terminal_bench/harness/models.py``). :func:`read_terminal_bench` turns a run into one row
per trial, with the columns of :func:`metrickit.read_harbor_job`:

``run``, ``job``, ``agent``, ``model``, ``model_provider``, ``source``, ``eval``
    ``run_id`` (else the folder's name); ``agent_name``; ``model_name`` split at the first
    ``/`` as Harbor stores models (``anthropic/claude-sonnet-4-20250514`` ->
    ``claude-sonnet-4-20250514``, provider ``anthropic``); ``dataset_name`` (``adhoc`` in
    ``eval`` when the run used a local dataset path); ``eval`` is Harbor's
    ``agent__model__source``.
``candidate``, ``agent_kwargs``, ``kwarg_<name>``
    the label of the run's recorded configuration (``metrickit._core.identity``): runs of
    one agent, model, kwargs and dataset version pool; a run without ``model_name`` (an
    installed agent such as "Factory Droid" often records none) pools with no other run, so
    its label names the run. ``agent_kwargs`` (``--agent-kwarg``) as canonical JSON, one
    ``kwarg_<name>`` text column per kwarg.
``dataset``, ``dataset_version``, ``harness_version``
    ``dataset_name`` (the ``dataset_path`` folder's name for a local dataset) and
    ``dataset_version``; ``commit_hash``, the git commit of the terminal-bench checkout
    that ran the run (null when ``unknown``). ``agent_version``, ``variant``,
    ``task_group``: null (RunMetadata records no agent version).
``task_name``, ``trial_name``, ``attempt``
    ``task_id``; ``trial_name`` (``<task>.<attempt>-of-<n>.<run_id>``); the attempt number
    from the trial name (1, 2, ... in trial-name order when a name does not hold one).
``reward``, ``_status``, ``has_reward``, ``reward_valid``
    one reward column ``reward``: ``is_resolved`` (``bool``; Terminal-Bench's accuracy is
    the mean of it over all trials, an unresolved ``None`` counting as 0, as Harbor 0.25's
    policy counts a trial without reward). ``_status``: ``ok`` when ``is_resolved`` is set,
    ``null`` when it is ``None`` (the tests never ran or could not be parsed: test timeout,
    parse error, a crashed trial), ``running`` for a trial folder with no result yet.
    ``reward_valid``: a reward and no ``agent_installation_failed`` (the agent never ran).
    The per-test ``parser_results`` are not columns.
``exception_type``
    ``failure_mode`` (``agent_timeout``, ``test_timeout``, ``parse_error``,
    ``unknown_agent_error``, ``context_length_exceeded``, ...) when it is not ``none`` or
    ``unset``; ``exception_message`` is null (Terminal-Bench records no message).
``n_input_tokens``, ``n_output_tokens``
    ``total_input_tokens``, ``total_output_tokens`` (installed agents report 0).
``started_at``, ``finished_at``, ``agent_execution_ms``, ``verifier_ms``, ``total_ms``
    the trial's start and end; agent start to end; test start to end; trial start to end.
``trial_dir``, ``format``
    ``<run>/<task_id>/<trial_name>``; ``"terminal-bench"``. Cache tokens, cost, the setup
    durations and the step columns: null (``n_steps`` 0).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metrickit._core.identity import canonical_kwargs
from metrickit._core.schema import check_backend, eval_key
from metrickit._core.values import MAX_EXACT_INT, describe_value
from metrickit.errors import TrialSourceError
from metrickit.io.trials import (
    Backend,
    build_trials,
    empty_row,
    guarded,
    ms_between,
    parse_time,
    reading,
    split_model,
)

__all__ = ["read_terminal_bench"]

_ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")
_NO_FAILURE = (None, "none", "unset")
_INVALID = frozenset({"agent_installation_failed"})
_TOKENS = ("total_input_tokens", "total_output_tokens")
_TIMES = ("trial_started_at", "trial_ended_at", "agent_started_at", "agent_ended_at",
          "test_started_at", "test_ended_at")


@guarded("read_terminal_bench")
def read_terminal_bench(
    run_folder: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = "pandas",
) -> Any:
    """Read Terminal-Bench 1 run folders into one row per trial.

    Parameters
    ----------
    run_folder
        A run folder (``runs/<run_id>``, the one holding ``run_metadata.json``), a folder of
        runs (``runs/``), or a list of run folders.
    backend
        ``"pandas"`` (default) or ``"polars"``.

    Returns
    -------
    DataFrame
        The trial table (see the module docstring for the columns); runs in the order given
        (a folder of runs: by name), trials by task, then attempt, running trials last.

    Raises
    ------
    TrialSourceError
        No run at the path, a ``results.json`` or ``run_metadata.json`` that is not valid
        JSON or lacks a field the reader needs, an ``is_resolved`` that is not true, false or
        null, a token count that is not a whole number from 0 to 2**53 (a bool, text, a
        negative number), a timestamp that is not ISO 8601 text, a ``task_id``,
        ``trial_name`` or ``failure_mode`` that is not text, or anything else the format
        does not allow (the message names the file, the trial, the field and the value).

    Examples
    --------
    >>> import metrickit as mk
    >>> tb = mk.read_terminal_bench("runs/2025-08-15__19-28-24")   # doctest: +SKIP
    >>> mk.pass_at_k(tb)                                            # doctest: +SKIP
    """
    check_backend(backend)
    roots = (
        [Path(run_folder)]
        if isinstance(run_folder, str | os.PathLike)
        else [Path(p) for p in run_folder]
    )
    if not roots:
        raise TrialSourceError("read_terminal_bench got an empty list; pass a run folder")
    runs: list[Path] = []
    for root in roots:
        if (root / "run_metadata.json").is_file():
            runs.append(root)
        elif root.is_dir() and (
            found := sorted(p.parent for p in root.glob("*/run_metadata.json"))
        ):
            runs.extend(found)
        else:
            raise TrialSourceError(
                f"{root}: not a Terminal-Bench run folder (no run_metadata.json in it or in "
                "its subfolders); expected runs/<run_id> as written by `tb run`"
            )
    rows: list[dict[str, Any]] = []
    rewards: list[dict[str, Any] | None] = []
    where: list[str] = []
    for run in runs:
        with reading(run):
            _read_run(run, rows, rewards, where)
    return build_trials(rows, rewards, backend, where=where)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise TrialSourceError(f"{path}: not a readable JSON file ({exc})") from None


def _read_run(
    run: Path,
    rows: list[dict[str, Any]],
    rewards: list[dict[str, Any] | None],
    where: list[str],
) -> None:
    meta_file = run / "run_metadata.json"
    meta = _load(meta_file)
    if not isinstance(meta, dict) or "agent_name" not in meta:
        raise TrialSourceError(
            f"{meta_file}: expected Terminal-Bench's RunMetadata (a JSON object with "
            "'run_id' and 'agent_name')"
        )
    agent = meta["agent_name"]
    for name in ("run_id", "agent_name", "model_name", "dataset_name", "dataset_path",
                 "dataset_version", "commit_hash"):
        value = meta.get(name)
        if value is not None and not isinstance(value, str):
            raise TrialSourceError(
                f"{meta_file}: field {name!r} is {value!r} ({type(value).__name__}); "
                "expected a string or null"
            )
    kwargs = meta.get("agent_kwargs")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TrialSourceError(
            f"{meta_file}: field 'agent_kwargs' is {kwargs!r} ({type(kwargs).__name__}); "
            "expected an object of the agent's keyword arguments or null"
        )
    model, provider = split_model(meta.get("model_name"))
    source = meta.get("dataset_name")
    run_id = meta.get("run_id") or run.name
    # a local dataset (``--dataset-path``) has no name: the folder's name says what it was
    dataset = source or (Path(meta["dataset_path"]).name if meta.get("dataset_path") else None)
    # ``commit_hash`` is the git commit of the terminal-bench checkout that ran the run
    # ("unknown" outside a git checkout); RunMetadata records no agent version
    commit = meta.get("commit_hash")
    base = empty_row()
    base.update(
        run=run_id,
        job=run_id,
        agent=agent,
        model=model,
        model_provider=provider,
        agent_kwargs=canonical_kwargs(kwargs),
        dataset=dataset,
        dataset_version=meta.get("dataset_version"),
        harness_version=None if commit in (None, "", "unknown") else commit,
        format="terminal-bench",
        source=source,
        eval=eval_key(agent, model, source),
        n_steps=0,
    )
    trials: dict[str, tuple[dict[str, Any], str]] = {}
    results_file = run / "results.json"
    if results_file.exists():
        results = _load(results_file)
        if not isinstance(results, dict) or not isinstance(results.get("results"), list):
            raise TrialSourceError(
                f"{results_file}: expected Terminal-Bench's BenchmarkResults (a JSON object "
                "with a 'results' list)"
            )
        for i, trial in enumerate(results["results"]):
            label = f"{results_file}: results[{i}]"
            _check_names(trial, label)
            if trial["trial_name"] in trials:
                raise TrialSourceError(
                    f"{label}: trial_name {trial['trial_name']!r} is listed twice (also at "
                    f"{trials[trial['trial_name']][1]}); expected one result per trial"
                )
            trials[trial["trial_name"]] = (trial, label)
    running: list[tuple[str, str]] = []
    for task_dir in sorted(p for p in run.iterdir() if p.is_dir()):
        for trial_dir in sorted(p for p in task_dir.iterdir() if p.is_dir()):
            own = trial_dir / "results.json"
            if trial_dir.name in trials:
                continue
            if own.exists():
                trial = _load(own)
                _check_names(trial, str(own))
                trials[trial_dir.name] = (trial, str(own))
            else:
                running.append((task_dir.name, trial_dir.name))
    finished = sorted(trials.values(), key=lambda t: (t[0]["task_id"], t[0]["trial_name"]))
    seen: dict[str, int] = {}
    for trial, label in finished:
        row = dict(base)
        task = trial["task_id"]
        name = trial["trial_name"]
        label = f"{label} (trial {name!r})"
        seen[task] = seen.get(task, 0) + 1
        match = _ATTEMPT.search(name)
        failure = trial.get("failure_mode")
        if failure is not None and not isinstance(failure, str):
            raise TrialSourceError(
                f"{label}: field 'failure_mode' is {describe_value(failure)}; expected text "
                "(a FailureMode such as 'none', 'agent_timeout') or null"
            )
        resolved = trial.get("is_resolved")
        if resolved is not None and not isinstance(resolved, bool):
            raise TrialSourceError(
                f"{label}: is_resolved is {resolved!r}; expected true, false or null"
            )
        times = {field: _stamp(trial, field, label) for field in _TIMES}
        with reading(label) as at:
            at.at("trial_started_at .. trial_ended_at")
            total = ms_between(times["trial_started_at"], times["trial_ended_at"])
            at.at("agent_started_at .. agent_ended_at")
            agent_ms = ms_between(times["agent_started_at"], times["agent_ended_at"])
            at.at("test_started_at .. test_ended_at")
            test_ms = ms_between(times["test_started_at"], times["test_ended_at"])
        row.update(
            task_name=task,
            trial_name=name,
            attempt=int(match.group(1)) if match else seen[task],
            exception_type=None if failure in _NO_FAILURE else failure,
            n_input_tokens=_count(trial, "total_input_tokens", label),
            n_output_tokens=_count(trial, "total_output_tokens", label),
            started_at=times["trial_started_at"],
            finished_at=times["trial_ended_at"],
            total_ms=total,
            agent_execution_ms=agent_ms,
            verifier_ms=test_ms,
            trial_dir=str(run / task / name),
            reward_valid=resolved is not None and failure not in _INVALID,
        )
        rows.append(row)
        rewards.append(None if resolved is None else {"reward": resolved})
        where.append(f"{label} (trial {name!r})")
    for task, name in running:
        row = dict(base)
        match = _ATTEMPT.search(name)
        seen[task] = seen.get(task, 0) + 1
        row.update(
            task_name=task,
            trial_name=name,
            attempt=int(match.group(1)) if match else seen[task],
            trial_dir=str(run / task / name),
            _status="running",
        )
        rows.append(row)
        rewards.append(None)
        where.append(str(run / task / name))


def _check_names(trial: Any, label: str) -> None:
    """A TrialResults object: a JSON object whose ``task_id`` and ``trial_name`` are text."""
    if not isinstance(trial, dict) or "trial_name" not in trial or "task_id" not in trial:
        raise TrialSourceError(
            f"{label}: {describe_value(trial)} is not a TrialResults object with 'trial_name' "
            "and 'task_id'"
        )
    for field in ("task_id", "trial_name"):
        value = trial[field]
        if not isinstance(value, str) or not value.strip():
            raise TrialSourceError(
                f"{label}: field {field!r} is {describe_value(value)}; expected non-empty text"
            )


def _count(trial: dict[str, Any], field: str, label: str) -> int | None:
    """A token count: a whole number from 0 to 2**53, or null."""
    value = trial.get(field)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_EXACT_INT:
        return int(value)  # 1200.0: a whole number written as a float
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_EXACT_INT:
        raise TrialSourceError(
            f"{label}: field {field!r} is {describe_value(value)}; expected a whole number "
            "of tokens from 0 to 2**53, or null"
        )
    return value


def _stamp(trial: dict[str, Any], field: str, label: str) -> Any:
    """A timestamp: ISO 8601 text (as ``datetime.isoformat()`` writes it) or null."""
    value = trial.get(field)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise TypeError
        return parse_time(value)
    except (TypeError, ValueError, OverflowError):
        raise TrialSourceError(
            f"{label}: field {field!r} is {describe_value(value)}; expected an ISO 8601 "
            "timestamp ('2025-08-15T19:28:24.123456+00:00') or null"
        ) from None
