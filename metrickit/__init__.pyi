# The public API of metrickit, listed once. Type checkers and IDEs read this stub;
# metrickit/__init__.py reads the same imports at run time to load each name on first use
# and to build __all__ (the names, not the submodules). Add a public name here (as
# `name as name`) and nowhere else.

# Submodules reached as attributes (mk.plots.tradeoff, ...); they load on first use too.
from metrickit import (
    examples as examples,
    widgets as widgets,
)
from metrickit.compute import (
    ranking as ranking,
    stats as stats,
)
from metrickit.reporting import (
    plots as plots,
)
from metrickit._core.frame import (
    filled_mask as filled_mask,
    kind_column as kind_column,
    reward_keys as reward_keys,
)
from metrickit.compute.aggregate import (
    aggregate as aggregate,
)
from metrickit.compute.agreement import (
    Agreement as Agreement,
    agreement as agreement,
    fleiss_kappa as fleiss_kappa,
)
from metrickit.compute.jobs import (
    job_metrics as job_metrics,
    summarize_job as summarize_job,
)
from metrickit.scoring.current import (
    observation as observation,
    service_cost as service_cost,
)
from metrickit.errors import (
    AggregationError as AggregationError,
    HarborJobError as HarborJobError,
    JudgeNotConfiguredError as JudgeNotConfiguredError,
    MetricError as MetricError,
    MetrickitError as MetrickitError,
    MetrickitWarning as MetrickitWarning,
    MetricScriptError as MetricScriptError,
    PassAtKSkipped as PassAtKSkipped,
    Problem as Problem,
    RewardFileError as RewardFileError,
    RewardInputError as RewardInputError,
    ScorerError as ScorerError,
    SpecError as SpecError,
    StatsError as StatsError,
    StoreError as StoreError,
    TrialSourceError as TrialSourceError,
)
from metrickit.io.harbor import (
    read_harbor_job as read_harbor_job,
)
from metrickit.compute.metrics import (
    Comparison as Comparison,
    Metric as Metric,
    StatedInterval as StatedInterval,
    compare_metrics as compare_metrics,
    filled_count as filled_count,
    harbor_metric as harbor_metric,
    metric as metric,
    pass_rate as pass_rate,
    quantile as quantile,
    weighted as weighted,
)
from metrickit.compute.groups import (
    WinRate as WinRate,
    macro_mean as macro_mean,
    win_rate as win_rate,
)
from metrickit.compute.gate import (
    GateResult as GateResult,
    gate as gate,
)
from metrickit.compute.store import (
    RunStore as RunStore,
)
from metrickit.compute.passk import (
    PassAtK as PassAtK,
    pass_at_k as pass_at_k,
)
from metrickit.io.inspect_logs import (
    read_inspect_log as read_inspect_log,
)
from metrickit.io.lm_eval_samples import (
    read_lm_eval_samples as read_lm_eval_samples,
)
from metrickit.io.terminal_bench import (
    read_terminal_bench as read_terminal_bench,
)
from metrickit.io.tidy import (
    concat_trials as concat_trials,
    trials_from_frame as trials_from_frame,
)
from metrickit.io.rewards import (
    read_rewards as read_rewards,
)
from metrickit.io.registry import (
    load as load,
)
from metrickit.io.scan import (
    scan_rewards as scan_rewards,
)
from metrickit.scoring.contract import (
    load_scorer as load_scorer,
    read_reward_spec as read_reward_spec,
)
from metrickit.reporting.html import (
    report as report,
)
from metrickit.scoring.feedback import (
    FeedbackReport as FeedbackReport,
    feedback_report as feedback_report,
)
from metrickit.scoring.judges import (
    JudgeRepeatability as JudgeRepeatability,
    judge_repeatability as judge_repeatability,
)
from metrickit.scoring.scorers import (
    CaseCheck as CaseCheck,
    ContractReport as ContractReport,
    as_dspy_metric as as_dspy_metric,
    check_scorer as check_scorer,
    score_cases as score_cases,
    score_summary as score_summary,
    set_judge as set_judge,
)
from metrickit.scoring.metric_scripts import (
    run_metric_script as run_metric_script,
    script_metric as script_metric,
    write_metric_script as write_metric_script,
)
from metrickit.scoring.spec import (
    RewardSpec as RewardSpec,
    reward as reward,
)
from metrickit.compute.stats import (
    Interval as Interval,
    RunComparison as RunComparison,
    bootstrap_ci as bootstrap_ci,
    breakdown as breakdown,
    compare_runs as compare_runs,
    mcnemar_exact as mcnemar_exact,
    mean_ci as mean_ci,
    min_detectable_difference as min_detectable_difference,
    paired_difference as paired_difference,
    tasks_needed as tasks_needed,
)
from metrickit.compute.power import (
    PilotVariance as PilotVariance,
    pilot_variance as pilot_variance,
)
from metrickit.compute.intervals import (
    quantile_ci as quantile_ci,
    sum_ci as sum_ci,
)

__version__: str
