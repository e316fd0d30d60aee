"""What each teaching notebook must show, checked in the notebook's own kernel.

The notebooks teach; they end on a result, not on asserts. ``tests/test_notebooks.py``
appends each notebook's checks below as one more code cell to the copy it executes, so
the checks see the notebook's variables and a notebook that stops showing what its text
says fails the suite. The files in ``notebooks/`` (and the documentation site's pages made
from them) never contain these cells.
"""

from __future__ import annotations

CHECKS: dict[str, str] = {
    "01_explore_rewards.ipynb": """
assert reproduced and all(metrics for metrics, _ in reproduced.values()), reproduced
assert all(pass_at_k in (True, None) for _, pass_at_k in reproduced.values()), reproduced
assert any(pass_at_k for _, pass_at_k in reproduced.values())  # at least one job checks pass@k
assert cmp.best()["pass rate"] == ["anthropic/claude-opus-4.5"]  # clearly best
ranks = cmp.table.set_index("group")
for a, b in (("claude-sonnet-4-5", "gpt-5"), ("claude-haiku-4-5", "gpt-5-mini")):
    assert ranks.loc[a, "rank_low"] <= ranks.loc[b, "rank"]
    assert ranks.loc[b, "rank_low"] <= ranks.loc[a, "rank"]
assert tie.difference.low < 0 < tie.difference.high  # no difference found
assert (per_task == 1).any() and (per_task == 0).any()
assert ((per_task > 0) & (per_task < 1)).sum() >= 10
assert front.sum() >= 4 and (~front).sum() >= 1  # a front of several models, one dominated
assert comparison.underpowered and comparison.n_tasks == 5
""",
    "02_compare_metrics.ipynb": """
ranks = cmp.pivot("rank")
assert set(ranks.index) == {"flaky", "spiky", "steady"}
assert ranks.loc["spiky", "strict"] == 1  # all-or-nothing wins on the strict pass rate ...
assert ranks.loc["spiky", "harbor mean[correctness]"] == 3  # ... and loses on the mean
assert mk.run_metric_script(out, spiky)["strict"] == mk.pass_rate(1.0, key="correctness")(spiky)
assert result.exit_code == 1  # night 5's bug is caught
""",
    "03_tune_reward_spec.ipynb": """
assert tuner.spec == spec.to_dict()
assert {"accuracy_score", "speed_score", "cost_score", "reward"} <= set(scored.columns)
assert tuner.tied == best == ["base", "openrouter/anthropic/claude-haiku-4.5"]
assert tuner.verdict.startswith("tied: base, openrouter/anthropic/claude-haiku-4.5")
assert accuracy_only.tied == ["large-cot"] and speed_only.tied == ["mini-fast"]
means = plots.candidate_means(cases, ["accuracy", "latency_ms", "cost_usd"])
front = plots.pareto_front(means)
assert front.sum() >= 3 and "base-v0" in set(means["candidate"][~front])
""",
    "04_scorers.ipynb": """
assert not broken.ok and fixed.ok
assert (framed["reward"].to_numpy() == scored_spec["score"].to_numpy()).all()
damaged = cases["input"].str["message"].str.contains("damaged").sum()
assert len(scored) == len(cases) and scored["error"].notna().sum() == damaged
assert table.idxmax()[str({"accuracy": 1, "speed": 0, "cost": 0})] == "large-cot"
first_two = table.nlargest(2, str({"accuracy": 0.7, "speed": 0.2, "cost": 0.1})).index
assert set(first_two) == {"base", "openrouter/anthropic/claude-haiku-4.5"}
assert weak.ok and useful.ok and weak.warnings and not useful.warnings
assert same_scores == {"weak_feedback": True, "useful_feedback": True}
assert feedback["weak_feedback"].summary()["failing naming expected"] == 0
assert feedback["useful_feedback"].summary()["failing naming expected"] == 1
assert 0.15 < judged.flip_rate < 0.4 and judged.mean.low < judged.mean.estimate < judged.mean.high
assert agree.pairs["kappa"].between(-1, 1).all() and agree.alpha.estimate < 0.6
""",
    "05_other_formats.ipynb": """
assert {"model", "other"} <= set(inspect_trials["model"])
assert comparison.n_tasks > 0
assert lm["format"].eq("lm-eval").all() and tb["format"].eq("terminal-bench").all()
assert set(own["candidate"]) == {"short", "long"}
shown = mk.breakdown(everything, by="eval", value="correct")
# the key only my table has is NA (not measured) for the others, never 0
assert shown["mean"].notna().sum() == 2 and shown["mean"].isna().sum() >= 2
""",
    "06_your_own_runs.ipynb": """
assert not JOBS.exists() and trials["job"].nunique() == 3  # the sample jobs stood in
assert trials["task_group"].notna().all() and trials["task_group"].nunique() == 4
assert set(both.pivot().columns) == {"micro", "macro"}
rates = wins.table["win_rate"].dropna()  # candidates with no counted trial have none
assert rates.between(0, 1).all() and len(rates) >= 5
assert pair.n_tasks > 0 and first != second
assert out.is_file() and out.stat().st_size > 10_000
assert len(summary) == overall["mean"].notna().sum() >= 5
assert (summary[f"{limit} for 90 % of it"] > 0).all()
""",
}
