"""Write the sample Harbor job folders in ``data/harbor_jobs/`` (seeded, deterministic).

Usage::

    python data/make_harbor_jobs.py            # writes data/harbor_jobs/
    python data/make_harbor_jobs.py -o /tmp/x  # somewhere else

Two jobs, in the exact layout and JSON serialization Harbor writes (``result.json`` files
are what ``TrialResult/JobResult.model_dump_json(indent=4)`` produces;
``tests/io/test_harbor.py`` checks them field by field against Harbor's own models when
Harbor is importable):

``2025-06-02__10-00-00`` (Harbor 0.25, finished)
    one agent (terminus-2 with anthropic/claude-sonnet-4-5) on 6 tasks of the dataset
    ``terminal-bench-mini``, 4 attempts each (24 trials), reward ``verifier/reward.txt``
    (0 or 1). Exceptions: two ``AgentTimeoutError`` and one ``NonZeroAgentExitCodeError``
    that still have a reward, and one ``EnvironmentStartTimeoutError`` without any.
    The job ``result.json`` holds Harbor 0.25's metrics ({"mean": 0.5}) and pass@2/pass@4.

``2025-06-03__14-30-00`` (Harbor 0.26, still running)
    two agents (claude-code with anthropic/claude-sonnet-4-5, codex with openai/gpt-5) on 5
    tasks of ``webapp-tasks``, 2 attempts each (20 trials), multi-dimensional rewards in
    ``verifier/reward.json`` (``correctness`` as a JSON integer 0/1, ``style`` in quarters).
    ``deploy-pipeline`` is a two-step task (``step_results``, reward = mean over steps);
    one of its trials has a ``VerifierTimeoutError`` in its second step. One codex trial is
    still running (its folder has ``config.json`` but no ``result.json``), one hit an
    ``ApiRateLimitError`` (graded, but Harbor 0.26 says the reward is not valid) and one a
    ``SandboxBuildFailedError`` (no reward). The job ``result.json`` is the live one Harbor
    0.26 writes while running: metrics over the valid rewards of finished trials, no pass@k yet.

Reward values are 0/1 and multiples of 1/8, so every sum is exact and the stored metrics
do not depend on the Python version or the order of trials.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import shutil
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 20250602
ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"  # ShortUUID's

# Harbor 0.26 error policies (should_retry, should_grade, has_valid_reward) of the types used.
POLICY_026 = {
    "AgentTimeoutError": (False, True, True),
    "NonZeroAgentExitCodeError": (False, True, True),
    "ApiRateLimitError": (True, True, False),
    "SandboxBuildFailedError": (True, False, False),
    "EnvironmentStartTimeoutError": (True, False, False),
    "VerifierTimeoutError": (False, True, False),
}
MESSAGES = {
    "AgentTimeoutError": "Agent execution timed out after 900.0 seconds",
    "NonZeroAgentExitCodeError": "Agent exited with non-zero exit code 1",
    "ApiRateLimitError": "Rate limit exceeded for model gpt-5 (429)",
    "SandboxBuildFailedError": "Docker build failed: step 7/9 exited with code 100",
    "EnvironmentStartTimeoutError": "Environment did not start within 600.0 seconds",
    "VerifierTimeoutError": "Verifier timed out after 300.0 seconds",
}


def ts(dt: datetime | None, *, utc: bool = True) -> str | None:
    """A datetime as pydantic serializes it (``Z`` for UTC, microseconds only if non-zero)."""
    if dt is None:
        return None
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond:
        text += f".{dt.microsecond:06d}"
    return text + ("Z" if utc else "")


def dump(obj: Any) -> str:
    """Harbor's ``model_dump_json(indent=4)`` for plain JSON data: same layout and floats."""
    return json.dumps(obj, indent=4, ensure_ascii=False)


class Maker:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def trial_name(self, task: str) -> str:
        return f"{task[:32].rstrip('_-')}__" + "".join(self.rng.choice(ALPHABET) for _ in range(7))

    def stamp(self, start: datetime, seconds: float) -> datetime:
        return start + timedelta(seconds=seconds, microseconds=self.rng.randrange(1_000_000))

    def usage(self, scale: float = 1.0) -> dict[str, Any]:
        n_in = int(self.rng.randrange(20_000, 400_000) * scale)
        return {
            "n_input_tokens": n_in,
            "n_cache_tokens": int(n_in * self.rng.uniform(0.4, 0.8)),
            "n_output_tokens": int(self.rng.randrange(2_000, 30_000) * scale),
            "cost_usd": round(self.rng.uniform(0.02, 0.9) * scale, 4),
            "model_usage": None,
            "rollout_details": None,
            "metadata": None,
        }


def exception(kind: str, at: datetime, version: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "exception_type": kind,
        "exception_message": MESSAGES[kind],
        "exception_traceback": (
            "Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/site-packages/harbor/trial/trial.py", '
            "line 412, in run\n    await self._run()\n"
            f"harbor.trial.errors.{kind}: {MESSAGES[kind]}\n"
        ),
        "occurred_at": ts(at),
    }
    if version == "0.26":
        retry, grade, valid = POLICY_026[kind]
        info["policy"] = {"should_retry": retry, "should_grade": grade, "has_valid_reward": valid}
    return info


def trial_config(
    version: str, task_path: str, source: str, name: str, job: str, agent: str, model: str,
    job_id: str,
) -> dict[str, Any]:
    """The full ``TrialConfig`` dump (as inside ``result.json``)."""
    config: dict[str, Any] = {}
    if version == "0.26":
        config["schema_version"] = 1
    config.update(
        {
            "task": {
                "path": task_path, "git_url": None, "git_commit_id": None, "name": None,
                "ref": None, "overwrite": False, "download_dir": None, "source": source,
            },
            "trial_name": name,
            "trials_dir": f"jobs/{job}",
            "install_only": False,
            "timeout_multiplier": 1.0,
            "agent_timeout_multiplier": None,
            "verifier_timeout_multiplier": None,
            "agent_setup_timeout_multiplier": None,
            "environment_build_timeout_multiplier": None,
            "agent": {
                "name": agent, "import_path": None, "model_name": model, "base_url": None,
                "model_api_key_name": None, "model_api_format": None,
                "skip_model_parsing": False, "n_concurrent": None, "concurrency_group": None,
                "skills": [], "override_timeout_sec": None, "override_setup_timeout_sec": None,
                "max_timeout_sec": None, "resume_trajectory": False, "load_trajectory": None,
                "extra_allowed_hosts": [], "kwargs": {}, "mcp_servers": [],
            },
            "user_agent": None,
            "environment": {
                "type": "docker", "import_path": None, "force_build": False, "delete": True,
                "stream": False, "cpu_enforcement_policy": "auto",
                "memory_enforcement_policy": "auto", "override_cpus": None,
                "override_memory_mb": None, "override_storage_mb": None, "override_gpus": None,
                "override_tpu": None, "mounts": None, "extra_docker_compose": [], "kwargs": {},
                "extra_allowed_hosts": [],
            },
            "verifier": {"override_timeout_sec": None, "max_timeout_sec": None, "disable": False},
        }
    )
    if version == "0.26":
        config["override_error_policy"] = {}
    config.update(
        {
            "artifacts": [],
            "extra_instruction_paths": [],
            "extra_instructions": [],
            "job_id": job_id,
            "source_trial": None,
        }
    )
    return config


def config_on_disk(version: str, config: dict[str, Any]) -> dict[str, Any]:
    """``config.json``: 0.25 writes ``exclude_defaults=True``, 0.26 the full dump."""
    if version == "0.26":
        return config
    return {
        "task": {"path": config["task"]["path"], "source": config["task"]["source"]},
        "trial_name": config["trial_name"],
        "trials_dir": config["trials_dir"],
        "agent": {"name": config["agent"]["name"], "model_name": config["agent"]["model_name"]},
        "job_id": config["job_id"],
    }


def timing(start: datetime, end: datetime) -> dict[str, Any]:
    return {"started_at": ts(start), "finished_at": ts(end)}


class Job:
    """Collects trials and writes the job folder plus Harbor's job ``result.json``."""

    def __init__(self, root: Path, name: str, version: str, maker: Maker, start: datetime) -> None:
        self.dir = root / name
        self.name = name
        self.version = version
        self.mk = maker
        self.start = start
        self.id = maker.uuid()
        self.results: list[dict[str, Any]] = []
        self.n_total = 0
        self.n_running = 0

    def add_trial(
        self,
        *,
        task: str,
        source: str,
        agent: tuple[str, str, str, str],  # name, version, model string, provider
        offset: float,
        reward: dict[str, Any] | None,
        reward_file: str,
        error: str | None = None,
        steps: list[dict[str, Any]] | None = None,
        running: bool = False,
        started: datetime | None = None,
        agent_seconds: float | None = None,
        usage: dict[str, Any] | None = None,
    ) -> datetime:
        """Write one trial folder; returns when the trial finished (or started, if running).

        ``started``, ``agent_seconds`` and ``usage`` replace the random start offset, agent
        run time and token usage (the large job models them per agent and task).
        """
        mk = self.mk
        self.n_total += 1
        agent_name, agent_version, model_string, provider = agent
        name = mk.trial_name(task)
        task_path = f"datasets/{source}/{task}"
        config = trial_config(
            self.version, task_path, source, name, self.name, agent_name, model_string, self.id
        )
        folder = self.dir / name
        (folder / "agent").mkdir(parents=True)
        (folder / "config.json").write_text(dump(config_on_disk(self.version, config)))
        if started is None:
            started = mk.stamp(self.start, offset)
        log = [f"{ts(started)} Trial {name} started (task {task}, agent {agent_name})"]
        if running:
            self.n_running += 1
            (folder / "agent" / "trajectory.jsonl").write_text('{"step": 1, "role": "agent"}\n')
            (folder / "trial.log").write_text("\n".join(log) + "\n")
            return started
        env_end = mk.stamp(started, mk.rng.uniform(8, 40))
        no_agent = error in ("EnvironmentStartTimeoutError", "SandboxBuildFailedError")
        setup_end = None if no_agent else mk.stamp(env_end, mk.rng.uniform(15, 45))
        result: dict[str, Any] = {}
        if self.version == "0.26":
            result["schema_version"] = 1
        result.update(
            {
                "id": mk.uuid(),
                "task_name": task,
                "trial_name": name,
                "trial_uri": f"file:///home/eval/jobs/{self.name}/{name}",
                "task_id": {"path": task_path},
                "source": source,
                "task_checksum": hashlib.sha256(task.encode()).hexdigest(),
                "config": config,
                "agent_info": {
                    "name": agent_name,
                    "version": agent_version,
                    "model_info": {"name": model_string.split("/", 1)[1], "provider": provider},
                },
            }
        )
        exc_info = None
        if no_agent:
            assert error is not None
            finished = env_end
            exc_info = exception(error, env_end, self.version)
            result.update(
                agent_result=None, verifier_result=None, verifier_environment_mode=None,
                exception_info=exc_info, started_at=ts(started), finished_at=ts(finished),
                environment_setup=timing(started, env_end), agent_setup=None,
                agent_execution=None, verifier=None, step_results=None,
            )
        elif steps is None:
            assert setup_end is not None
            seconds = mk.rng.uniform(60, 900) if agent_seconds is None else agent_seconds
            agent_end = mk.stamp(setup_end, seconds)
            verifier_end = mk.stamp(agent_end, mk.rng.uniform(10, 60))
            finished = mk.stamp(verifier_end, 1)
            if error is not None:
                exc_info = exception(error, agent_end, self.version)
            result.update(
                agent_result=mk.usage() if usage is None else usage,
                verifier_result={"rewards": reward},
                verifier_environment_mode="shared",
                exception_info=exc_info,
                started_at=ts(started),
                finished_at=ts(finished),
                environment_setup=timing(started, env_end),
                agent_setup=timing(env_end, setup_end),
                agent_execution=timing(setup_end, agent_end),
                verifier=timing(agent_end, verifier_end),
                step_results=None,
            )
            self.write_reward(folder / "verifier", reward, reward_file)
        else:
            assert setup_end is not None
            at = setup_end
            step_results = []
            for step in steps:
                agent_end = mk.stamp(at, mk.rng.uniform(60, 400))
                verifier_end = mk.stamp(agent_end, mk.rng.uniform(10, 60))
                step_exc = None
                if step.get("error"):
                    step_exc = exception(step["error"], verifier_end, self.version)
                step_results.append(
                    {
                        "step_name": step["name"],
                        "agent_result": mk.usage(0.5),
                        "verifier_result": None
                        if step["reward"] is None
                        else {"rewards": step["reward"]},
                        "exception_info": step_exc,
                        "agent_execution": timing(at, agent_end),
                        "verifier": timing(agent_end, verifier_end),
                    }
                )
                step_dir = folder / "steps" / step["name"] / "verifier"
                step_dir.mkdir(parents=True)
                if step["reward"] is not None:
                    self.write_reward(step_dir, step["reward"], reward_file)
                at = verifier_end
            finished = mk.stamp(at, 1)
            result.update(
                agent_result=None, verifier_result={"rewards": reward},
                verifier_environment_mode=None, exception_info=None,
                started_at=ts(started), finished_at=ts(finished),
                environment_setup=timing(started, env_end),
                agent_setup=timing(env_end, setup_end),
                agent_execution=None, verifier=None, step_results=step_results,
            )
            (folder / "agent").rmdir()  # Harbor removes empty root dirs of multi-step trials
        if self.version == "0.26":
            result["reward_valid"] = reward_valid(result)
        (folder / "result.json").write_text(dump(result))
        if exc_info is not None:
            (folder / "exception.txt").write_text(exc_info["exception_traceback"])
        log.append(f"{ts(finished)} Trial {name} finished")
        (folder / "trial.log").write_text("\n".join(log) + "\n")
        self.results.append(result)
        return finished

    @staticmethod
    def write_reward(folder: Path, reward: dict[str, Any] | None, kind: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if reward is None:
            return
        if kind == "txt":
            (folder / "reward.txt").write_text(f"{int(reward['reward'])}\n")
        else:
            (folder / "reward.json").write_text(json.dumps(reward) + "\n")
        (folder / "test-stdout.txt").write_text("collected 6 items\n\n...... done\n")

    def write(
        self, *, finished: bool, config: dict[str, Any], n_retries: int = 0,
        log: list[str] | None = None,
    ) -> None:
        """Job files. Stats follow Harbor's ``JobStats.increment`` and metric rules."""
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "config.json").write_text(dump(config))
        (self.dir / "job.log").write_text("".join(
            line + "\n" for line in [f"Starting job {self.name}", *(log or [])]))
        # Harbor's final stats follow trial order; live stats completion order.
        key = "started_at" if finished else "finished_at"
        trials = sorted(self.results, key=lambda r: r[key])
        stats = job_stats(trials, self.version, final=finished)
        last = max(datetime.fromisoformat(r["finished_at"][:-1]) for r in trials)
        stats["n_running_trials"] = self.n_running
        stats["n_retries"] = n_retries
        stats["n_pending_trials"] = max(self.n_total - len(trials) - self.n_running, 0)
        job: dict[str, Any] = {}
        if self.version == "0.26":
            job["schema_version"] = 1
        job.update(
            {
                "id": self.id,
                # Harbor stamps the job itself with naive local times.
                "started_at": ts(self.start, utc=False),
                "updated_at": ts(last, utc=False),
                "finished_at": ts(last + timedelta(seconds=2), utc=False) if finished else None,
                "n_total_trials": self.n_total,
                "stats": stats,
            }
        )
        (self.dir / "result.json").write_text(dump(job))


def eval_key(result: dict[str, Any]) -> str:
    info = result["agent_info"]
    model = info["model_info"]["name"] if info["model_info"] else None
    source = result["source"] or "adhoc"
    return f"{info['name']}__{model}__{source}" if model else f"{info['name']}__{source}"


def recorded(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = [result["exception_info"]] if result["exception_info"] else []
    out += [s["exception_info"] for s in result["step_results"] or [] if s["exception_info"]]
    return out


def reward_valid(result: dict[str, Any]) -> bool:
    vr = result["verifier_result"]
    if vr is None or not vr["rewards"]:
        return False
    return all(POLICY_026[e["exception_type"]][2] for e in recorded(result))


def mean_metric(rewards: list[dict[str, Any] | None]) -> dict[str, Any]:
    """``harbor.metrics.mean.Mean().compute`` (exact here: every value is a multiple of 1/8)."""
    keys = sorted({k for r in rewards if r is not None for k in r})
    if len(keys) <= 1:
        values = [0 if r is None else next(iter(r.values()), 0) for r in rewards]
        return {"mean": sum(values) / len(values)}
    return {k: sum(0 if r is None else r.get(k, 0) for r in rewards) / len(rewards) for k in keys}


def sum312(values: list[float]) -> float:
    """``sum(values)`` of floats as Python >= 3.12 (the Python Harbor needs) computes it:
    Neumaier-compensated, so it can differ from 3.11's plain sum in the last bit."""
    total, compensation = 0.0, 0.0
    for x in values:
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    if compensation and math.isfinite(compensation):
        total += compensation
    return total


def pass_at_k(trials: list[dict[str, Any]]) -> dict[str, float]:
    """0.25's ``_compute_pass_at_k_for_trials`` for one evaluation."""
    per_task: dict[str, list[int]] = {}
    for t in trials:
        rewards = t["verifier_result"]["rewards"] if t["verifier_result"] else None
        if rewards is None:
            per_task.setdefault(t["task_name"], []).append(0)
            continue
        value = next(iter(rewards.values())) if len(rewards) == 1 else None
        if value not in (0, 1):
            return {}
        per_task.setdefault(t["task_name"], []).append(int(value))
    n_min = min(len(v) for v in per_task.values())
    ks = sorted({2**i for i in range(1, 10) if 2**i <= n_min} | set(range(5, n_min + 1, 5)))
    out = {}
    for k in ks:
        vals = []
        for v in per_task.values():
            n, c = len(v), sum(v)
            if n - c < k:
                vals.append(1.0)
                continue
            product = 1.0
            for i in range(k):
                product *= (n - c - i) / (n - i)
            vals.append(1.0 - product)
        out[str(k)] = sum312(vals) / len(vals)
    return out


def job_stats(trials: list[dict[str, Any]], version: str, *, final: bool) -> dict[str, Any]:
    evals: dict[str, dict[str, Any]] = {}
    totals: list[Any] = [None, None, None, None]
    n_errored = 0
    for t in trials:
        e = evals.setdefault(
            eval_key(t),
            {"n_trials": 0, "n_errors": 0, "metrics": [], "pass_at_k": {}, "reward_stats": {},
             "exception_stats": {}, "_rewards": [], "_trials": []},
        )
        e["_trials"].append(t)
        vr = t["verifier_result"]
        valid = version == "0.25" or reward_valid(t)
        if version == "0.25":
            e["_rewards"].append(vr["rewards"] if vr is not None else None)
        elif valid and vr is not None:
            e["_rewards"].append(vr["rewards"])
        if valid and vr is not None and vr["rewards"] is not None:
            e["n_trials"] += 1
            for k, v in vr["rewards"].items():
                e["reward_stats"].setdefault(k, {}).setdefault(v, []).append(t["trial_name"])
        if version == "0.25":
            types = [t["exception_info"]["exception_type"]] if t["exception_info"] else []
        else:
            types = sorted({x["exception_type"] for x in recorded(t)})
        for kind in types:
            e["exception_stats"].setdefault(kind, []).append(t["trial_name"])
        if types:
            e["n_errors"] += 1
            n_errored += 1
        contexts = (
            [t["agent_result"]] if t["agent_result"]
            else [s["agent_result"] for s in t["step_results"] or [] if s["agent_result"]]
        )
        trial_totals: list[Any] = [None, None, None, None]
        for ctx in contexts:
            for i, f in enumerate(("n_input_tokens", "n_cache_tokens", "n_output_tokens",
                                   "cost_usd")):
                if ctx[f] is not None:
                    trial_totals[i] = (trial_totals[i] or (0.0 if i == 3 else 0)) + ctx[f]
        for i, v in enumerate(trial_totals):
            if v is not None:
                totals[i] = (totals[i] or (0.0 if i == 3 else 0)) + v
    for e in evals.values():
        rewards = e.pop("_rewards")
        group = e.pop("_trials")
        if rewards:
            e["metrics"] = [mean_metric(rewards)]
        if final:
            e["pass_at_k"] = pass_at_k(group)
    return {
        "n_completed_trials": len(trials),
        "n_errored_trials": n_errored,
        "n_running_trials": 0,
        "n_pending_trials": 0,
        "n_cancelled_trials": 0,
        "n_retries": 0,
        "evals": evals,
        "n_input_tokens": totals[0],
        "n_cache_tokens": totals[1],
        "n_output_tokens": totals[2],
        "cost_usd": totals[3],
    }


def make_job_025(root: Path) -> None:
    mk = Maker(SEED)
    job = Job(root, "2025-06-02__10-00-00", "0.25", mk, datetime(2025, 6, 2, 10, 0, 0, 412305))
    agent = ("terminus-2", "0.4.1", "anthropic/claude-sonnet-4-5", "anthropic")
    outcomes = {
        "fix-git-merge-conflict": [1, 1, 1, 1],
        "count-csv-rows": [1, 0, 1, 1],
        "parse-nginx-logs": [0, 1, 0, 0],
        "sqlite-add-index": [0, 0, 0, None],
        "regex-extract-emails": [1, 1, 0, 1],
        "build-cython-ext": [0, 0, 1, 0],
    }
    errors = {
        ("count-csv-rows", 1): "AgentTimeoutError",
        ("regex-extract-emails", 2): "NonZeroAgentExitCodeError",
        ("sqlite-add-index", 3): "EnvironmentStartTimeoutError",
        ("build-cython-ext", 2): "AgentTimeoutError",
    }
    offset = 0.0
    for attempt in range(4):
        for task, values in outcomes.items():
            value = values[attempt]
            job.add_trial(
                task=task, source="terminal-bench-mini", agent=agent, offset=offset,
                reward=None if value is None else {"reward": float(value)}, reward_file="txt",
                error=errors.get((task, attempt)),
            )
            offset += mk.rng.uniform(20, 90)
    job.write(
        finished=True,
        config={
            "job_name": job.name, "jobs_dir": "jobs", "n_attempts": 4,
            "agents": [{"name": agent[0], "model_name": agent[2]}],
            "datasets": [{"path": "datasets/terminal-bench-mini"}],
        },
    )


def make_job_026(root: Path) -> None:
    mk = Maker(SEED + 1)
    job = Job(root, "2025-06-03__14-30-00", "0.26", mk, datetime(2025, 6, 3, 14, 30, 0, 95521))
    claude = ("claude-code", "2.0.14", "anthropic/claude-sonnet-4-5", "anthropic")
    codex = ("codex", "0.46.0", "openai/gpt-5", "openai")
    plan: dict[str, list[tuple[int, float]]] = {
        # task: [(correctness, style) for claude a1, a2, codex a1, a2]
        "add-login-form": [(1, 0.75), (1, 1.0), (1, 0.5), (0, 0.5)],
        "fix-css-grid": [(0, 0.5), (1, 0.75), (1, 0.75), (1, 1.0)],
        "paginate-api": [(1, 0.5), (0, 0.25), (0, 0.25), (0, 0.0)],
        "dark-mode-toggle": [(1, 1.0), (1, 0.75), (0, 0.0), (1, 0.5)],
    }
    errors = {
        ("fix-css-grid", 0): "AgentTimeoutError",
        ("add-login-form", 3): "ApiRateLimitError",
        ("dark-mode-toggle", 2): "SandboxBuildFailedError",
    }
    steps_plan = [  # deploy-pipeline: per trial, (build reward, deploy reward or None+error)
        [((1, 0.75), None), ((1, 0.5), None)],
        [((1, 1.0), None), ((0, 0.5), None)],
        [((1, 0.5), None), (None, "VerifierTimeoutError")],
        [((0, 0.25), None), ((0, 0.5), None)],
    ]
    offset = 0.0
    for slot in range(4):
        agent = claude if slot < 2 else codex
        for task, values in plan.items():
            correctness, style = values[slot]
            error = errors.get((task, slot))
            reward = None if error == "SandboxBuildFailedError" else {
                "correctness": correctness, "style": style}
            job.add_trial(
                task=task, source="webapp-tasks", agent=agent, offset=offset, reward=reward,
                reward_file="json", error=error, running=(task == "paginate-api" and slot == 3),
            )
            offset += mk.rng.uniform(15, 70)
        steps = []
        for name, (pair, err) in zip(("build", "deploy"), steps_plan[slot], strict=True):
            reward = None if pair is None else {"correctness": pair[0], "style": pair[1]}
            steps.append({"name": name, "reward": reward, "error": err})
        valid = [s["reward"] for s in steps if s["reward"] is not None]
        trial_reward = {
            k: sum(r[k] for r in valid) / len(valid) for k in ("correctness", "style")
        }
        job.add_trial(
            task="deploy-pipeline", source="webapp-tasks", agent=agent, offset=offset,
            reward=trial_reward, reward_file="json", steps=steps,
        )
        offset += mk.rng.uniform(15, 70)
    job.write(
        finished=False,
        config={
            "job_name": job.name, "jobs_dir": "jobs", "n_attempts": 2,
            "agents": [{"name": a[0], "model_name": a[2]} for a in (claude, codex)],
            "datasets": [{"path": "datasets/webapp-tasks"}],
        },
    )


# --- the large job: six agent/model pairs on 40 tasks, 4 attempts each --------------------

BENCH_JOB = "2025-07-14__09-00-00"
BENCH_SOURCE = "terminal-bench-core"
BENCH_ATTEMPTS = 4
AGENT_TIMEOUT_SEC = 900.0
# name, version, model string as configured, provider and name as Harbor parses them
# (LiteLLM's provider split: "openrouter/anthropic/claude-opus-4.5" is provider
# "openrouter", model "anthropic/claude-opus-4.5"), then the simulation's truth:
# skill (logit scale), median agent run time (s), tokens in/out (thousands), share of input
# served from cache, USD per million input / cached input / output tokens.
BENCH_AGENTS: list[dict[str, Any]] = [
    {"agent": ("terminus-2", "0.4.1", "openrouter/anthropic/claude-opus-4.5", "openrouter"),
     "skill": 2.4, "seconds": 400.0, "k_in": 900, "k_out": 24, "cached": 0.7,
     "usd": (5.0, 0.5, 25.0)},
    {"agent": ("terminus-2", "0.4.1", "anthropic/claude-sonnet-4-5", "anthropic"),
     "skill": 0.85, "seconds": 290.0, "k_in": 850, "k_out": 22, "cached": 0.7,
     "usd": (3.0, 0.3, 15.0)},
    {"agent": ("terminus-2", "0.4.1", "openai/gpt-5", "openai"),
     "skill": 0.8, "seconds": 470.0, "k_in": 700, "k_out": 30, "cached": 0.6,
     "usd": (1.25, 0.125, 10.0)},
    {"agent": ("claude-code", "2.0.14", "anthropic/claude-haiku-4-5", "anthropic"),
     "skill": 0.05, "seconds": 150.0, "k_in": 950, "k_out": 18, "cached": 0.75,
     "usd": (1.0, 0.1, 5.0)},
    {"agent": ("codex", "0.46.0", "openai/gpt-5-mini", "openai"),
     "skill": -0.3, "seconds": 230.0, "k_in": 650, "k_out": 26, "cached": 0.6,
     "usd": (0.25, 0.025, 2.0)},
    {"agent": ("terminus-2", "0.4.1", "openrouter/qwen/qwen3-coder", "openrouter"),
     "skill": -0.75, "seconds": 340.0, "k_in": 1100, "k_out": 20, "cached": 0.0,
     "usd": (0.22, 0.22, 0.95)},
]
# Task difficulty on the same logit scale: "easy" tasks every agent solves every time,
# "impossible" ones none does; the others get a difficulty spread over the agents' range.
BENCH_EASY = ["hello-world", "count-csv-rows", "fix-permissions", "create-venv", "grep-todo-lines",
              "rename-files-by-date"]
BENCH_IMPOSSIBLE = ["compile-linux-kernel-module", "recover-corrupted-sqlite",
                    "reverse-engineer-binary-protocol", "port-fortran-solver-to-rust"]
BENCH_GRADED = [
    "fix-git-merge-conflict", "parse-nginx-logs", "sqlite-add-index", "regex-extract-emails",
    "build-cython-ext", "setup-nginx-reverse-proxy", "write-makefile", "debug-segfault-c",
    "configure-cron-backup", "migrate-postgres-schema", "train-sklearn-pipeline",
    "dockerize-flask-app", "fix-python-packaging", "jq-transform-json", "bash-log-rotation",
    "optimize-slow-query", "implement-lru-cache", "resolve-dependency-conflict",
    "patch-openssl-config", "profile-memory-leak", "write-systemd-unit", "fix-flaky-test",
    "convert-notebook-to-script", "parallelize-with-multiprocessing", "tune-gc-settings",
    "crack-weak-hash", "git-bisect-regression", "cross-compile-arm", "fix-unicode-csv",
    "deploy-static-site",
]
BENCH_TASKS = sorted(BENCH_EASY + BENCH_IMPOSSIBLE + BENCH_GRADED)
# Exceptions: a few agents exit non-zero (still graded) and two environments never start
# (no reward); Harbor retried both kinds twice before keeping the failure. Six other trials
# failed to start once and succeeded on the retry, so only job.log and n_retries show them.
BENCH_NONZERO_EXIT = 0.006  # per trial
BENCH_ENV_FAILED = [("openai/gpt-5-mini", "migrate-postgres-schema", 2),
                    ("openrouter/qwen/qwen3-coder", "cross-compile-arm", 3)]
BENCH_RETRIED = 6
MAX_RETRIES = 2


def bench_difficulty(rng: random.Random) -> dict[str, float]:
    """Each graded task's difficulty (logit scale), evenly spread with a little noise."""
    n = len(BENCH_GRADED)
    return {
        task: -2.2 + 4.8 * (i + 0.5) / n + rng.gauss(0, 0.25)
        for i, task in enumerate(rng.sample(BENCH_GRADED, n))
    }


def solve_probability(skill: float, task: str, difficulty: dict[str, float]) -> float:
    if task in BENCH_EASY:
        return 1.0
    if task in BENCH_IMPOSSIBLE:
        return 0.0
    return 1.0 / (1.0 + math.exp(-1.7 * (skill - difficulty[task])))


def bench_usage(mk: Maker, spec: dict[str, Any], scale: float) -> dict[str, Any]:
    n_in = int(spec["k_in"] * 1000 * scale * math.exp(mk.rng.gauss(0, 0.35)))
    n_cache = int(n_in * spec["cached"] * mk.rng.uniform(0.85, 1.0))
    n_out = int(spec["k_out"] * 1000 * scale * math.exp(mk.rng.gauss(0, 0.4)))
    usd_in, usd_cache, usd_out = spec["usd"]
    cost = ((n_in - n_cache) * usd_in + n_cache * usd_cache + n_out * usd_out) / 1e6
    return {
        "n_input_tokens": n_in, "n_cache_tokens": n_cache, "n_output_tokens": n_out,
        "cost_usd": round(cost, 4), "model_usage": None, "rollout_details": None,
        "metadata": None,
    }


def make_job_bench(root: Path) -> None:
    """Harbor 0.25, finished: 6 agent/model pairs x 40 tasks x 4 attempts (960 trials).

    Trials run 16 at a time in submission order (attempt, agent, task), each starting when
    a slot frees up. Whether a trial solves its task is drawn from the agent's skill and
    the task's difficulty; harder tasks take longer and use more tokens, and an agent still
    running after 900 s is stopped (``AgentTimeoutError``; the verifier still grades it).
    """
    mk = Maker(SEED + 2)
    job = Job(root, BENCH_JOB, "0.25", mk, datetime(2025, 7, 14, 9, 0, 0, 250113))
    difficulty = bench_difficulty(mk.rng)
    plan = [(attempt, spec, task) for attempt in range(BENCH_ATTEMPTS)
            for spec in BENCH_AGENTS for task in BENCH_TASKS]
    env_failed = {(m, t, a) for m, t, a in BENCH_ENV_FAILED}
    retried = set(mk.rng.sample(range(len(plan)), BENCH_RETRIED))
    slots = [0.0] * 16
    log: list[str] = []
    n_retries = 0
    for i, (attempt, spec, task) in enumerate(plan):
        agent = spec["agent"]
        slot = min(range(len(slots)), key=lambda j: slots[j])
        offset = slots[slot] + mk.rng.uniform(0.5, 3.0)
        hard = 0.5 if task in BENCH_EASY else 1.6 if task in BENCH_IMPOSSIBLE else (
            1.0 + 0.25 * difficulty[task])
        seconds = spec["seconds"] * max(hard, 0.3) * math.exp(mk.rng.gauss(0, 0.45))
        solved = mk.rng.random() < solve_probability(spec["skill"], task, difficulty)
        error = None
        if (agent[2], task, attempt) in env_failed:
            error = "EnvironmentStartTimeoutError"
        elif seconds > AGENT_TIMEOUT_SEC:
            seconds = AGENT_TIMEOUT_SEC + mk.rng.uniform(0, 2)
            error = "AgentTimeoutError"
            solved = solved and mk.rng.random() < 0.3  # most time-outs leave it unsolved
        elif task not in BENCH_EASY and mk.rng.random() < BENCH_NONZERO_EXIT:
            error = "NonZeroAgentExitCodeError"
        # Harbor retries these (not in RetryConfig's exclude list) with a 1 s back-off and
        # removes the failed attempt's folder: only job.log and n_retries remember it.
        persisted = error in ("EnvironmentStartTimeoutError", "NonZeroAgentExitCodeError")
        failures = MAX_RETRIES if persisted else int(i in retried)
        if failures and error is None:
            offset += 600.0 + 1.0  # the failed start took the environment's 600 s
        finished = job.add_trial(
            task=task, source=BENCH_SOURCE, agent=agent, offset=offset,
            reward=None if error == "EnvironmentStartTimeoutError" else {
                "reward": 1.0 if solved else 0.0},
            reward_file="txt", error=error, agent_seconds=seconds,
            usage=bench_usage(mk, spec, max(hard, 0.3)),
        )
        slots[slot] = (finished - job.start).total_seconds()
        name = job.results[-1]["trial_name"]
        failed_with = error if persisted else "EnvironmentStartTimeoutError"
        log += [f"Trial {name} failed with exception {failed_with}. Retrying in 1.00 seconds..."
                ] * failures
        n_retries += failures
    job.write(
        finished=True,
        config={
            "job_name": job.name, "jobs_dir": "jobs", "n_attempts": BENCH_ATTEMPTS,
            "n_concurrent_trials": len(slots), "retry": {"max_retries": MAX_RETRIES},
            "agents": [{"name": s["agent"][0], "model_name": s["agent"][2]}
                       for s in BENCH_AGENTS],
            "datasets": [{"path": f"datasets/{BENCH_SOURCE}"}],
        },
        n_retries=n_retries,
        log=log,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("-o", "--out", type=Path, default=Path(__file__).parent / "harbor_jobs")
    args = parser.parse_args(argv)
    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    make_job_025(args.out)
    make_job_026(args.out)
    make_job_bench(args.out)
    count = sum(1 for _ in args.out.rglob("result.json"))
    print(f"wrote {count} result.json files under {args.out}")


if __name__ == "__main__":
    main()
