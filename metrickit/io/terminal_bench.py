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
from metrickit._core.schema import eval_key
from metrickit.errors import TrialSourceError
from metrickit.io.trials import (
    Backend,
    build_trials,
    empty_row,
    ms_between,
    parse_time,
    split_model,
)

__all__ = ["read_terminal_bench"]

_ATTEMPT = re.compile(r"\.(\d+)-of-(\d+)(?:\.|$)")
_NO_FAILURE = (None, "none", "unset")
_INVALID = frozenset({"agent_installation_failed"})


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
        null (the message names the file, the trial, the field and the value).

    Examples
    --------
    >>> import metrickit as mk
    >>> tb = mk.read_terminal_bench("runs/2025-08-15__19-28-24")   # doctest: +SKIP
    >>> mk.pass_at_k(tb)                                            # doctest: +SKIP
    """
    if backend not in ("pandas", "polars"):
        raise ValueError(f"backend={backend!r}; expected 'pandas' or 'polars'")
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
        _read_run(run, rows, rewards, where)
    return build_trials(rows, rewards, backend, where=where)


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
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
            if not isinstance(trial, dict) or "trial_name" not in trial or "task_id" not in trial:
                raise TrialSourceError(
                    f"{results_file}: results[{i}] is not a TrialResults object with "
                    "'trial_name' and 'task_id'"
                )
            trials[trial["trial_name"]] = (trial, f"{results_file}: results[{i}]")
    running: list[tuple[str, str]] = []
    for task_dir in sorted(p for p in run.iterdir() if p.is_dir()):
        for trial_dir in sorted(p for p in task_dir.iterdir() if p.is_dir()):
            own = trial_dir / "results.json"
            if trial_dir.name in trials:
                continue
            if own.exists():
                trial = _load(own)
                if not isinstance(trial, dict) or "task_id" not in trial:
                    raise TrialSourceError(f"{own}: expected a TrialResults object")
                trials[trial_dir.name] = (trial, str(own))
            else:
                running.append((task_dir.name, trial_dir.name))
    finished = sorted(trials.values(), key=lambda t: (t[0]["task_id"], t[0]["trial_name"]))
    seen: dict[str, int] = {}
    for trial, label in finished:
        row = dict(base)
        task = trial["task_id"]
        name = trial["trial_name"]
        seen[task] = seen.get(task, 0) + 1
        match = _ATTEMPT.search(name)
        failure = trial.get("failure_mode")
        resolved = trial.get("is_resolved")
        if resolved is not None and not isinstance(resolved, bool):
            raise TrialSourceError(
                f"{label} (trial {name!r}): is_resolved is {resolved!r}; expected true, false "
                "or null"
            )
        started = parse_time(trial.get("trial_started_at"))
        ended = parse_time(trial.get("trial_ended_at"))
        row.update(
            task_name=task,
            trial_name=name,
            attempt=int(match.group(1)) if match else seen[task],
            exception_type=None if failure in _NO_FAILURE else str(failure),
            n_input_tokens=trial.get("total_input_tokens"),
            n_output_tokens=trial.get("total_output_tokens"),
            started_at=started,
            finished_at=ended,
            total_ms=ms_between(started, ended),
            agent_execution_ms=ms_between(
                parse_time(trial.get("agent_started_at")), parse_time(trial.get("agent_ended_at"))
            ),
            verifier_ms=ms_between(
                parse_time(trial.get("test_started_at")), parse_time(trial.get("test_ended_at"))
            ),
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
