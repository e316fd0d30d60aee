"""Seeded tables shaped like a real public agent benchmark, for plots and the tuner.

14 models x 34 tasks x 3 attempts, model names like ``openrouter/anthropic/claude-opus-4.5``,
mean latencies of 6-22 minutes per model and costs from cents to dollars per trial. Task
difficulty varies (some tasks every model solves, some none, the rest flaky), two models
are near-copies (a statistical tie), and accuracy, latency and cost trade off.

``benchmark_cases()`` is a case table (``candidate``, ``task_name``, ``attempt``,
``accuracy``, ``latency_ms``, ``cost_usd``) for ``tradeoff`` and ``tune_spec``;
``benchmark_trials()`` is the same data as a Harbor trial table (``agent``, ``model``,
``task_name``, ``attempt``, ``reward``, ``total_ms``, ``cost_usd``, ...) for
``task_heatmap`` and ``summary``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MODELS = (
    "openrouter/anthropic/claude-opus-4.5",
    "openrouter/anthropic/claude-sonnet-4.5",
    "openrouter/anthropic/claude-haiku-4.5",
    "openrouter/openai/gpt-5",
    "openrouter/openai/gpt-5-mini",
    "openrouter/openai/gpt-oss-120b",
    "openrouter/google/gemini-2.5-pro",
    "openrouter/google/gemini-2.5-flash",
    "openrouter/x-ai/grok-4",
    "openrouter/deepseek/deepseek-v3.1-terminus",
    "openrouter/qwen/qwen3-coder-480b-a35b-instruct",
    "openrouter/moonshotai/kimi-k2-0905",
    "openrouter/z-ai/glm-4.6",
    "openrouter/mistralai/devstral-medium",
)

TASKS = tuple(
    f"{verb}-{thing}"
    for verb, thing in zip(
        ("fix", "build", "parse", "train", "debug", "migrate", "serve", "compress", "sort",
         "audit", "deploy", "recover", "profile", "extract", "merge", "patch", "query"),
        ("git-merge-conflict", "cython-ext", "nginx-logs", "fasttext", "flaky-test",
         "sqlite-schema", "static-site", "large-file", "huge-csv", "ssh-config", "k8s-job",
         "deleted-files", "slow-query", "pdf-tables", "json-streams", "openssl-cve",
         "parquet-lake"),
        strict=True,
    )
) + tuple(
    f"{verb}-{thing}"
    for verb, thing in zip(
        ("write", "port", "bisect", "tune", "vendor", "shard", "cache", "lint", "bench",
         "trace", "sign", "rotate", "pin", "index", "stream", "mirror", "scrub"),
        ("compiler-pass", "bash-to-python", "regression", "postgres", "dependencies",
         "dataset", "http-api", "monorepo", "allocator", "syscalls", "release", "tls-certs",
         "toolchain", "vector-store", "kafka-topic", "pypi-package", "pii-logs"),
        strict=True,
    )
)


def benchmark_cases(
    seed: int = 0, *, n_models: int = 14, n_tasks: int = 34, n_attempts: int = 3
) -> pd.DataFrame:
    """One row per (model, task, attempt): ``candidate``, ``task_name``, ``attempt``,
    ``accuracy`` (0/1), ``latency_ms`` (minutes long) and ``cost_usd``."""
    if not 2 <= n_models <= len(MODELS) or not 1 <= n_tasks <= len(TASKS):
        raise ValueError(
            f"n_models must be 2..{len(MODELS)} and n_tasks 1..{len(TASKS)}; "
            f"got {n_models}, {n_tasks}"
        )
    rng = np.random.default_rng(seed)
    models = np.array(MODELS[:n_models], dtype=object)
    tasks = np.array(TASKS[:n_tasks], dtype=object)
    # Skill, speed and price trade off: stronger models are slower and dearer.
    skill = np.sort(rng.uniform(-1.2, 1.6, n_models))[::-1]
    minutes = np.interp(skill, (skill.min(), skill.max()), (6.0, 22.0))
    minutes *= rng.uniform(0.85, 1.15, n_models)
    minutes = np.clip(minutes, 6.0, 22.0)
    price = np.exp(np.interp(skill, (skill.min(), skill.max()), (np.log(0.03), np.log(2.5))))
    price *= rng.uniform(0.7, 1.3, n_models)
    # Models 2 and 3 (by skill) are near-copies: a tie the intervals should show.
    skill[2], minutes[2], price[2] = skill[1], minutes[1] * 1.02, price[1] * 0.98
    difficulty = rng.normal(0.0, 1.6, n_tasks)
    difficulty[: max(1, n_tasks // 8)] = -6.0  # every model solves these
    difficulty[-max(1, n_tasks // 8) :] = 6.0  # no model solves these
    m, t, a = np.meshgrid(np.arange(n_models), np.arange(n_tasks), np.arange(n_attempts),
                          indexing="ij")
    m, t, a = m.ravel(), t.ravel(), a.ravel()
    p = 1 / (1 + np.exp(-(skill[m] - difficulty[t])))
    solved = rng.random(m.size) < p
    effort = rng.lognormal(0.0, 0.25, m.size) * np.exp(0.08 * difficulty[t])
    return pd.DataFrame(
        {
            "candidate": models[m],
            "task_name": tasks[t],
            "attempt": a + 1,
            "accuracy": solved.astype(float),
            "latency_ms": np.round(minutes[m] * 60_000 * effort, 1),
            "cost_usd": np.round(price[m] * effort, 4),
        }
    )


def benchmark_trials(seed: int = 0, **shape: int) -> pd.DataFrame:
    """The same data as a Harbor trial table: ``agent``, ``model``, ``task_name``,
    ``attempt``, ``reward``, ``total_ms``, ``cost_usd`` and ``trial_name``."""
    cases = benchmark_cases(seed, **shape)
    return pd.DataFrame(
        {
            "job": "2025-11-20__09-00-00",
            "agent": "terminus-2",
            "model": cases["candidate"],
            "task_name": cases["task_name"],
            "trial_name": cases["task_name"] + "__" + cases["attempt"].astype(str),
            "attempt": cases["attempt"],
            "reward": cases["accuracy"],
            "total_ms": cases["latency_ms"],
            "cost_usd": cases["cost_usd"],
        }
    )
