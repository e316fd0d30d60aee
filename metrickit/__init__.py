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
from metrickit.rewards import filled_mask, kind_column, read_rewards, reward_keys
from metrickit.scripts import run_metric_script, script_metric, write_metric_script
from metrickit.spec import RewardSpec, reward

__version__ = "0.1.0"

__all__ = [
    "AggregationError",
    "Comparison",
    "Metric",
    "HarborJobError",
    "JudgeNotConfiguredError",
    "MetricError",
    "MetricScriptError",
    "MetrickitError",
    "Problem",
    "RewardFileError",
    "RewardInputError",
    "RewardSpec",
    "ScorerError",
    "SpecError",
    "__version__",
    "aggregate",
    "compare_metrics",
    "filled_count",
    "harbor_metric",
    "metric",
    "pass_rate",
    "quantile",
    "run_metric_script",
    "script_metric",
    "weighted",
    "write_metric_script",
    "filled_mask",
    "kind_column",
    "observation",
    "read_rewards",
    "reward",
    "reward_keys",
    "service_cost",
]
