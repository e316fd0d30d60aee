"""Small synthetic Harbor job folders for tests, plus Harbor's pass@k as plain Python."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "data" / "harbor"


def fixture_trial(name: str = "trial_0.25.json") -> dict[str, Any]:
    """A trial result.json written by Harbor itself (see tests/data/harbor/README.md)."""
    return json.loads((FIXTURES / name).read_text())


def write_trial(
    job: Path,
    trial_name: str,
    *,
    task: str,
    rewards: dict[str, Any] | None,
    agent: str = "claude-code",
    model: str | None = "claude-sonnet-4-5",
    source: str | None = "my-dataset",
    exception: str | None = None,
    started: str = "2025-01-01T00:00:00Z",
    base: str = "trial_0.25.json",
) -> Path:
    """Write one trial folder, starting from a Harbor-written result.json."""
    obj = fixture_trial(base)
    obj["task_name"] = task
    obj["trial_name"] = trial_name
    obj["source"] = source
    obj["agent_info"]["name"] = agent
    obj["agent_info"]["model_info"] = None if model is None else {"name": model,
                                                                  "provider": "anthropic"}
    obj["verifier_result"] = None if rewards is None else {"rewards": rewards}
    obj["started_at"] = started
    if exception:
        obj["exception_info"] = {
            "exception_type": exception,
            "exception_message": "boom",
            "exception_traceback": "tb",
            "occurred_at": "2025-01-01T00:04:00Z",
        }
    folder = job / trial_name
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(obj, indent=4))
    return folder


def harbor_pass_at_k(trials: list[tuple[str, dict[str, Any] | None]]) -> dict[int, float]:
    """``harbor/utils/pass_at_k.py::_compute_pass_at_k_for_trials`` (0.25), verbatim logic.

    ``trials`` is (task_name, rewards) in trial order. Uses ``math.fsum``-free builtin sum,
    so on Python < 3.12 the last bit of the task average may differ from 3.12's; callers
    compare with a 1e-15 tolerance.
    """
    task_successes: dict[str, list[int]] = {}
    for task, rewards in trials:
        if rewards is None:
            task_successes.setdefault(task, []).append(0)
            continue
        if len(rewards) != 1:
            return {}
        value = next(iter(rewards.values()))
        if not isinstance(value, int | float) or value not in (0, 1):
            return {}
        task_successes.setdefault(task, []).append(int(value))
    if not task_successes:
        return {}
    n_min = min(len(s) for s in task_successes.values())
    ks: set[int] = set()
    k = 2
    while k <= n_min:
        ks.add(k)
        k *= 2
    k = 5
    while k <= n_min:
        ks.add(k)
        k += 5

    def one(n: int, c: int, k: int) -> float:
        if n - c < k:
            return 1.0
        product = 1.0
        for i in range(k):
            product *= (n - c - i) / (n - i)
        return 1.0 - product

    return {
        k: sum(one(len(s), sum(s), k) for s in task_successes.values()) / len(task_successes)
        for k in sorted(ks)
    }
