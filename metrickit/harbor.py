"""Harbor job folders as trial tables.

Harbor writes each run as ``jobs/<job>/`` with a job ``result.json`` and one folder per
trial holding the trial's own ``result.json`` (see ``DESIGN.md`` section 1).
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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

import numpy as np

from metrickit.errors import HarborJobError, Problem
from metrickit.rewards import INVALID, KIND_PREFIX, KINDS, NULL, _check_value, parse_rows

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
RUNNING = 4
_PROGRESS_MIN = 200
# From this many trial folders on, a second process reads half of them (it costs ~0.3 s
# to start, the time this process needs for ~2,500 trials); chunks of this many folders.
_SHARED_MIN = 2_000
_SHARED_CHUNK = 250

# Harbor 0.26 error policies whose ``has_valid_reward`` is False
# (``harbor/models/trial/error_policy.py``); any other exception type keeps the reward valid.
INVALID_REWARD_EXCEPTIONS = frozenset(
    {
        # sandbox
        "EnvironmentStartTimeoutError", "SandboxBuildFailedError", "AgentSetupTimeoutError",
        "HealthcheckError", "SandboxLikelyOutOfMemoryError", "MemoryLimitExceededError",
        "SSHAccessError", "GKEExecStreamClosedError", "GKEPodNotFoundError",
        "RuntimeRequestError", "AddTestsDirError", "DownloadVerifierDirError",
        # model provider
        "ApiError", "ApiRateLimitError", "ApiInternalServerError", "ApiOverloadedError",
        "ApiConnectionClosedError", "ApiResponseStalledError", "UnknownApiError",
        "NetworkConnectionError", "ApiConnectionError", "ApiUsageLimitError", "RateLimitError",
        "InternalServerError", "ServiceUnavailableError", "APIConnectionError", "APIError",
        "Timeout", "UnsupportedModelParametersError", "BadRequestError",
        "UnprocessableEntityError", "UnsupportedParamsError", "APIResponseValidationError",
        "BudgetExceededError", "AgentAuthenticationError", "ModelNotFoundError",
        "ApiProviderResourceNotFoundError", "AuthenticationError", "PermissionDeniedError",
        "NotFoundError",
        # verifier
        "VerifierTimeoutError", "RewardFileNotFoundError", "RewardFileEmptyError",
        "VerifierOutputParseError",
        # harbor / cancelled
        "ServiceOperationsUnsupportedError", "VercelScopeError", "DspyImportError",
        "MissingExtraError", "RegradeError", "CancelledError",
    }
)

_META = (
    "job", "eval", "agent", "agent_version", "model", "model_provider", "source",
    "task_name", "trial_name", "attempt", "_status", "has_reward", "reward_valid",
)
_TAIL = (
    "exception_type", "exception_message", "step_exception_type",
    "n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd", "n_steps",
    "started_at", "finished_at", "environment_setup_ms", "agent_setup_ms",
    "agent_execution_ms", "verifier_ms", "total_ms", "trial_dir",
)
_INT_COLUMNS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens")
_FLOAT_COLUMNS = (
    "cost_usd", "environment_setup_ms", "agent_setup_ms", "agent_execution_ms",
    "verifier_ms", "total_ms",
)
_TIME_COLUMNS = ("started_at", "finished_at")


def eval_key(agent: str, model: str | None, source: str | None) -> str:
    """Harbor's evaluation key (``JobStats.format_agent_evals_key``).

    Examples
    --------
    >>> eval_key("claude-code", "claude-sonnet-4-5", "terminal-bench")
    'claude-code__claude-sonnet-4-5__terminal-bench'
    >>> eval_key("oracle", None, None)
    'oracle__adhoc'
    """
    dataset = source or "adhoc"
    return f"{agent}__{model}__{dataset}" if model else f"{agent}__{dataset}"


# ---------------------------------------------------------------------------
# Finding jobs and trials
# ---------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


def _kind(folder: Path, *, layout: bool = False) -> str | None:
    """``"job"``, ``"trial"`` or None, from the folder's own files (and, with ``layout``,
    from which files exist when they do not parse)."""
    for name in ("result.json", "config.json"):
        obj = _load_json(folder / name)
        if isinstance(obj, dict):
            if "trial_name" in obj or "task_name" in obj or "task" in obj:
                return "trial"
            if {"stats", "n_total_trials", "jobs_dir", "job_name", "agents"} & obj.keys():
                return "job"
    if (folder / "job.log").exists():
        return "job"
    if (folder / "trial.log").exists():
        return "trial"
    if not layout:
        return None
    # Files that do not parse (a truncated result.json): tell by the layout instead.
    inner = ("result.json", "config.json", "trial.log")
    if any((sub / name).exists() for sub in _subdirs(folder) for name in inner):
        return "job"
    if any((folder / name).exists() for name in inner):
        return "trial"
    return None


def _subdirs(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.name,
    )


def _find_jobs(path: Path) -> list[Path]:
    if not path.exists():
        raise HarborJobError(f"{path}: no such folder; expected a Harbor job folder")
    if not path.is_dir():
        raise HarborJobError(
            f"{path}: is a file; expected a Harbor job folder (jobs/<job>/), a list of them, "
            "or a folder of jobs (use read_rewards for a reward .jsonl file)"
        )
    kind = _kind(path)
    if kind == "job":
        return [path]
    if kind == "trial":
        raise HarborJobError(
            f"{path}: is a single trial folder; pass the job folder that contains it "
            f"({path.parent})"
        )
    children = _subdirs(path)
    for child in children:
        kind = _kind(child, layout=True)
        if kind == "trial":
            return [path]  # a job that has not written its own files yet
        if kind == "job":
            return [c for c in children if _kind(c, layout=True) == "job"]
    raise HarborJobError(
        f"{path}: no Harbor job found (no result.json/config.json/job.log here or in its "
        "subfolders); expected jobs/<job>/ with one folder per trial"
    )


# ---------------------------------------------------------------------------
# One trial
# ---------------------------------------------------------------------------


class _Bad(Exception):
    """A field of a trial result.json that does not fit Harbor's model."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def _field(
    obj: dict[str, Any], name: str, types: tuple[type, ...], accepted: str, where: str = ""
) -> Any:
    value = obj.get(name)
    if value is None or (isinstance(value, types) and not isinstance(value, bool)):
        return value
    raise _Bad(
        f"field {where + name!r} is {value!r} ({type(value).__name__}); expected {accepted}"
    )


def _section(obj: dict[str, Any], name: str, where: str = "") -> dict[str, Any] | None:
    value = obj.get(name)
    if value is None or isinstance(value, dict):
        return value
    raise _Bad(
        f"field {where + name!r} is {value!r} ({type(value).__name__}); expected an object or null"
    )


def _time(section: dict[str, Any] | None, name: str, where: str) -> datetime | None:
    if section is None:
        return None
    value = section.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise _Bad(f"field {where + name!r} is {value!r}; expected an ISO 8601 timestamp")
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(
            f"field {where + name!r} is {value!r}; expected an ISO 8601 timestamp "
            "like '2025-01-01T00:00:00Z'"
        ) from None
    # Harbor writes trial times in UTC; a naive time from an older layout is taken as UTC.
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _ms(section: dict[str, Any] | None, where: str) -> float | None:
    start = _time(section, "started_at", where)
    end = _time(section, "finished_at", where)
    if start is None or end is None:
        return None
    return (end - start).total_seconds() * 1000.0


def _sum_ms(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _tokens(contexts: list[tuple[str, dict[str, Any]]]) -> tuple[Any, Any, Any, Any]:
    """``TrialResult.compute_token_cost_totals``: None-aware sums over the contexts."""
    totals: list[Any] = [None, None, None, None]
    names = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")
    for where, ctx in contexts:
        for i, name in enumerate(names):
            if i < 3:
                value = _field(ctx, name, (int,), "an integer or null", where)
            else:
                value = _field(ctx, name, (int, float), "a number or null", where)
            if value is not None:
                # The token columns are Int64 and cost is float64: a value that does not
                # fit would crash the frame constructor instead of naming the file.
                if i < 3 and abs(value) >= 2**63:
                    raise _Bad(f"field {where + name!r} is {value}; expected an integer < 2**63")
                if i == 3 and isinstance(value, int) and abs(value) > 2**1023:
                    raise _Bad(f"field {where + name!r} is an integer too large for a float; "
                               "expected a number or null")
                totals[i] = (totals[i] or (0.0 if i == 3 else 0)) + value
    return totals[0], totals[1], totals[2], totals[3]


def _rewards(section: dict[str, Any] | None, where: str) -> dict[str, Any] | None:
    if section is None:
        return None
    if "rewards" in section:
        rewards = section["rewards"]
        if rewards is None or isinstance(rewards, dict):
            return rewards
        raise _Bad(
            f"field {where + 'rewards'!r} is {rewards!r}; expected an object of named "
            "numbers or null"
        )
    if "reward" in section:  # early Harbor: VerifierResult(reward: float | None)
        value = section["reward"]
        return None if value is None else {"reward": value}
    return None


def _step_mean(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Harbor's default multi-step reward (``Trial._aggregate_step_rewards``)."""
    valid = [
        (s["verifier_result"].get("rewards") or {})
        for s in steps
        if isinstance(s.get("verifier_result"), dict)
    ]
    for rewards in valid:
        bad = [
            (k, v) for k, v in rewards.items()
            if isinstance(v, bool) or not isinstance(v, int | float)
            # the int test first: math.isfinite(10**400) raises OverflowError
            or (isinstance(v, int) and abs(v) > 2**53) or not math.isfinite(v)
        ] if isinstance(rewards, dict) else [("", rewards)]
        if bad:
            raise _Bad(
                f"a reward in step_results ({bad[0][0]!r}: {bad[0][1]!r}) is not a finite "
                "number; expected an object of named numbers"
            )
    keys = sorted({k for r in valid for k in r})
    if not valid or not keys:
        return None
    return {k: sum(r.get(k, 0) for r in valid) / len(valid) for k in keys}


def _exception_valid(info: dict[str, Any]) -> bool:
    policy = info.get("policy")
    if isinstance(policy, dict) and isinstance(policy.get("has_valid_reward"), bool):
        return bool(policy["has_valid_reward"])
    return info.get("exception_type") not in INVALID_REWARD_EXCEPTIONS


def _parse_trial(obj: Any, folder: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One row (without reward columns) and the trial's rewards."""
    if not isinstance(obj, dict):
        raise _Bad(f"the file holds a {type(obj).__name__}; expected a JSON object (TrialResult)")
    task_name = _field(obj, "task_name", (str,), "a string")
    if task_name is None:
        raise _Bad("field 'task_name' is missing; expected a string (is this a trial result?)")
    trial_name = _field(obj, "trial_name", (str,), "a string") or folder.name
    agent_info = _section(obj, "agent_info")
    if agent_info is None:
        raise _Bad("field 'agent_info' is missing; expected an object with 'name' and 'version'")
    agent = _field(agent_info, "name", (str,), "a string", "agent_info.")
    if agent is None:
        raise _Bad("field 'agent_info.name' is missing; expected a string")
    model_info = _section(agent_info, "model_info", "agent_info.")
    where = "agent_info.model_info."
    model = _field(model_info, "name", (str,), "a string", where) if model_info else None
    provider = _field(model_info, "provider", (str,), "a string", where) if model_info else None
    source = _field(obj, "source", (str,), "a string or null")

    steps_raw = obj.get("step_results")
    if steps_raw is not None and not isinstance(steps_raw, list):
        raise _Bad(f"field 'step_results' is {steps_raw!r}; expected a list or null")
    steps: list[dict[str, Any]] = []
    for i, step in enumerate(steps_raw or []):
        if not isinstance(step, dict):
            raise _Bad(f"field 'step_results[{i}]' is {step!r}; expected an object")
        steps.append(step)

    if "verifier_result" in obj or not steps:
        rewards = _rewards(_section(obj, "verifier_result"), "verifier_result.")
    else:  # an older multi-step layout without the trial-level reward
        rewards = _step_mean(steps)

    exc = _section(obj, "exception_info")
    step_excs = [
        e for i, s in enumerate(steps)
        if (e := _section(s, "exception_info", f"step_results[{i}]."))
    ]
    if "reward_valid" in obj and isinstance(obj["reward_valid"], bool):
        reward_valid = bool(obj["reward_valid"])
    else:
        recorded = ([exc] if exc else []) + step_excs
        reward_valid = bool(rewards) and all(_exception_valid(e) for e in recorded)

    agent_result = _section(obj, "agent_result")
    if agent_result is not None:
        contexts = [("agent_result.", agent_result)]
    else:
        contexts = [
            (f"step_results[{i}].agent_result.", ctx) for i, s in enumerate(steps)
            if (ctx := _section(s, "agent_result", f"step_results[{i}]."))
        ]
    n_in, n_cache, n_out, cost = _tokens(contexts)

    agent_ms = _ms(_section(obj, "agent_execution"), "agent_execution.")
    verifier_ms = _ms(_section(obj, "verifier"), "verifier.")
    if steps:
        if agent_ms is None:
            agent_ms = _sum_ms(
                _ms(_section(s, "agent_execution"), f"step_results[{i}].agent_execution.")
                for i, s in enumerate(steps)
            )
        if verifier_ms is None:
            verifier_ms = _sum_ms(
                _ms(_section(s, "verifier"), f"step_results[{i}].verifier.")
                for i, s in enumerate(steps)
            )
    started = _time(obj, "started_at", "")
    finished = _time(obj, "finished_at", "")
    row = {
        "eval": eval_key(agent, model, source),
        "agent": agent,
        "agent_version": _field(agent_info, "version", (str,), "a string", "agent_info."),
        "model": model,
        "model_provider": provider,
        "source": source,
        "task_name": task_name,
        "trial_name": trial_name,
        "has_reward": rewards is not None and len(rewards) > 0,
        "reward_valid": reward_valid,
        "exception_type": _field(exc, "exception_type", (str,), "a string", "exception_info.")
        if exc
        else None,
        "exception_message": _field(
            exc, "exception_message", (str,), "a string", "exception_info."
        )
        if exc
        else None,
        "step_exception_type": _field(
            step_excs[0], "exception_type", (str,), "a string", "step_results[].exception_info."
        )
        if step_excs
        else None,
        "n_input_tokens": n_in,
        "n_cache_tokens": n_cache,
        "n_output_tokens": n_out,
        "cost_usd": cost,
        "n_steps": len(steps),
        "started_at": started,
        "finished_at": finished,
        "environment_setup_ms": _ms(_section(obj, "environment_setup"), "environment_setup."),
        "agent_setup_ms": _ms(_section(obj, "agent_setup"), "agent_setup."),
        "agent_execution_ms": agent_ms,
        "verifier_ms": verifier_ms,
        "total_ms": (finished - started).total_seconds() * 1000.0
        if started is not None and finished is not None
        else None,
    }
    return row, rewards


def _empty_row(folder: Path) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys((*_META, *_TAIL))
    row.update(
        task_name=folder.name.split("__")[0],
        trial_name=folder.name,
        has_reward=False,
        reward_valid=False,
        n_steps=0,
    )
    return row


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _running_row(folder: Path, known: dict[tuple[Any, Any], dict[str, Any]]) -> dict[str, Any]:
    """A trial without result.json, described from its config.json where possible."""
    row = _empty_row(folder)
    config = _load_json(folder / "config.json")
    if not isinstance(config, dict):
        return row
    task = _dict(config.get("task"))
    agent = _dict(config.get("agent"))
    if isinstance(config.get("trial_name"), str):
        row["trial_name"] = config["trial_name"]
    name = task.get("name") or (Path(task["path"]).name if task.get("path") else None)
    if isinstance(name, str):
        row["task_name"] = name
    source = task.get("source") if isinstance(task.get("source"), str) else None
    row["source"] = source
    agent_name = agent.get("name") if isinstance(agent.get("name"), str) else None
    model_name = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    row["agent"] = agent_name
    # Finished trials of the same agent config tell how Harbor parsed the model name.
    same = known.get((agent_name, model_name))
    if same is not None:
        row.update(same)
    elif model_name:
        row["model"] = model_name
    if agent_name:
        row["eval"] = eval_key(agent_name, row["model"], source)
    return row


@dataclass
class _Trial:
    folder: Path
    row: dict[str, Any]
    rewards: dict[str, Any] | None
    status: int  # NULL / RUNNING / INVALID, refined from the rewards later
    problem: Problem | None = None
    config_agent: tuple[Any, Any] | None = None


def _read_trial(folder: Path) -> _Trial:
    path = folder / "result.json"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return _Trial(folder, _empty_row(folder), None, RUNNING)
    except OSError as exc:
        return _bad_trial(folder, path, f"cannot be read ({exc.strerror})")
    if not raw.strip():
        return _bad_trial(
            folder, path, "is empty; expected a Harbor TrialResult (Harbor may still be writing it)"
        )
    try:
        obj = json.loads(raw)
    except UnicodeDecodeError as exc:
        return _bad_trial(folder, path, f"is not UTF-8 ({exc.reason}); expected UTF-8 JSON")
    except json.JSONDecodeError as exc:
        return _bad_trial(
            folder,
            path,
            f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); the file "
            "may be truncated. Expected a Harbor TrialResult",
            exc.lineno,
        )
    except RecursionError:
        return _bad_trial(folder, path, "is nested too deeply to read; expected a TrialResult")
    except ValueError as exc:  # an integer literal past sys.get_int_max_str_digits()
        return _bad_trial(folder, path, f"cannot be read ({exc}); expected a TrialResult")
    if b"\\u" in raw and not _is_utf8(obj):
        return _bad_trial(
            folder, path, "holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its "
            "pair), which is not valid Unicode; expected UTF-8 text"
        )
    try:
        row, rewards = _parse_trial(obj, folder)
    except _Bad as exc:
        return _bad_trial(folder, path, str(exc), exc.line)
    # A bad reward value is a bad trial file too, so errors="report" keeps the other trials.
    for key, value in (rewards or {}).items():
        reason = _check_value(key, value)
        if isinstance(reason, str):
            return _bad_trial(folder, path, f"verifier_result.rewards: {reason}")
    agent_cfg = _dict(_dict(obj.get("config")).get("agent"))
    model_name = agent_cfg.get("model_name")  # a dict key later: a list here must not crash
    return _Trial(
        folder, row, rewards, NULL,
        config_agent=(row["agent"], model_name if isinstance(model_name, str) else None),
    )


def _is_utf8(obj: Any) -> bool:
    """Whether every string in a parsed JSON value can be written as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _bad_trial(folder: Path, path: Path, message: str, line: int = 0) -> _Trial:
    row = _empty_row(folder)
    return _Trial(folder, row, None, INVALID, problem=Problem(str(path), line, message))


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
    workers: int | None = ...,
) -> Any: ...
@overload
def read_harbor_job(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = ...,
    errors: Literal["report"],
    progress: bool | None = ...,
    workers: int | None = ...,
) -> tuple[Any, list[Problem]]: ...


def read_harbor_job(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = "pandas",
    errors: Literal["raise", "report"] = "raise",
    progress: bool | None = None,
    workers: int | None = None,
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
    workers
        ``1``: read every trial in this process. ``2``: share the folders with a second
        process (``python -m metrickit._harbor_worker``), using two cores. None
        (default): 2 from 2,000 trial folders on when the machine has two cores. The
        result is the same either way; if the second process fails, this one reads its
        share and a ``RuntimeWarning`` says so.

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
    if workers not in (None, 1, 2):
        raise ValueError(f"workers={workers!r}; expected 1, 2 or None (automatic)")
    helper = None
    # Entries of the job folders bound the trial count; listing names is cheap next to
    # the stat calls _subdirs makes, so the worker starts while those run.
    if workers == 2 or (
        workers is None
        and (os.cpu_count() or 1) >= 2
        and sum(len(os.listdir(job)) for job in jobs) >= _SHARED_MIN
    ):
        from metrickit import _harbor_worker

        helper = _harbor_worker.start()
    folders = [(job, trial) for job in jobs for trial in _subdirs(job)]
    trials = _read_all([f for _, f in folders], progress, workers, helper)
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


def _read_all(
    folders: list[Path], progress: bool | None, workers: int | None, helper: Any = None
) -> list[_Trial]:
    """Every trial folder read, in order: here, or shared with a second process.

    json parsing and validation hold the GIL (a thread pool measured slower than one
    thread), so the second core is used by a worker process
    (:mod:`metrickit._harbor_worker`, started as ``helper``) when there are enough
    trials to pay for starting it.
    """
    from metrickit import _harbor_worker

    if workers is None:
        workers = 2 if len(folders) >= _SHARED_MIN and (os.cpu_count() or 1) >= 2 else 1
    if workers not in (1, 2):
        raise ValueError(f"workers={workers!r}; expected 1, 2 or None (automatic)")
    if workers == 1:
        _harbor_worker.cancel(helper)
    show = progress if progress is not None else len(folders) >= _PROGRESS_MIN
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(folders), desc="reading trials", unit="trial")
    try:
        if workers == 1:
            out = []
            for folder in folders:
                out.append(_read_trial(folder))
                if bar is not None:
                    bar.update(1)
            return out
        chunks = [folders[i : i + _SHARED_CHUNK] for i in range(0, len(folders), _SHARED_CHUNK)]
        parts = _harbor_worker.read_shared(
            chunks,
            lambda chunk: [_read_trial(f) for f in chunk],
            on_progress=bar.update if bar is not None else None,
            worker=helper,
        )
        return [t for part in parts for t in part]
    finally:
        if bar is not None:
            bar.close()


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
            data[name] = pd.array(columns[name], dtype="string")
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
            data[name] = pd.array(col, dtype="string")
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
            series[name] = pl.Series(name, columns[name], dtype=pl.String)
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
            series[name] = pl.Series(name, col, dtype=pl.String)
    return pl.DataFrame(series)


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
    from metrickit.aggregate import aggregate, group_indices

    rows = _rows_for_policy(trials, policy)
    out = aggregate(rows, metric, by=by) if len(rows) else {}
    # Evaluations with no counted trial: Harbor's "metrics": [] (listed, not dropped).
    for label in group_indices(trials, by):
        out.setdefault(label, {})
    return {label: out[label] for label in group_indices(trials, by)}


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

    from metrickit.passk import PassAtKSkipped, pass_at_k
    from metrickit.rewards import reward_keys
    from metrickit.stats import mean_ci

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
    for label, idx in _groups(trials):
        sub = trials.iloc[idx]
        running = int((sub["_status"].astype(str) == "running").sum())
        done = sub[sub["_status"].astype(str) != "running"]
        lines.append("")
        lines.append(f"{label}")
        lines.append(
            f"  trials: {len(done)} finished, {running} running; tasks: "
            f"{done['task_name'].nunique()}; with reward: {int(done['has_reward'].sum())}"
        )
        several = len(done) > done["task_name"].nunique() and done["task_name"].nunique() > 1
        for key in keys:
            present = done[KIND_PREFIX + key].astype(str) != "missing"
            if not present.any() or len(done) == 0:
                continue
            values = done[key].to_numpy(dtype=float)
            if several:
                ci = mean_ci(values, method="cluster", clusters=done["task_name"].to_numpy())
            else:
                ci = mean_ci(values)
            spread = "" if math.isnan(ci.half_width) else f" ± {ci.half_width:.4f}"
            lines.append(f"  {key}: mean {ci.estimate:.4f}{spread} (95% CI, {ci.method}, n={ci.n})")
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
    from metrickit.aggregate import group_indices

    return list(group_indices(trials, "eval").items())

