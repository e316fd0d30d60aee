"""`make demo`: the main job on the sample data, ending in PNG files under out/.

Run as ``python -m metrickit._demo [DATA_DIR] [OUT_DIR]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    import metrickit as mk
    from metrickit.reporting import plots

    args = argv if argv is not None else sys.argv[1:]
    data = Path(args[0]) if args else Path("data")
    out = Path(args[1]) if len(args) > 1 else Path("out")
    out.mkdir(parents=True, exist_ok=True)

    print("== Harbor aggregates of the sample reward files")
    for path in sorted((data / "rewards").glob("*.jsonl")):
        print(f"{path.name:<24} mean {json.dumps(mk.aggregate(path))}")

    bench = data / "harbor_jobs" / "2025-07-14__09-00-00"
    print(f"\n== A Harbor job: 6 agent/model pairs x 40 tasks x 4 attempts ({bench})")
    trials = mk.read_harbor_job(bench, progress=False)
    table = mk.breakdown(trials, by=["agent", "model"]).sort_values("mean", ascending=False)
    table["cost_per_solve"] = table["mean_cost_usd"] / table["mean"]
    table["minutes"] = table["mean_latency_ms"] / 60_000
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("pass rate per model (95 % CI clustered by task; cost in USD per trial):")
        print(table[["agent", "model", "n", "n_tasks", "mean", "ci_low", "ci_high", "n_errors",
                     "mean_cost_usd", "cost_per_solve", "minutes"]].round(3)
              .to_string(index=False))
    ranked = mk.compare_metrics(trials, {"pass rate": "reward"}, by="model").table
    best = ranked[ranked["best_group"]]["group"].tolist()
    print(f"\nbest at 95 % (ranks over task resamples): {', '.join(best)}")
    shared = ranked[ranked["rank_low"] < ranked["rank_high"]]
    for rank_range, rows in shared.groupby(["rank_low", "rank_high"]):
        print(f"  ranks {rank_range[0]}-{rank_range[1]} shared by: {', '.join(rows['group'])}")
    means = plots.candidate_means(trials, ["reward", "total_ms", "cost_usd"], by="model")
    front = plots.pareto_front(means, maximize=("reward",), minimize=("total_ms", "cost_usd"))
    print(f"Pareto front (pass rate / time / cost): {', '.join(means['model'][front])}; "
          f"dominated: {', '.join(means['model'][~front]) or 'none'}")
    fig, axes = plt.subplots(1, 2, figsize=(15, 9), layout="constrained",
                             gridspec_kw={"width_ratios": [1, 1.3]})
    plots.task_heatmap(trials, by="model", ax=axes[0])
    plots.tradeoff(trials, x="total_ms", y="reward", color="cost_usd", by="model", ax=axes[1])
    fig.savefig(out / "harbor_job.png", dpi=100)
    plt.close(fig)

    print("\n== Metric definitions side by side (data/rewards/runs)")
    runs = mk.read_rewards(str(data / "rewards" / "runs" / "*.jsonl"))
    runs["run"] = [Path(s).stem for s in runs["_source"].astype(str)]
    import narwhals as nw

    cmp = mk.compare_metrics(runs, {
        "harbor mean": "mean",
        "strict": mk.pass_rate(1.0, key="correctness"),
        "lenient": nw.col("correctness") >= 0.5,
        "weighted": mk.weighted({"correctness": 0.8, "style": 0.2}),
    }, by="run")
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        print(cmp.pivot("value").round(3))
        print("\nrank (1 = best) per metric:")
        print(cmp.pivot("rank"))
    print("\nbest per metric at 95 % (tied candidates listed together):")
    for name, members in cmp.best().items():
        verdict = members[0] if len(members) == 1 else "tied: " + ", ".join(members)
        print(f"  {name:<26} {verdict}")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    plots.metric_intervals(cmp, ax=axes[0])
    plots.rank_bump(cmp, ax=axes[1])
    fig.savefig(out / "compare_metrics.png", dpi=100)
    plt.close(fig)

    print("\n== Accuracy / speed / cost trade-off: 200 tickets x 6 candidates "
          "(data/cases/tickets.jsonl)")
    cases = pd.read_json(data / "cases" / "tickets.jsonl", lines=True)
    spec = mk.RewardSpec.from_dict({"weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
                                    "accuracy": {}, "speed": {"reference": 2000},
                                    "cost": {"reference": 0.01}})
    scored = spec.score_frame(cases)
    table = plots.candidate_means(scored, ["reward", "accuracy", "latency_ms", "cost_usd"])
    shown = ["candidate", "n_tasks", "reward", "reward_low", "reward_high", "accuracy",
             "latency_ms", "cost_usd", "cost_per_success", "p_front"]
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table[shown].sort_values("reward", ascending=False).round(4).to_string(index=False))
    reward = mk.compare_metrics(scored, {"composite reward": "reward"}, by="candidate")
    members = reward.best()["composite reward"]
    if len(members) == 1:
        print(f"\nbest composite reward at 95 % (resampling tickets): {members[0]}")
    else:
        print(f"\ntied for the best composite reward at 95 %: {', '.join(members)}")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), layout="constrained")
    plots.tradeoff(
        scored,
        highlight=members[0] if len(members) == 1 else None,
        tied=members if len(members) > 1 else None,
        ax=axes[0],
    )
    plots.reward_distribution(scored, ax=axes[1])
    fig.savefig(out / "tradeoff.png", dpi=100)
    plt.close(fig)

    written = ", ".join(str(out / n) for n in ("harbor_job.png", "compare_metrics.png",
                                                     "tradeoff.png"))
    print(f"\nwrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
