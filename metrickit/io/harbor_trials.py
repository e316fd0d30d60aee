"""Reading one Harbor trial folder (``result.json``) into a row, with Harbor's validation.

:mod:`metrickit.io.harbor` builds the frame from these rows; this module holds the per-trial
work alone and needs neither numpy nor a data-frame library.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from metrickit._core.identity import canonical_kwargs
from metrickit._core.schema import LEADING_COLUMNS, TRAILING_COLUMNS, eval_key
from metrickit._core.values import INVALID, NULL, check_value
from metrickit.errors import HarborJobError, Problem

RUNNING = 4

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





# ---------------------------------------------------------------------------
# Finding jobs and trials
# ---------------------------------------------------------------------------


def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


def _kind(folder: Path, *, layout: bool = False) -> str | None:
    """``"job"``, ``"trial"`` or None, from the folder's own files (and, with ``layout``,
    from which files exist when they do not parse)."""
    for name in ("result.json", "config.json"):
        obj = load_json(folder / name)
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
    if any((sub / name).exists() for sub in subdirs(folder) for name in inner):
        return "job"
    if any((folder / name).exists() for name in inner):
        return "trial"
    return None


def subdirs(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")),
        key=lambda p: p.name,
    )


@dataclass(frozen=True)
class JobInfo:
    """What a job folder records about its run, beside its trials."""

    #: the job's ``job_name`` (its ``config.json``), else the folder's name
    name: str
    #: dataset name (a trial's ``source``) -> the version or ref the job's ``datasets``
    #: give it; a local dataset (``path``) has none
    dataset_versions: dict[str, str]
    #: ``harbor.version`` from the job's ``lock.json`` (Harbor >= 0.18 writes one)
    harness_version: str | None


def job_info(job: Path) -> JobInfo:
    """The run-level facts of one job folder: its name, dataset versions, Harbor version.

    A ``config.json`` or ``lock.json`` that is missing or not JSON records nothing (a job
    Harbor is still starting); one that is JSON with a field of the wrong type raises
    :class:`~metrickit.errors.HarborJobError` naming the file, the field and the value.
    """
    config = load_json(job / "config.json")
    name = job.name
    versions: dict[str, str] = {}
    if isinstance(config, dict):
        where = job / "config.json"
        recorded = config.get("job_name")
        if recorded is not None and not isinstance(recorded, str):
            raise _job_error(where, "job_name", recorded, "a string")
        name = recorded or name
        datasets = config.get("datasets")
        if datasets is not None and not isinstance(datasets, list):
            raise _job_error(where, "datasets", datasets, "a list of dataset configs")
        for i, entry in enumerate(datasets or []):
            if not isinstance(entry, dict):
                raise _job_error(where, f"datasets[{i}]", entry, "an object")
            dataset = entry.get("name")
            if dataset is None and isinstance(entry.get("path"), str):
                dataset = Path(entry["path"]).name  # a local dataset: its folder's name
            # Harbor's registry datasets carry a ``version`` (older) or a ``ref`` (newer)
            version = entry.get("version") if entry.get("version") is not None else entry.get("ref")
            for field_name, value in (("name", dataset), ("version", version)):
                if value is not None and not isinstance(value, str | int | float):
                    raise _job_error(where, f"datasets[{i}].{field_name}", value, "a string")
            if dataset is not None and version is not None:
                versions[str(dataset)] = str(version)
    lock = load_json(job / "lock.json")
    harness = None
    if isinstance(lock, dict) and lock.get("harbor") is not None:
        harbor = lock["harbor"]
        if not isinstance(harbor, dict):
            raise _job_error(job / "lock.json", "harbor", harbor, "an object")
        harness = harbor.get("version")
        if harness is not None and not isinstance(harness, str):
            raise _job_error(job / "lock.json", "harbor.version", harness, "a string")
    return JobInfo(name, versions, harness)


def _job_error(file: Path, name: str, value: Any, expected: str) -> HarborJobError:
    shown = repr(value)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return HarborJobError(
        f"{file}: field {name!r} is {shown} ({type(value).__name__}); expected {expected}"
    )


def run_names(jobs: list[Path], names: list[str]) -> list[str]:
    """One ``run`` per job folder: its name, unless another folder given has the same
    name (two copies of one job, six jobs all called ``job``): then
    ``<parent folder>/<name>``, and the whole path where even that repeats. Two job
    folders are never merged into one run."""
    runs = list(names)
    for widen in (lambda job, name: f"{job.parent.name}/{name}", lambda job, _: str(job)):
        counts: dict[str, int] = {}
        for run in runs:
            counts[run] = counts.get(run, 0) + 1
        if all(c == 1 for c in counts.values()):
            break
        runs = [widen(job, run_name) if counts[run] > 1 else run
                for job, run, run_name in zip(jobs, runs, names, strict=True)]
    return runs


def find_jobs(path: Path) -> list[Path]:
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
    children = subdirs(path)
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
    kwargs = _agent_kwargs(obj)

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
        "agent_kwargs": canonical_kwargs(kwargs),
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


def _agent_kwargs(obj: dict[str, Any]) -> dict[str, Any] | None:
    """``config.agent.kwargs`` of a TrialResult: the agent's own settings (``--ak``), part
    of what a candidate is. Older layouts without ``config`` record none."""
    config = obj.get("config")
    agent = config.get("agent") if isinstance(config, dict) else None
    if not isinstance(agent, dict):
        return None
    kwargs = agent.get("kwargs")
    if kwargs is None or isinstance(kwargs, dict):
        return kwargs
    raise _Bad(
        f"field 'config.agent.kwargs' is {kwargs!r} ({type(kwargs).__name__}); expected an "
        "object of the agent's keyword arguments or null"
    )


def _empty_row(folder: Path) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys((*LEADING_COLUMNS, *TRAILING_COLUMNS))
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


def running_row(folder: Path, known: dict[tuple[Any, Any], dict[str, Any]]) -> dict[str, Any]:
    """A trial without result.json, described from its config.json where possible."""
    row = _empty_row(folder)
    config = load_json(folder / "config.json")
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
    # the trial's own config.json holds the same agent kwargs its result.json will
    kwargs = agent.get("kwargs")
    row["agent_kwargs"] = canonical_kwargs(kwargs) if isinstance(kwargs, dict) else None
    agent_name = agent.get("name") if isinstance(agent.get("name"), str) else None
    model_name = agent.get("model_name") if isinstance(agent.get("model_name"), str) else None
    row["agent"] = agent_name
    # Finished trials of the same agent config tell how Harbor parsed the model name.
    same = known.get((agent_name, model_name))
    if same is not None:
        row.update(same)
    elif model_name:
        # Harbor records "provider/model" as model_info {name, provider}: split it the
        # same way, so the running trial's configuration is the finished trials' one
        provider, sep, name = model_name.partition("/")
        row["model"], row["model_provider"] = (name, provider) if sep and name else (
            model_name, None)
    if agent_name:
        row["eval"] = eval_key(agent_name, row["model"], source)
    return row


@dataclass
class TrialRecord:
    folder: Path
    row: dict[str, Any]
    rewards: dict[str, Any] | None
    status: int  # NULL / RUNNING / INVALID, refined from the rewards later
    problem: Problem | None = None
    config_agent: tuple[Any, Any] | None = None


def read_trial(folder: Path) -> TrialRecord:
    path = folder / "result.json"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return TrialRecord(folder, _empty_row(folder), None, RUNNING)
    except OSError as exc:
        return _bad_trial(folder, path, f"cannot be read ({exc.strerror})")
    if not raw.strip():
        return _bad_trial(
            folder, path, "is empty; expected a Harbor TrialResult (Harbor may still be writing it)"
        )
    try:
        obj = _on_fresh_stack(json.loads, raw)
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
    try:
        lone_surrogate = b"\\u" in raw and not _on_fresh_stack(_is_utf8, obj)
    except RecursionError:
        return _bad_trial(folder, path, "is nested too deeply to read; expected a TrialResult")
    if lone_surrogate:
        return _bad_trial(
            folder, path, "holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its "
            "pair), which is not valid Unicode; expected UTF-8 text"
        )
    try:
        row, rewards = _parse_trial(obj, folder)
    except _Bad as exc:
        return _bad_trial(folder, path, str(exc), exc.line or _field_line(raw, str(exc)))
    # A bad reward value is a bad trial file too, so errors="report" keeps the other trials.
    for key, value in (rewards or {}).items():
        reason = check_value(key, value)
        if isinstance(reason, str):
            where = _key_line(raw, key) if _key_line(raw, "rewards") else 0
            return _bad_trial(folder, path, f"verifier_result.rewards: {reason}", where)
    agent_cfg = _dict(_dict(obj.get("config")).get("agent"))
    model_name = agent_cfg.get("model_name")  # a dict key later: a list here must not crash
    return TrialRecord(
        folder, row, rewards, NULL,
        config_agent=(row["agent"], model_name if isinstance(model_name, str) else None),
    )


def _on_fresh_stack(fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)``, and if it runs out of stack, once more on a new thread's empty stack.

    How deep ``json`` may nest depends on how deep the caller's stack already is, so a
    file near the limit could read in one call and fail in another. Retrying from an
    empty stack makes the answer depend on the file and the recursion limit alone.
    """
    try:
        return fn(arg)
    except RecursionError:
        pass
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn(arg)
        except BaseException as exc:  # re-raised in the caller's thread below
            out["error"] = exc

    thread = threading.Thread(target=run, name="metrickit-fresh-stack")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _is_utf8(obj: Any) -> bool:
    """Whether every string in a parsed JSON value can be written as UTF-8."""
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_FIELD = re.compile(r"^field '([^']+)'")


def _key_line(raw: bytes, key: str) -> int:
    """The line of ``"key":`` in the file when it occurs exactly once, else 0 (unknown:
    better no line than a wrong one). Both spellings of a non-ASCII key count, and a
    match must start a key (after ``{``, ``,`` or whitespace), not sit inside a string."""
    spellings = {json.dumps(key).encode(), json.dumps(key, ensure_ascii=False).encode()}
    starts: list[int] = []
    for spelling in spellings:
        pattern = re.compile(rb"(?<=[{,\s])" + re.escape(spelling) + rb"\s*:")
        starts += [m.start() for m in pattern.finditer(raw)]
        if len(starts) > 1:
            return 0
    if len(starts) != 1:
        return 0
    return raw.count(b"\n", 0, starts[0]) + 1


def _field_line(raw: bytes, message: str) -> int:
    """The line of the field a ``field '<path>' ...`` message names (see :func:`_key_line`)."""
    match = _FIELD.match(message)
    if match is None or "is missing" in message:
        return 0
    last = match.group(1).rsplit(".", 1)[-1]
    if not last or last.endswith("]"):
        return 0  # a list element: its key's line is not the element's
    return _key_line(raw, last)


def _bad_trial(folder: Path, path: Path, message: str, line: int = 0) -> TrialRecord:
    row = _empty_row(folder)
    return TrialRecord(folder, row, None, INVALID, problem=Problem(str(path), line, message))
