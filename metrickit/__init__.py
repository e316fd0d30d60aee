"""metrickit: load, aggregate, compare and tune evaluation rewards.

The public surface is small and listed in ``__all__``; everything else lives in
modules whose names start with an underscore or is reached through submodules
(``metrickit.plots``, ``metrickit.widgets``).
"""

from metrickit._current import observation, service_cost
from metrickit.aggregate import aggregate
from metrickit.errors import (
    AggregationError,
    HarborJobError,
    JudgeNotConfiguredError,
    MetricError,
    MetrickitError,
    MetricScriptError,
    Problem,
    RewardFileError,
    RewardInputError,
    ScorerError,
    SpecError,
)
from metrickit.harbor import job_metrics, read_harbor_job, summarize_job
from metrickit.metrics import (
    Comparison,
    Metric,
    compare_metrics,
    filled_count,
    harbor_metric,
    metric,
    pass_rate,
    quantile,
    weighted,
)
from metrickit.passk import PassAtK, PassAtKSkipped, pass_at_k
from metrickit.rewards import filled_mask, kind_column, read_rewards, reward_keys
from metrickit.scan import scan_rewards
from metrickit.scorers import (
    CaseCheck,
    ContractReport,
    as_dspy_metric,
    check_scorer,
    load_scorer,
    read_reward_spec,
    score_cases,
    score_summary,
    set_judge,
)
from metrickit.scripts import run_metric_script, script_metric, write_metric_script
from metrickit.spec import RewardSpec, reward
from metrickit.stats import (
    Interval,
    RunComparison,
    StatsError,
    bootstrap_ci,
    breakdown,
    compare_runs,
    mcnemar_exact,
    mean_ci,
    paired_difference,
)

__version__ = "0.1.0"

_SUBMODULES = ("plots", "stats", "widgets")


def __getattr__(name: str) -> object:
    # mk.plots / mk.widgets load on first use, so `import metrickit` stays light and does
    # not need matplotlib's or ipywidgets' import time.
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"metrickit.{name}")
    raise AttributeError(f"module 'metrickit' has no attribute {name!r}")

__all__ = [
    "AggregationError",
    "CaseCheck",
    "Comparison",
    "ContractReport",
    "HarborJobError",
    "Interval",
    "JudgeNotConfiguredError",
    "Metric",
    "MetricError",
    "MetricScriptError",
    "MetrickitError",
    "PassAtK",
    "PassAtKSkipped",
    "Problem",
    "RewardFileError",
    "RewardInputError",
    "RewardSpec",
    "RunComparison",
    "ScorerError",
    "SpecError",
    "StatsError",
    "__version__",
    "aggregate",
    "as_dspy_metric",
    "bootstrap_ci",
    "breakdown",
    "check_scorer",
    "compare_metrics",
    "compare_runs",
    "filled_count",
    "filled_mask",
    "harbor_metric",
    "job_metrics",
    "kind_column",
    "load_scorer",
    "mcnemar_exact",
    "mean_ci",
    "metric",
    "observation",
    "paired_difference",
    "pass_at_k",
    "pass_rate",
    "quantile",
    "read_harbor_job",
    "read_reward_spec",
    "read_rewards",
    "reward",
    "reward_keys",
    "run_metric_script",
    "scan_rewards",
    "score_cases",
    "score_summary",
    "script_metric",
    "service_cost",
    "set_judge",
    "summarize_job",
    "weighted",
    "write_metric_script",
]
