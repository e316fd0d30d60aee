"""Reading 10,000 Harbor trial folders: read_harbor_job against a plain json.load loop.

Generates (seeded) 100 job folders of 100 trials each in ``benchmarks/_data/jobs_*``,
copied from the real Harbor 0.25 sample job in ``data/harbor_jobs/`` (each trial's
``result.json``, ``config.json`` and ``verifier/reward.txt``, renamed per trial), then
times, each in its own subprocess:

metrickit   ``mk.read_harbor_job(root)``: every job, one row per trial, validated
json-loop   ``json.load`` of every trial ``result.json`` and a read of its
            ``verifier/reward.txt`` into a list of dicts (no validation, no frame)

    python benchmarks/bench_jobs.py            # 10,000 trials
    python benchmarks/bench_jobs.py --quick    # 1,000 trials
    python benchmarks/bench_jobs.py --json     # JSON rows for run.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _bench import emit, peak_rss_mb, row, run_child  # noqa: E402

TEMPLATE_JOB = ROOT / "data" / "harbor_jobs" / "2025-06-02__10-00-00"
TRIALS_PER_JOB = 100


def make_jobs(root: Path, n_trials: int, *, seed: int = 0) -> Path:
    """``n_trials`` trial folders in jobs of ``TRIALS_PER_JOB``, from the sample job."""
    done = root / ".complete"
    if done.exists():
        return root
    if root.exists():
        shutil.rmtree(root)
    rng = np.random.default_rng(seed)
    templates = []
    for trial in sorted(p for p in TEMPLATE_JOB.iterdir() if p.is_dir()):
        files = {
            rel: (trial / rel).read_text()
            for rel in ("result.json", "config.json", "verifier/reward.txt")
            if (trial / rel).exists()
        }
        templates.append((trial.name, files))
    job_files = {
        p.name: p.read_text() for p in TEMPLATE_JOB.iterdir() if p.is_file()
    }
    for j in range(-(-n_trials // TRIALS_PER_JOB)):
        job_name = f"2025-07-{1 + j // 24:02d}__{j % 24:02d}-00-00"
        job = root / job_name
        job.mkdir(parents=True)
        for name, text in job_files.items():
            (job / name).write_text(text.replace(TEMPLATE_JOB.name, job_name))
        for i in range(min(TRIALS_PER_JOB, n_trials - j * TRIALS_PER_JOB)):
            old, files = templates[int(rng.integers(len(templates)))]
            task = old.split("__")[0]
            new = f"{task}__b{j:03d}t{i:03d}"
            folder = job / new
            (folder / "verifier").mkdir(parents=True)
            for rel, text in files.items():
                text = text.replace(old, new).replace(TEMPLATE_JOB.name, job_name)
                (folder / rel).write_text(text)
    done.write_text("ok\n")
    return root


def _child(method: str, root: str) -> None:
    if method == "metrickit":
        import metrickit as mk

    start = time.perf_counter()
    if method == "metrickit":
        frame = mk.read_harbor_job(root, progress=False)
        n = len(frame)
    else:
        rows = []
        for job in sorted(Path(root).iterdir()):
            if not job.is_dir():
                continue
            for trial in sorted(job.iterdir()):
                if not trial.is_dir():
                    continue
                with open(trial / "result.json") as fh:
                    obj = json.load(fh)
                reward_file = trial / "verifier" / "reward.txt"
                obj["_reward"] = reward_file.read_text() if reward_file.exists() else None
                rows.append(obj)
        n = len(rows)
    seconds = time.perf_counter() - start
    print(json.dumps({"method": method, "seconds": seconds, "peak_mb": peak_rss_mb(), "n": n}))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-n", "--trials", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="1,000 trials")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "ROOT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return
    # metrickit is imported only in the children: Linux carries a parent's peak RSS
    # (ru_maxrss) over into the children it forks, so a big parent inflates them.
    n = 1_000 if args.quick else args.trials
    root = make_jobs(HERE / "_data" / f"jobs_{n}", n)
    results = {}
    for method in ("metrickit", "json-loop"):
        runs = [run_child([__file__, "--child", method, str(root)]) for _ in range(args.repeat)]
        results[method] = min(runs, key=lambda r: r["seconds"])
        results[method]["peak_mb"] = max(r["peak_mb"] for r in runs)
    if len({r["n"] for r in results.values()}) != 1:
        raise SystemExit(f"row counts differ: {results}")
    mk_r, base = results["metrickit"], results["json-loop"]
    if args.json:
        emit([
            row(
                f"read {n:,} Harbor trial folders ({n // TRIALS_PER_JOB} jobs)",
                mk_r["seconds"], "json.load loop", base["seconds"],
                peak_mb=mk_r["peak_mb"], baseline_peak_mb=base["peak_mb"],
                note="metrickit validates and builds the frame; the loop only loads",
            ),
        ])
        return
    print(f"{n:,} trials in {n // TRIALS_PER_JOB} jobs, best of {args.repeat}")
    for method, r in results.items():
        print(f"{method:<16}{r['seconds']:>8.3f} s{n / r['seconds']:>10,.0f} trials/s"
              f"{r['peak_mb']:>8.0f} MB peak RSS")
    print(f"json-loop time / metrickit time = {base['seconds'] / mk_r['seconds']:.2f}")


if __name__ == "__main__":
    main()
