"""Check the sample job folders against Harbor's own pydantic models.

Run under a Python (>= 3.12) where ``import harbor`` works::

    python tests/harbor_layout_check.py data/harbor_jobs

(``METRICKIT_HARBOR_PATH`` may name an unpacked harbor wheel to put on ``sys.path``.)
For every trial ``result.json`` of the Harbor version that is installed (0.26 files carry
``schema_version``), ``TrialResult.model_validate_json(text).model_dump_json(indent=4)``
must give back the file byte for byte: every field, its order, its type and its
serialization. Files of the other version must still validate. For each job of the
installed version the job ``result.json`` must round-trip the same way, and its stats must
equal what Harbor's ``JobStats.from_trial_results``, ``Mean`` and
``compute_pass_at_k_by_evals`` compute from the trials. Prints one line per problem and
exits 1 if there is any.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def check(root: Path) -> list[str]:
    if os.environ.get("METRICKIT_HARBOR_PATH"):
        sys.path.insert(0, os.environ["METRICKIT_HARBOR_PATH"])
    from harbor.metrics.mean import Mean
    from harbor.models.job.result import JobResult, JobStats
    from harbor.models.trial.result import TrialResult
    from harbor.utils.pass_at_k import compute_pass_at_k_by_evals

    v026 = "schema_version" in TrialResult.model_fields
    problems: list[str] = []
    checked = 0
    for job_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        job_text = (job_dir / "result.json").read_text()
        job_is_026 = '"schema_version"' in job_text.split("\n", 2)[1]
        same = job_is_026 == v026
        trials = []
        for trial_dir in sorted(p for p in job_dir.iterdir() if p.is_dir()):
            path = trial_dir / "result.json"
            if not path.exists():
                continue
            text = path.read_text()
            try:
                trial = TrialResult.model_validate_json(text)
            except Exception as exc:  # report every file, whatever pydantic raises
                problems.append(f"{path}: does not validate: {exc}")
                continue
            trials.append(trial)
            if same:
                checked += 1
                again = trial.model_dump_json(indent=4)
                if again != text:
                    problems.append(
                        f"{path}: differs from Harbor's serialization:\n{_diff(text, again)}"
                    )
        job = JobResult.model_validate_json(job_text)
        if not same:
            continue
        again = job.model_dump_json(indent=4, exclude={"trial_results"})
        # JSON keys "1" of reward_stats come back as floats ("1.0") when parsed, so a job
        # with integer rewards does not round-trip byte for byte; compare those keys as numbers.
        if again != job_text and _norm(json.loads(again)) != _norm(json.loads(job_text)):
            problems.append(f"{job_dir}/result.json: differs from Harbor's serialization:\n"
                            f"{_diff(job_text, again)}")
        stored = json.loads(job_text)["stats"]
        finished = job.finished_at is not None
        order = sorted(trials, key=lambda t: (t.started_at if finished else t.finished_at))
        stats = JobStats.from_trial_results(order)
        for key, ev in stats.evals.items():
            if v026:
                rewards = [t.verifier_result.rewards for t in order
                           if t.reward_valid and t.verifier_result is not None
                           and _key(t) == key]
            else:
                rewards = [t.verifier_result.rewards if t.verifier_result else None
                           for t in order if _key(t) == key]
            ev.metrics = [Mean().compute(rewards)] if rewards else []
        if finished:
            for key, value in compute_pass_at_k_by_evals(order).items():
                stats.evals[key].pass_at_k = value
        expect = json.loads(stats.model_dump_json())
        for name in ("n_completed_trials", "n_errored_trials", "n_input_tokens",
                     "n_cache_tokens", "n_output_tokens", "evals"):
            if expect[name] != stored[name]:
                problems.append(f"{job_dir}: stats.{name} is {stored[name]!r}; Harbor computes "
                                f"{expect[name]!r}")
        if abs(expect["cost_usd"] - stored["cost_usd"]) > 1e-9:
            problems.append(f"{job_dir}: cost_usd {stored['cost_usd']} vs {expect['cost_usd']}")
    if checked == 0:
        problems.append("no trial result.json of the installed Harbor version was checked")
    return problems


def _norm(job: dict) -> dict:  # type: ignore[type-arg]
    for ev in job["stats"]["evals"].values():
        ev["reward_stats"] = {
            k: {float(v): names for v, names in values.items()}
            for k, values in ev["reward_stats"].items()
        }
    return job


def _key(trial) -> str:  # type: ignore[no-untyped-def]
    from harbor.models.job.result import JobStats

    info = trial.agent_info
    return JobStats.format_agent_evals_key(
        info.name, info.model_info.name if info.model_info else None, trial.source or "adhoc"
    )


def _diff(a: str, b: str) -> str:
    import difflib

    return "".join(list(difflib.unified_diff(
        a.splitlines(True), b.splitlines(True), "file", "harbor"))[:40])


if __name__ == "__main__":
    found = check(Path(sys.argv[1]))
    for line in found:
        print(line)
    print(f"{len(found)} problem(s)")
    sys.exit(1 if found else 0)
