"""Harbor's metrics in a summary are per evaluation of one run: two runs of one agent whose
models are not recorded share an evaluation key, and must not be pooled (a pass@2 across two
models was printed for the Terminal-Bench droid runs)."""

from __future__ import annotations

import pandas as pd

import metrickit as mk
from metrickit.compute.jobs import summarize_trials


def test_each_candidate_block_has_its_own_runs_harbor_metrics():
    df = pd.DataFrame({
        "task": [f"t{i}" for i in range(10)] * 2,
        "ok": [1] * 10 + [0] * 10,
        "run": ["sonnet-run"] * 10 + ["gpt-run"] * 10,
        "agent": "Factory Droid",
    })
    t = mk.trials_from_frame(df, task="task", reward="ok", run="run", agent="agent")
    assert t["eval"].nunique() == 1 and t["candidate"].nunique() == 2
    text = summarize_trials(t, title="two runs")
    blocks = text.split("\n\n")[1:]
    assert len(blocks) == 2
    by_run = {("sonnet" if "sonnet-run" in b else "gpt"): b for b in blocks}
    assert "Harbor metrics (0.25): {'mean': 1.0}" in by_run["sonnet"]
    assert "Harbor metrics (0.25): {'mean': 0.0}" in by_run["gpt"]
    assert "pass@2" not in text  # one attempt per task in each run
