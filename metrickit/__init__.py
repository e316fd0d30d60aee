"""metrickit: load, aggregate, compare and tune evaluation rewards.

The public surface is small and listed in ``__all__``; everything else lives in
modules whose names start with an underscore or is reached through submodules
(``metrickit.plots``, ``metrickit.widgets``).
"""

from metrickit.aggregate import aggregate
from metrickit.errors import (
    AggregationError,
    HarborJobError,
    MetricError,
    MetrickitError,
    MetricScriptError,
    Problem,
    RewardFileError,
    ScorerError,
    SpecError,
)
from metrickit.rewards import filled_mask, kind_column, read_rewards, reward_keys

__version__ = "0.1.0"

__all__ = [
    "AggregationError",
    "HarborJobError",
    "MetricError",
    "MetricScriptError",
    "MetrickitError",
    "Problem",
    "RewardFileError",
    "ScorerError",
    "SpecError",
    "__version__",
    "aggregate",
    "filled_mask",
    "kind_column",
    "read_rewards",
    "reward_keys",
]
