"""Write a realistic Terminal-Bench 1 run folder for the reader's tests.

terminal-bench (0.2.x) needs Python >= 3.12 and Docker, so it cannot run here; this script
writes what its harness writes, with its field names and layout, taken from
laude-institute/terminal-bench:

- ``terminal_bench/harness/models.py``: ``RunMetadata`` (``run_metadata.json``),
  ``TrialResults`` (each ``<task_id>/<trial_name>/results.json``) and ``BenchmarkResults``
  (the run's ``results.json``: ``id``, ``results`` and the computed ``pass_at_k``,
  ``n_resolved``, ``n_unresolved``, ``resolved_ids``, ``unresolved_ids``, ``accuracy``);
- ``terminal_bench/harness/harness.py``: files written with ``model_dump_json(indent=4)``,
  trial names ``f"{task}.{attempt}-of-{n_attempts}.{run_id}"``, timestamps
  ``datetime.now(timezone.utc).isoformat()``, ``is_resolved`` = every parsed test passed,
  a crashed trial (``unknown_agent_error``) only in the run's ``results.json`` (its own file
  is never written), a trial folder without ``results.json`` while it runs;
- ``terminal_bench/agents/failure_mode.py`` (``FailureMode`` values) and
  ``terminal_bench/parsers/base_parser.py`` (``UnitTestStatus``: ``passed``/``failed``).

``write_run(folder)`` writes ``folder/<run_id>/`` (3 tasks x 2 attempts, one still running)
and returns its path and the trials it wrote. Run as a script to write one:
``python tests/io/tb1_fixture.py /tmp/runs``.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

RUN_ID = "2025-08-15__19-28-24"
T0 = datetime(2025, 8, 15, 19, 28, 24, 123456, tzinfo=UTC)

# (task, attempt, failure_mode, parser_results or None, tokens, own results.json written)
TRIALS: list[tuple[str, int, str, dict[str, str] | None, tuple[int, int] | None, bool]] = [
    ("hello-world", 1, "none", {"test_hello": "passed"}, (1200, 300), True),
    ("hello-world", 2, "none", {"test_hello": "passed"}, (1100, 280), True),
    ("fix-permissions", 1, "agent_timeout",
     {"test_mode": "passed", "test_owner": "failed"}, (50000, 9000), True),
    ("fix-permissions", 2, "none", {"test_mode": "passed", "test_owner": "passed"},
     (42000, 8000), True),
    ("build-tcc", 1, "test_timeout", None, (80000, 12000), True),
    ("build-tcc", 2, "unknown_agent_error", None, None, False),
]
RUNNING = ("crack-7z-hash", 1)


def _trial(run_id: str, n_attempts: int, i: int, spec: tuple[Any, ...]) -> dict[str, Any]:
    task, attempt, failure, parsed, tokens, _ = spec
    start = T0 + timedelta(minutes=7 * i)
    out: dict[str, Any] = {
        "id": str(uuid.UUID(int=i + 1, version=4)),
        "trial_name": f"{task}.{attempt}-of-{n_attempts}.{run_id}",
        "task_id": task,
        "instruction": f"Solve {task}.",
        "is_resolved": None,
        "failure_mode": failure,
        "parser_results": parsed,
        "recording_path": None,
        "total_input_tokens": None,
        "total_output_tokens": None,
        "trial_started_at": None,
        "trial_ended_at": None,
        "agent_started_at": None,
        "agent_ended_at": None,
        "test_started_at": None,
        "test_ended_at": None,
    }
    if failure == "unknown_agent_error":  # the harness caught an exception: bare result
        return out
    agent_start = start + timedelta(seconds=31.5)
    agent_end = agent_start + timedelta(seconds=120 + 10 * i)
    out.update(
        recording_path=f"{run_id}/{task}/{out['trial_name']}/sessions/agent.cast",
        total_input_tokens=tokens[0],
        total_output_tokens=tokens[1],
        trial_started_at=start.isoformat(),
        agent_started_at=agent_start.isoformat(),
        agent_ended_at=agent_end.isoformat(),
    )
    if parsed is not None:
        test_end = agent_end + timedelta(seconds=14.25)
        out.update(
            is_resolved=all(v == "passed" for v in parsed.values()),
            test_started_at=agent_end.isoformat(),
            test_ended_at=test_end.isoformat(),
            trial_ended_at=(test_end + timedelta(seconds=2)).isoformat(),
        )
    else:  # test timeout: the harness stamps the end and returns before parsing
        out["trial_ended_at"] = (agent_end + timedelta(seconds=180)).isoformat()
    return out


def write_run(folder: Path, run_id: str = RUN_ID) -> tuple[Path, list[dict[str, Any]]]:
    run = folder / run_id
    run.mkdir(parents=True)
    n_attempts = 2
    trials = [_trial(run_id, n_attempts, i, spec) for i, spec in enumerate(TRIALS)]
    for trial, spec in zip(trials, TRIALS, strict=True):
        trial_dir = run / trial["task_id"] / trial["trial_name"]
        (trial_dir / "sessions").mkdir(parents=True)
        (trial_dir / "panes").mkdir()
        if spec[-1]:
            (trial_dir / "results.json").write_text(json.dumps(trial, indent=4))
    task, attempt = RUNNING
    (run / task / f"{task}.{attempt}-of-{n_attempts}.{run_id}" / "sessions").mkdir(parents=True)
    resolved = [t for t in trials if t["is_resolved"]]
    results = {
        "id": str(uuid.UUID(int=99, version=4)),
        "results": trials,
        "pass_at_k": {"2": 2 / 3},
        "n_resolved": len(resolved),
        "n_unresolved": len(trials) - len(resolved),
        "resolved_ids": [t["task_id"] for t in resolved],
        "unresolved_ids": [t["task_id"] for t in trials if not t["is_resolved"]],
        "accuracy": len(resolved) / len(trials),
    }
    (run / "results.json").write_text(json.dumps(results, indent=4))
    metadata = {
        "run_id": run_id,
        "uuid": str(uuid.UUID(int=7, version=4)),
        "dataset_path": None,
        "dataset_name": "terminal-bench-core",
        "dataset_version": "0.1.1",
        "output_path": str(folder),
        "agent_name": "terminus",
        "no_rebuild": False,
        "cleanup": True,
        "log_level": 20,
        "task_ids": [*sorted({t["task_id"] for t in trials}), RUNNING[0]],
        "exclude_task_ids": None,
        "n_tasks": None,
        "n_concurrent_trials": 4,
        "n_attempts": n_attempts,
        "dataset_size": 4,
        "accuracy": None,
        "model_name": "anthropic/claude-sonnet-4-20250514",
        "start_time": T0.isoformat(),
        "end_time": None,
        "commit_hash": "unknown",
        "username": "unknown",
        "s3_bucket": None,
        "agent_kwargs": {},
        "pass_at_k": None,
        "resumed_at": None,
    }
    (run / "run_metadata.json").write_text(json.dumps(metadata, indent=4))
    (run / "run.log").write_text("")
    return run, trials


if __name__ == "__main__":
    out = Path(sys.argv[1])
    print(write_run(out)[0])
