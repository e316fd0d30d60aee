"""Inspect AI evaluation logs (``.eval`` and ``.json``) as trial tables.

:func:`read_inspect_log` reads logs with Inspect's own log API
(``inspect_ai.log.list_eval_logs``, ``read_eval_log(header_only=True)`` and
``read_eval_log_sample_summaries``; never a parser of its own) into one row per sample and
epoch, with the columns of :func:`metrickit.read_harbor_job`:

``run``, ``job``
    ``run`` is the log's ``eval.eval_id`` (one task on one model: one log; else its
    ``run_id``, else the file; two files of one ``eval_id`` are ``<eval_id>/<file name>``),
    ``job`` the eval's ``run_id`` (one ``inspect eval`` call; all its logs share it).
``candidate``
    the label of the log's recorded configuration (``metrickit._core.identity``): logs of
    one solver, model, settings (below) and task (arguments, version) pool, any difference
    keeps them apart (``generate · gpt-4o · dataset=popularity``,
    ``generate · gpt-4o · generate.temperature=0.7``).
``agent_kwargs``, ``kwarg_<name>``
    the settings as canonical JSON, one ``kwarg_<name>`` text column each; null without
    any: ``eval.solver_args`` (the arguments of a solver given to the eval) as they are,
    ``eval.model_args`` as ``model_args.<name>``, each field of
    ``eval.model_generate_config`` that is set and changes the model's answers as
    ``generate.<name>`` (:data:`OPERATIONAL_GENERATE` lists the ones that do not), and
    each of ``eval.model_roles`` (a grader's model) as ``model_roles.<role>.model``, its
    settings under the same prefix.
``dataset``, ``dataset_version``, ``harness_version``
    the task name, followed by its ``eval.task_args`` when there are any
    (``popularity[difficulty=hard]``); ``eval.task_version`` as text; the ``inspect_ai``
    version the log records in ``eval.packages``. ``variant``: null.
``task_group``
    the sample's group, from its metadata (text): the key given as ``group=``; without
    it, the ``group_key`` of a ``grouped(...)`` metric the log's scorers record, else the
    first of ``task_group``, ``group``, ``subject``, ``category`` that a sample of the log
    has in its metadata (MMLU's samples record ``subject``); null when none applies.
``agent``
    ``eval.solver`` when the eval was given a solver (``--solver``/``solver=``), else the
    names of the plan's solvers joined with ``+`` (``generate``, ``system_message+generate``),
    else ``"inspect"``.
``model``, ``model_provider``
    ``eval.model`` split at the first ``/`` as Harbor stores models (``openai/gpt-4o`` ->
    ``gpt-4o``, provider ``openai``).
``source``, ``eval``
    ``source`` is the task as ``dataset`` names it (its arguments included: a task run with
    other arguments is other tasks, whose samples never pair with these); ``eval`` is
    Harbor's evaluation key ``agent__model__source``.
``task_name``, ``attempt``, ``trial_name``
    the sample id (as text), the epoch (1, 2, ...) and the sample's ``uuid``.
``_status``, ``has_reward``, ``reward_valid``
    ``ok`` (scores), ``empty`` (a sample scored by no scorer), ``null`` (no scores: the
    sample failed with an error), ``running`` (the log's status is ``started`` and the
    sample is not complete yet, or not begun: ``dataset.sample_ids`` x epochs).
    Only samples the log holds are trials: samples an eval that ended in
    ``error``/``cancelled`` never ran give no row (a row would count as 0) and a
    :class:`~metrickit.errors.MetrickitWarning` with their count; a finished log that
    stores no samples at all (``--no-log-samples``) gives no row and a warning quoting its
    header's results (completed samples, each scorer's metrics).
    ``reward_valid`` is ``has_reward`` and no sample error; a sample stopped by a limit keeps
    a valid reward (Inspect scores it), as Harbor keeps the reward of an agent timeout.
``<scorer>``, ``<scorer>.<key>``
    one reward column per scorer, and per key of a dict-valued score (a scorer named
    ``graded`` returning ``{"correct": "C", "f1": 0.5}`` gives ``graded.correct`` and
    ``graded.f1``). Strings are converted with Inspect's ``value_to_float()`` rules:
    ``C`` 1, ``P`` 0.5, ``I`` and ``N`` 0, ``yes``/``true`` 1, ``no``/``false`` 0, numeric
    text as its number (``_kind_`` ``float``); booleans and numbers keep their kind. A value
    those rules cannot convert (a list, other text) raises instead of Inspect's silent 0.
    A ``None`` score value counts as the key missing for that sample. Zero-fill: a scorer
    key some samples of a log's evaluation lack is 0 (``_kind_`` ``missing``), one that no
    sample of the evaluation has is NA.
``exception_type``, ``exception_message``
    a sample error: the exception class from Inspect's message (``RuntimeError`` from
    ``RuntimeError('boom')``; ``EvalError`` when the message has no class name) and the
    message; a limit: ``<type>_limit`` with Inspect's option names (``token_limit``,
    ``message_limit``, ``time_limit``, ``working_limit``, ...) and the limit's reason.
``n_input_tokens``, ``n_cache_tokens``, ``n_output_tokens``, ``cost_usd``
    the sample's ``model_usage`` summed over every model it called (scorer models too):
    ``input_tokens``, ``input_tokens_cache_read``, ``output_tokens``, ``total_cost``; null
    when the sample has no usage (cache and cost: when no model reported them).
``started_at``, ``finished_at``, ``total_ms``, ``agent_execution_ms``
    the sample's start and completion times; ``total_time`` and ``working_time`` (clock
    time minus waits for rate limits, retries and approvals) in milliseconds.
``trial_dir``, ``format``
    the log file; ``"inspect"``. ``agent_version``, ``step_exception_type``, ``n_steps``,
    the other phase durations: null.

Needs ``inspect_ai`` (``pip install 'metrickit[inspect]'``).
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from metrickit._core.identity import canonical_kwargs, kwarg_text
from metrickit._core.schema import check_backend, eval_key
from metrickit.errors import MetrickitWarning, TrialSourceError
from metrickit.io.trials import (
    Backend,
    Cursor,
    build_trials,
    empty_row,
    guarded,
    parse_time,
    reading,
    split_model,
    unexpected,
)

__all__ = ["read_inspect_log"]

_LETTERS = frozenset({"C", "I", "P", "N"})
_WORDS = frozenset({"yes", "no", "true", "false"})
_EXC_NAME = re.compile(r"^([A-Za-z_][\w.]*)\(")


def _import_inspect() -> Any:
    try:
        import inspect_ai.log as inspect_log
    except ImportError:
        raise ImportError(
            "read_inspect_log needs Inspect AI: pip install 'metrickit[inspect]' (inspect-ai)"
        ) from None
    return inspect_log


@guarded("read_inspect_log")
def read_inspect_log(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    group: str | None = None,
    backend: Backend = "pandas",
) -> Any:
    """Read Inspect AI logs into one row per sample and epoch.

    Parameters
    ----------
    path
        A ``.eval`` or ``.json`` log, a folder of logs (searched recursively with
        ``inspect_ai.log.list_eval_logs``), or a list of either.
    group
        The sample metadata key that holds each sample's task group (``"subject"``); None
        (default): the key of the log's ``grouped(...)`` metric, else the first of
        ``task_group``, ``group``, ``subject``, ``category`` a sample has. A group value
        that is not text or a number is refused.
    backend
        ``"pandas"`` (default) or ``"polars"``.

    Returns
    -------
    DataFrame
        The trial table (see the module docstring for the columns), logs in file-name order
        (Inspect names logs by their start time), samples in the order Inspect lists them.
        Logs without samples give an empty trial table (with the columns).

    Warns
    -----
    MetrickitWarning
        A finished log that stores no samples (naming the file and quoting its header's
        results), or an eval that ended in ``error``/``cancelled`` before running samples
        it planned (with their count): neither gives trial rows for what it did not store.

    Raises
    ------
    TrialSourceError
        No log at the path, or a score value Inspect's ``value_to_float`` rules cannot
        convert (the message names the log, the sample, the epoch, the scorer and the value).
    ImportError
        ``inspect_ai`` is not installed.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_inspect_log("logs/")          # doctest: +SKIP
    >>> mk.pass_at_k(trials, k=2)                      # doctest: +SKIP
    """
    check_backend(backend)
    inspect_log = _import_inspect()
    files = _log_files(inspect_log, path)
    rows: list[dict[str, Any]] = []
    rewards: list[dict[str, Any] | None] = []
    where: list[str] = []
    for file in files:
        with reading(_local(file)) as at:
            _read_one(inspect_log, file, rows, rewards, where, at, group)
    _unique_runs(rows)
    return build_trials(rows, rewards, backend, where=where)


def _unique_runs(rows: list[dict[str, Any]]) -> None:
    """One run per log file: two files of one ``eval_id`` (a log and its copy converted to
    the other format) become ``<eval_id>/<file name>``, two runs, never one run holding
    each sample twice."""
    files_of: dict[str, set[str]] = {}
    for row in rows:
        files_of.setdefault(row["run"], set()).add(row["trial_dir"])
    for row in rows:
        if len(files_of[row["run"]]) > 1:
            row["run"] = f"{row['run']}/{Path(row['trial_dir']).name}"


def _log_files(
    inspect_log: Any, path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
) -> list[str]:
    roots = [path] if isinstance(path, str | os.PathLike) else list(path)
    if not roots:
        raise TrialSourceError("read_inspect_log got an empty list; pass a log or a folder")
    files: list[str] = []
    for root in roots:
        p = Path(root)
        if p.is_dir():
            found = sorted(
                inspect_log.list_eval_logs(str(p), recursive=True), key=lambda info: info.name
            )
            if not found:
                raise TrialSourceError(
                    f"{p}: no Inspect log (.eval or .json) in this folder or below"
                )
            files.extend(info.name for info in found)
        elif p.is_file():
            if p.suffix not in (".eval", ".json"):
                raise TrialSourceError(
                    f"{p}: not an Inspect log; expected a .eval or .json file or a folder"
                )
            files.append(str(p))
        else:
            raise TrialSourceError(f"{p}: no such file or folder")
    return files


def _agent(header: Any) -> str:
    if header.eval.solver:
        return str(header.eval.solver)
    steps = [step.solver for step in (header.plan.steps if header.plan else [])]
    return "+".join(steps) if steps else "inspect"


def _read_one(
    inspect_log: Any,
    file: str,
    rows: list[dict[str, Any]],
    rewards: list[dict[str, Any] | None],
    where: list[str],
    at: Cursor,
    group: str | None = None,
) -> None:
    at.at("the log's header (read_eval_log)")
    try:
        header = inspect_log.read_eval_log(file, header_only=True)
        at.at("the log's samples (read_eval_log_sample_summaries)")
        summaries = inspect_log.read_eval_log_sample_summaries(file)
    except Exception as exc:
        if not unexpected(exc):
            raise
        raise TrialSourceError(
            f"{_local(file)}: not a readable Inspect AI log: Inspect's own reader failed on "
            f"{at.field} ({type(exc).__name__}: {_first_line(exc)}); expected a .eval (zip) "
            "or .json log as `inspect eval` writes it, complete (not cut short)"
        ) from exc
    at.at(None)
    location = _local(file)
    agent = _agent(header)
    model, provider = split_model(header.eval.model)
    settings = _settings(header.eval, location)
    source = _task_label(
        header.eval.task, _arguments(header.eval.task_args, "task_args", location)
    )
    version = header.eval.task_version
    base = empty_row()
    base.update(
        # one log is one run: its eval_id (Inspect >= 0.3.5x), else the run_id it shares
        # with the other tasks of its ``inspect eval`` call, else the file
        run=getattr(header.eval, "eval_id", None) or header.eval.run_id or location,
        job=header.eval.run_id or None,
        eval=eval_key(agent, model, source),
        agent=agent,
        model=model,
        model_provider=provider,
        agent_kwargs=canonical_kwargs(settings),
        dataset=source,
        dataset_version=None if version is None else str(version),
        harness_version=(header.eval.packages or {}).get("inspect_ai"),
        format="inspect",
        source=source,
        trial_dir=location,
    )
    status = header.status
    if not summaries and status != "started":
        # A log that stored no samples (``--no-log-samples``, a log trimmed of them): no
        # trial to read. Its header's results are aggregates, not trials: say so, add none.
        warnings.warn(
            f"{location}: the log stores no samples (status {status!r}), so it gives no "
            f"trial rows; its header reports {_results_text(header)}",
            MetrickitWarning,
            stacklevel=3,
        )
        return
    group_key = group or _group_key(header, summaries)
    seen: set[tuple[str, int]] = set()
    for s in summaries:
        row = dict(base)
        label = f"{location}: sample {s.id!r} epoch {s.epoch}"
        at.where = label
        row.update(
            task_name=str(s.id),
            attempt=int(s.epoch),
            trial_name=s.uuid,
            started_at=parse_time(s.started_at),
            finished_at=parse_time(s.completed_at),
            total_ms=None if s.total_time is None else s.total_time * 1000.0,
            agent_execution_ms=None if s.working_time is None else s.working_time * 1000.0,
        )
        row.update(_usage(s.model_usage))
        if group_key is not None:
            row["task_group"] = _group_value(s.metadata, group_key, label)
        seen.add((str(s.id), int(s.epoch)))
        if status == "started" and not s.completed:
            row["_status"] = "running"
            rows.append(row)
            rewards.append(None)
            where.append(label)
            continue
        if s.error:
            match = _EXC_NAME.match(s.error)
            row["exception_type"] = match.group(1) if match else "EvalError"
            row["exception_message"] = s.error
        elif s.limit:
            row["exception_type"] = f"{s.limit}_limit"
            row["exception_message"] = s.limit_reason
        reward = None if s.error else _scores(s.scores or {}, label)
        row["reward_valid"] = bool(reward) and not s.error
        rows.append(row)
        rewards.append(reward)
        where.append(label)
    at.where = location
    unrun = _unrun(header, seen)
    if not unrun:
        return
    if status == "started":
        # still running: the samples it has not reached yet are running trials (never
        # counted), as Harbor's trial folders without result.json are
        for sample_id, epoch in unrun:
            row = dict(base)
            row.update(task_name=str(sample_id), attempt=epoch, _status="running")
            rows.append(row)
            rewards.append(None)
            where.append(f"{location}: sample {sample_id!r} epoch {epoch}")
    elif status != "success":
        # an eval that ended in error or was cancelled never ran these: no result, so no
        # trial (a row would count as 0 under Harbor 0.25's policy)
        error = header.error.message if header.error is not None else None
        warnings.warn(
            f"{location}: the eval ended {status!r} before running {len(unrun):,} of the "
            f"{_planned(header):,} (sample, epoch) pairs it planned; they give no trial rows "
            "(no result to count)"
            + (f"; its error: {error!r}" if error else "")
            + f"; its header reports {_results_text(header)}",
            MetrickitWarning,
            stacklevel=3,
        )


#: Fields of Inspect's ``GenerateConfig`` that say how the model is called, not how it
#: answers (retries, time-outs, connections, caching, batching, headers, and which
#: log-probabilities are recorded): two runs that differ only in these are one candidate.
OPERATIONAL_GENERATE = frozenset({
    "max_retries", "timeout", "attempt_timeout", "stream_idle_timeout", "max_connections",
    "adaptive_connections", "cache_prompt", "cache", "batch", "extra_headers", "logprobs",
    "top_logprobs", "prompt_logprobs",
})


def _arguments(value: Any, field: str, location: str) -> dict[str, Any]:
    """``eval.<field>`` (an object of arguments, or null) as a dict."""
    if value is None:
        return {}
    if hasattr(value, "model_dump"):  # a pydantic model: the fields that were set
        value = value.model_dump(exclude_none=True)
    if not isinstance(value, Mapping):
        raise TrialSourceError(
            f"{location}: eval.{field} is {value!r} ({type(value).__name__}); expected an "
            "object of arguments or null"
        )
    return dict(value)


def _settings(spec: Any, location: str) -> dict[str, Any]:
    """What the log records of how the system under test was configured, beyond its
    solver, model and task: the solver's arguments as they are, the model's arguments as
    ``model_args.<name>``, each generation setting that changes the model's answers as
    ``generate.<name>`` (``generate.temperature``), and the models of other roles (a
    grader) as ``model_roles.<role>.model`` with their own settings under the same prefix.
    Two logs that differ in any of them are two candidates."""
    settings = _arguments(spec.solver_args, "solver_args", location)
    settings.update(_model_settings("", spec.model_args, spec.model_generate_config, location))
    for role, configs in sorted(_arguments(spec.model_roles, "model_roles", location).items()):
        many = isinstance(configs, list)
        for i, config in enumerate(configs if many else [configs]):
            prefix = f"model_roles.{role}" + (f"[{i}]" if many else "")
            model = _arguments(config, prefix, location)
            settings[f"{prefix}.model"] = model.get("model")
            settings.update(
                _model_settings(f"{prefix}.", model.get("args"), model.get("config"), location)
            )
    return settings


def _model_settings(prefix: str, args: Any, generate: Any, location: str) -> dict[str, Any]:
    """A model's arguments and the generation settings that change its answers, named
    ``<prefix>model_args.<name>`` and ``<prefix>generate.<name>``."""
    settings = {f"{prefix}model_args.{name}": value
                for name, value in _arguments(args, f"{prefix}model_args", location).items()}
    config = _arguments(generate, f"{prefix}model_generate_config", location)
    settings.update({f"{prefix}generate.{name}": value for name, value in config.items()
                     if name not in OPERATIONAL_GENERATE})
    return settings


def _task_label(task: str, args: Mapping[str, Any]) -> str:
    """The task's name, with its arguments when the eval was given any
    (``popularity[difficulty=hard]``): a task run with other arguments is other tasks, so
    its samples never pair with the plain task's, and its runs are another candidate."""
    if not args:
        return task
    return f"{task}[{', '.join(f'{k}={kwarg_text(v)}' for k, v in sorted(args.items()))}]"


#: metadata keys that name a sample's group when the log records no grouped() metric
GROUP_KEYS = ("task_group", "group", "subject", "category")


def _group_key(header: Any, summaries: Sequence[Any]) -> str | None:
    """The metadata key of the samples' task group: a ``grouped(...)`` metric's
    ``group_key`` when a scorer records one, else the first of :data:`GROUP_KEYS` any
    sample's metadata has."""
    for scorer in header.eval.scorers or []:
        for metric in scorer.metrics or []:
            options = getattr(metric, "options", None) or {}
            if str(getattr(metric, "name", "")).endswith("grouped") and options.get("group_key"):
                return str(options["group_key"])
    present: set[str] = set()
    for s in summaries:
        present.update(s.metadata or {})
    return next((key for key in GROUP_KEYS if key in present), None)


def _group_value(metadata: Mapping[str, Any] | None, key: str, label: str) -> str | None:
    value = (metadata or {}).get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise TrialSourceError(
            f"{label}: metadata[{key!r}] (the task group) is {value!r} "
            f"({type(value).__name__}); expected text or a number"
        )
    return str(value)


def _unrun(header: Any, seen: set[tuple[str, int]]) -> list[tuple[Any, int]]:
    """The (sample id, epoch) pairs the eval planned (``dataset.sample_ids`` x epochs) that
    the log holds no sample for."""
    ids = header.eval.dataset.sample_ids
    if not ids:
        return []
    epochs = header.eval.config.epochs or 1
    return [
        (sample_id, epoch)
        for epoch in range(1, int(epochs) + 1)
        for sample_id in ids
        if (str(sample_id), epoch) not in seen
    ]


def _planned(header: Any) -> int:
    return len(header.eval.dataset.sample_ids or []) * int(header.eval.config.epochs or 1)


def _results_text(header: Any) -> str:
    """The header's own results, quoted: completed of total samples, each scorer's metrics
    (what Inspect computed from the samples the log no longer holds)."""
    results = header.results
    if results is None:
        return "no results"
    parts = [f"{results.completed_samples} of {results.total_samples} samples completed"]
    for score in results.scores or []:
        metrics = ", ".join(
            f"{name} {_number(metric.value)}" for name, metric in (score.metrics or {}).items()
        )
        parts.append(f"{score.name}: {metrics}" if metrics else str(score.name))
    return "; ".join(parts)


def _number(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else repr(value)


def _local(file: str) -> str:
    return file[len("file://") :] if file.startswith("file://") else file


def _usage(model_usage: Mapping[str, Any]) -> dict[str, Any]:
    if not model_usage:
        return {}
    usages = list(model_usage.values())
    cache = [u.input_tokens_cache_read for u in usages if u.input_tokens_cache_read is not None]
    cost = [u.total_cost for u in usages if u.total_cost is not None]
    return {
        "n_input_tokens": sum(u.input_tokens for u in usages),
        "n_output_tokens": sum(u.output_tokens for u in usages),
        "n_cache_tokens": sum(cache) if cache else None,
        "cost_usd": float(sum(cost)) if cost else None,
    }


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else "no message"


def _scores(scores: Mapping[str, Any], label: str) -> dict[str, Any]:
    """One reward per scorer, and per key of a dict-valued score (``name.key``). Two scores
    that would give one column (a scorer named ``graded.correct`` beside dict scorer
    ``graded`` with key ``correct``) are refused: one would silently replace the other."""
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, score in scores.items():
        value = score.value
        if isinstance(value, Mapping):
            items = [(f"{name}.{key}", item, f"score {name!r} key {key!r}")
                     for key, item in value.items()]
        else:
            items = [(str(name), value, f"score {name!r}")]
        for column, item, what in items:
            if column in origin:
                raise TrialSourceError(
                    f"{label}: {origin[column]} and {what} both give the reward column "
                    f"{column!r}, so one would replace the other (scorer {name!r} beside "
                    f"scorer {column.rsplit('.', 1)[0]!r}); rename one of the scorers "
                    "(@scorer(name=...)) or the dict key"
                )
            origin[column] = what
            converted = _convert(item, f"{label}: {what}")
            if converted is not None:
                out[column] = converted
    return out


def _convert(value: Any, label: str) -> bool | int | float | None:
    """A score value as a reward value by Inspect's ``value_to_float`` rules, refusing what
    those rules would turn into 0 with only a logged warning."""
    from inspect_ai.scorer import value_to_float

    if value is None:
        return None
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        try:
            finite = math.isfinite(float(value))
        except ValueError:
            finite = False
        if value in _LETTERS or value.lower() in _WORDS or finite:
            return float(value_to_float()(value))
    raise TrialSourceError(
        f"{label}: value {value!r} ({type(value).__name__}) cannot be converted to a "
        "number; expected a number, a bool, one of Inspect's grades 'C', 'I', 'P', 'N', "
        "'yes'/'no'/'true'/'false', numeric text, or a dict of those"
    )
