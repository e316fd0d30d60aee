"""metrickit: load, aggregate, compare and tune evaluation rewards.

The public surface is small and listed in ``__all__``; everything else lives in
modules whose names start with an underscore or is reached through submodules
(``metrickit.plots``, ``metrickit.widgets``).

Names load on first use (PEP 562), so ``import metrickit`` costs a few milliseconds and
a process that needs one module (the CLI, the worker of
:func:`~metrickit.read_harbor_job`) imports only that module's dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from metrickit._current import observation, service_cost
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
        min_detectable_difference,
        paired_difference,
        tasks_needed,
    )
# Bound eagerly: the function shares its name with its submodule, and importing the
# submodule later (as other modules do) would otherwise leave the module object here.
from metrickit.aggregate import aggregate

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY = {
    "observation": "metrickit._current",
    "service_cost": "metrickit._current",
    "AggregationError": "metrickit.errors",
    "HarborJobError": "metrickit.errors",
    "JudgeNotConfiguredError": "metrickit.errors",
    "MetricError": "metrickit.errors",
    "MetrickitError": "metrickit.errors",
    "MetricScriptError": "metrickit.errors",
    "Problem": "metrickit.errors",
    "RewardFileError": "metrickit.errors",
    "RewardInputError": "metrickit.errors",
    "ScorerError": "metrickit.errors",
    "SpecError": "metrickit.errors",
    "job_metrics": "metrickit.harbor",
    "read_harbor_job": "metrickit.harbor",
    "summarize_job": "metrickit.harbor",
    "Comparison": "metrickit.metrics",
    "Metric": "metrickit.metrics",
    "compare_metrics": "metrickit.metrics",
    "filled_count": "metrickit.metrics",
    "harbor_metric": "metrickit.metrics",
    "metric": "metrickit.metrics",
    "pass_rate": "metrickit.metrics",
    "quantile": "metrickit.metrics",
    "weighted": "metrickit.metrics",
    "PassAtK": "metrickit.passk",
    "PassAtKSkipped": "metrickit.passk",
    "pass_at_k": "metrickit.passk",
    "filled_mask": "metrickit.rewards",
    "kind_column": "metrickit.rewards",
    "read_rewards": "metrickit.rewards",
    "reward_keys": "metrickit.rewards",
    "scan_rewards": "metrickit.scan",
    "CaseCheck": "metrickit.scorers",
    "ContractReport": "metrickit.scorers",
    "as_dspy_metric": "metrickit.scorers",
    "check_scorer": "metrickit.scorers",
    "load_scorer": "metrickit.scorers",
    "read_reward_spec": "metrickit.scorers",
    "score_cases": "metrickit.scorers",
    "score_summary": "metrickit.scorers",
    "set_judge": "metrickit.scorers",
    "run_metric_script": "metrickit.scripts",
    "script_metric": "metrickit.scripts",
    "write_metric_script": "metrickit.scripts",
    "RewardSpec": "metrickit.spec",
    "reward": "metrickit.spec",
    "Interval": "metrickit.stats",
    "RunComparison": "metrickit.stats",
    "StatsError": "metrickit.stats",
    "bootstrap_ci": "metrickit.stats",
    "breakdown": "metrickit.stats",
    "compare_runs": "metrickit.stats",
    "mcnemar_exact": "metrickit.stats",
    "mean_ci": "metrickit.stats",
    "paired_difference": "metrickit.stats",
    "min_detectable_difference": "metrickit.stats",
    "tasks_needed": "metrickit.stats",
}
_SUBMODULES = ("plots", "ranking", "stats", "widgets")


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # later lookups skip this function
        return value
    # Submodules (mk.plots, mk.widgets, mk.scorers, ...) load on first use too: no
    # matplotlib or ipywidgets import time unless they are used.
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"metrickit.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"metrickit.{name}":
                raise  # the submodule exists but needs something that is not installed
    raise AttributeError(f"module 'metrickit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


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
    "min_detectable_difference",
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
    "tasks_needed",
    "weighted",
    "write_metric_script",
]
