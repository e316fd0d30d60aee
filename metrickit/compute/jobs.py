"""What a Harbor job reports: its metrics per evaluation (Harbor 0.25 or 0.26 policy) and the
summary of a job folder with task-clustered intervals and pass@k."""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from metrickit._core.frame import Policy, rows_for_policy
from metrickit._core.values import KIND_PREFIX
from metrickit.io.harbor import read_harbor_job
from metrickit.io.harbor_trials import find_jobs, load_json


def job_metrics(
    trials: Any,
    *,
    policy: Policy = "0.25",
    metric: str = "mean",
    by: str | Sequence[str] = "eval",
) -> dict[Any, dict[str, Any]]:
    """The ``metrics`` Harbor stores in the job's ``result.json``, per evaluation.

    Parameters
    ----------
    trials
        A table from :func:`read_harbor_job`.
    policy
        ``"0.25"`` (default, as Harbor's metrics page describes): every finished trial
        counts; a trial without a reward counts as 0. ``"0.26"``: only trials with
        ``reward_valid`` count (a reward, and no exception that invalidates it); an
        evaluation with no such trial gets ``{}`` (Harbor writes ``"metrics": []``).
        Running trials never count: Harbor computes metrics over finished trials.
    metric
        ``"mean"`` (Harbor's default), ``"sum"``, ``"min"`` or ``"max"``.
    by
        Grouping column(s); ``"eval"`` is Harbor's.

    Returns
    -------
    dict
        ``{eval_key: {"mean": ...}}``, equal to ``stats.evals[eval_key].metrics[0]``.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.read_harbor_job("data/harbor_jobs/2025-06-02__10-00-00")
    >>> job_metrics(trials, policy="0.26")
    {'terminus-2__claude-sonnet-4-5__terminal-bench-mini': {'mean': 0.5217391304347826}}
    """
    from metrickit._core.frame import group_indices
    from metrickit.compute.aggregate import aggregate

    rows = rows_for_policy(trials, policy)
    out = aggregate(rows, metric, by=by) if len(rows) else {}
    # Evaluations with no counted trial: Harbor's "metrics": [] (listed, not dropped).
    # A running trial whose config.json is not written yet has no evaluation: not listed.
    return {label: out.get(label, {}) for label in group_indices(_known_rows(trials, by), by)}



def _known_rows(trials: Any, by: str | Sequence[str]) -> Any:
    """``trials`` without the running trials whose group is unknown
    (:func:`metrickit._core.frame.ungrouped_running`: Harbor creates a trial folder before
    it writes the trial's ``config.json``). Such a trial counts nowhere, so it is no group.
    """
    import narwhals as nw

    from metrickit._core.frame import ungrouped_running

    nf = nw.from_native(trials, eager_only=True)
    by_cols = [by] if isinstance(by, str) else list(by)
    if any(c not in nf.columns for c in by_cols):
        return trials  # group_indices names the missing column
    unknown = ungrouped_running(trials, by_cols)
    if not unknown.any():
        return trials
    keep = nw.new_series("keep", ~unknown, nw.Boolean, backend=nw.get_native_namespace(nf))
    return nf.filter(keep).to_native()



def _fmt_int(value: Any) -> str:
    import pandas as pd

    return "-" if pd.isna(value) else f"{int(value):,}"



def _detect_policy(path: Path) -> tuple[Policy, str]:
    versions = set()
    for job in find_jobs(path):
        obj = load_json(job / "result.json")
        if isinstance(obj, dict):
            versions.add("0.26" if "schema_version" in obj else "0.25")
    if versions == {"0.26"}:
        return "0.26", "the job result.json has schema_version: written by Harbor >= 0.26"
    return "0.25", "Harbor 0.25's rule, as the metrics page describes"



def summarize_job(
    path: str | os.PathLike[str], *, policy: Policy | Literal["auto"] = "auto"
) -> str:
    """Readable per-candidate summary of a Harbor job folder (``metrickit summarize``).

    Per candidate (:func:`summarize_trials`): trials (finished / running), mean ± 95% CI of
    each reward key (clustered by task when tasks have several attempts), and per Harbor
    evaluation it holds, Harbor's metric under ``policy`` and pass@k (Harbor's contract:
    those stay per ``eval``); errors by type, tokens and cost. ``policy="auto"`` uses 0.26
    when every job's ``result.json`` was written by Harbor >= 0.26 (it has
    ``schema_version``), else 0.25.
    """
    why = "chosen by the caller"
    if policy == "auto":
        policy, why = _detect_policy(Path(path))
    trials = read_harbor_job(path, progress=False)
    return summarize_trials(
        trials, title=f"Harbor job {Path(path)}", policy=policy, why=why
    )


def summarize_trials(
    trials: Any, *, title: str, policy: Policy = "0.25", why: str = "chosen by the caller"
) -> str:
    """The summary of :func:`summarize_job` for any trial table (Harbor, Inspect AI,
    lm-evaluation-harness, Terminal-Bench, ``trials_from_frame``).

    One block per candidate (``by="candidate"``; per ``eval`` for a table without a
    ``candidate`` column). The trials that count are
    :func:`metrickit._core.frame.counted_trials`'s under ``policy``: the intervals are for
    the number Harbor reports. Harbor's metrics and pass@k are listed per evaluation
    (``eval``), exactly as Harbor computes them. A reward key absent from a trial's
    evaluation (NA) is left out of that key's mean, never counted as 0.
    """
    import narwhals as nw
    import pandas as pd

    from metrickit._core.frame import counted_trials, group_indices, reward_keys, running_rows
    from metrickit.compute.passk import PassAtKSkipped, pass_at_k
    from metrickit.compute.stats import mean_ci

    trials = nw.from_native(trials, eager_only=True).to_pandas()
    keys = reward_keys(trials)
    lines = [f"{title}: {len(trials)} trial(s)", f"policy {policy} ({why})"]
    known = _known_rows(trials, "eval")
    if len(known) < len(trials):
        lines.append(
            f"{len(trials) - len(known)} running trial(s) without config.json yet "
            "(evaluation not known, not counted)"
        )
    by = "candidate" if "candidate" in known.columns else "eval"
    for label, idx in group_indices(known, by).items():
        sub = known.iloc[idx]
        is_running = running_rows(sub)
        running = int(is_running.sum())
        done = sub[~is_running]
        lines.append("")
        lines.append(f"{label}")
        lines.append(
            f"  trials: {len(done)} finished, {running} running; tasks: "
            f"{done['task_name'].nunique()}; with reward: {int(done['has_reward'].sum())}"
        )
        # The trials Harbor's policy counts; the estimate is the mean over tasks of each
        # task's mean (the sampling unit), Harbor's mean over trials beside it when it differs
        counted = counted_trials(sub, policy=policy).frame
        for key in keys:
            present = done[KIND_PREFIX + key].astype(str) != "missing"
            values = pd.to_numeric(counted[key]).to_numpy(dtype=float, na_value=np.nan)
            measured = ~np.isnan(values)  # NA: the key is absent from the evaluation
            if not present.any() or not measured.any():
                continue
            ci = mean_ci(values[measured], clusters=counted["task_name"].to_numpy()[measured])
            spread = (
                "" if math.isnan(ci.half_width) else f" [{ci.low:.4f}, {ci.high:.4f}]"
            )
            tasks = f", tasks={ci.n_clusters}" if ci.n_clusters else ""
            note = f"; {ci.note}" if ci.note else ""
            left = (f"; {int((~measured).sum())} trial(s) without it (NA) left out"
                    if not measured.all() else "")
            harbor = float(values[measured].mean())
            beside = ("" if abs(harbor - ci.estimate) < 5e-5
                      else f"; Harbor's mean over trials {harbor:.4f}")
            lines.append(
                f"  {key}: mean {ci.estimate:.4f}{spread} (mean over tasks, 95% CI, "
                f"{ci.method}, trials={ci.n}{tasks}, policy {policy}{note}{left}){beside}"
            )
        # Harbor computes its metrics and pass@k per evaluation of one job: never across
        # runs, even when their evaluation keys match (two runs of one agent, models not
        # recorded, share the key agent__dataset)
        split = ["run", "eval"] if "run" in sub.columns else ["eval"]
        parts = group_indices(sub, split)
        for part_label, rows in parts.items():
            part = sub.iloc[rows]
            ev = part_label[-1] if isinstance(part_label, tuple) else part_label
            several = len({p[0] for p in parts} if split[0] == "run" else {None}) > 1
            indent = "  "
            if by != "eval" or several:
                where = f" in run {part_label[0]}" if several else ""
                lines.append(f"  evaluation {ev}{where}:")
                indent = "    "
            metrics = job_metrics(part, policy=policy)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PassAtKSkipped)
                passk = pass_at_k(part, policy=policy, by="eval")  # Harbor's grouping
            lines += _harbor_lines(indent, ev, policy, metrics, passk)
        errors = done["exception_type"].dropna().value_counts()
        if len(errors):
            listed = ", ".join(f"{name} {count}" for name, count in errors.items())
            lines.append(f"  errors: {int(errors.sum())} ({listed})")
        else:
            lines.append("  errors: 0")
        cost = pd.to_numeric(done["cost_usd"]).sum(min_count=1)
        lines.append(
            "  tokens: input {} (cache {}), output {}; cost ${}".format(
                _fmt_int(done["n_input_tokens"].sum(min_count=1)),
                _fmt_int(done["n_cache_tokens"].sum(min_count=1)),
                _fmt_int(done["n_output_tokens"].sum(min_count=1)),
                "-" if pd.isna(cost) else f"{cost:.4f}",
            )
        )
    return "\n".join(lines)


def _harbor_lines(
    indent: str, label: Any, policy: str, metrics: dict[Any, Any], passk: Any
) -> list[str]:
    """One evaluation's Harbor metrics and pass@k, as the summary prints them."""
    lines = [f"{indent}Harbor metrics ({policy}): {metrics.get(label, {})}"]
    if label in passk.skipped:
        lines.append(f"{indent}pass@k: not computed ({passk.skipped[label]})")
    elif passk.harbor.get(label):
        shown = ", ".join(f"pass@{k} {v:.4f}" for k, v in passk.harbor[label].items())
        lines.append(f"{indent}{shown}")
    else:
        lines.append(f"{indent}pass@k: none (a task has fewer than 2 finished trials)")
    return lines
