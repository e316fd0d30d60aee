"""Write data/rewards/runs/*.jsonl: three runs of one 400-task benchmark, for comparing metrics.

The runs are built so that the metric matters:
- ``steady``: partial credit everywhere (many 0.6-0.9 rewards), few perfect solves;
- ``spiky``: all-or-nothing (0 or 1), a higher strict pass rate but a lower mean;
- ``flaky``: good when it finishes, but 15 % of trials have no result (``null``).

Run: python data/make_runs.py   (seeded; rewrites the three files)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "rewards" / "runs"
N_TASKS = 400


def main() -> None:
    rng = np.random.default_rng(2026)
    difficulty = rng.random(N_TASKS)
    OUT.mkdir(parents=True, exist_ok=True)
    runs = {}
    steady = []
    for d in difficulty:
        c = float(np.clip(rng.normal(0.85 - 0.4 * d, 0.1), 0, 1))
        steady.append({"correctness": 1 if c > 0.97 else round(c, 3),
                       "style": round(float(np.clip(rng.normal(0.8, 0.1), 0, 1)), 3)})
    runs["steady"] = steady
    spiky = []
    for d in difficulty:
        solved = rng.random() < 0.75 - 0.5 * d
        spiky.append({"correctness": 1 if solved else 0,
                      "style": round(float(np.clip(rng.normal(0.6, 0.2), 0, 1)), 3)})
    runs["spiky"] = spiky
    flaky = []
    for d in difficulty:
        if rng.random() < 0.15:
            flaky.append(None)
            continue
        c = float(np.clip(rng.normal(0.95 - 0.3 * d, 0.1), 0, 1))
        flaky.append({"correctness": 1 if c > 0.9 else round(c, 3),
                      "style": round(float(np.clip(rng.normal(0.9, 0.05), 0, 1)), 3)})
    runs["flaky"] = flaky
    for name, rows in runs.items():
        (OUT / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
