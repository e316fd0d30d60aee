"""Readable text summaries for a person at a terminal."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from metrickit._core.frame import Policy

__all__ = ["summarize_path", "summarize_rewards"]


def _fmt(value: float | int) -> str:
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)
    ]
    lines = [
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w)
            for i, (h, w) in enumerate(zip(header, widths, strict=True))
        )
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
    return "\n".join(lines)


def summarize_rewards(frame: Any, *, title: str = "rewards") -> str:
    """Rows, null/empty rows, rows missing a key, and per-key mean/min/max (zero-filled)."""
    import narwhals as nw

    from metrickit._core.frame import reward_arrays
    from metrickit.compute.aggregate import aggregate

    nf = nw.from_native(frame, eager_only=True)
    n = len(nf)
    status = (
        nf.get_column("_status").cast(nw.String).to_numpy()
        if "_status" in nf.columns
        else np.full(n, "ok")
    )
    keys, values, _, present = reward_arrays(frame)
    missing_any = np.zeros(n, dtype=bool)
    for key in keys:
        missing_any |= ~present[key]
    missing_any &= status == "ok"
    lines = [
        f"{title}",
        f"  rows: {n}   null rows: {int((status == 'null').sum())}   "
        f"empty {{}} rows: {int((status == 'empty').sum())}   "
        f"rows missing a key: {int(missing_any.sum())}",
        "",
    ]
    if keys:
        rows = []
        for key in keys:
            v = values[key]
            rows.append(
                [
                    key,
                    str(int(present[key].sum())),
                    str(int((~present[key]).sum())),
                    _fmt(float(v.mean())) if n else "-",
                    _fmt(float(v.min())) if n else "-",
                    _fmt(float(v.max())) if n else "-",
                ]
            )
        lines.append(_table(["key", "present", "filled 0", "mean", "min", "max"], rows))
        lines.append("")
    if n:
        lines.append(f"Harbor mean: {aggregate(frame, 'mean')}")
    else:
        lines.append("Harbor mean: {'mean': 0} (no rows)")
    return "\n".join(lines)


def _harbor_policy(jobs: Sequence[Path]) -> tuple[Policy, str]:
    """Harbor's policy for jobs read together, by the rule of :func:`metrickit.summarize_job`:
    0.26 when every job's ``result.json`` was written by Harbor >= 0.26 (it has
    ``schema_version``), else 0.25."""
    versions = set()
    for job in jobs:
        try:
            obj = json.loads((job / "result.json").read_bytes())
        except (OSError, ValueError, RecursionError):
            continue  # a job still running has no result.json yet
        if isinstance(obj, dict):
            versions.add("0.26" if "schema_version" in obj else "0.25")
    if versions == {"0.26"}:
        return "0.26", "the job result.json has schema_version: written by Harbor >= 0.26"
    return "0.25", "Harbor 0.25's rule, as the metrics page describes"


def summarize_path(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> str:
    """Summary of one path or several, whatever their format (:func:`metrickit.load` tells
    it): reward JSONL files one by one (rows, fills, per-key statistics, Harbor's mean);
    trial sources (Harbor jobs, Inspect AI logs, lm-evaluation-harness output,
    Terminal-Bench runs, trial tables) read together into one trial table and summarised
    per evaluation (Harbor jobs alone: under the policy their files say, else every
    finished trial counts).

    Raises
    ------
    TrialSourceError
        A path that fits no format, reward files mixed with trial sources (see
        :func:`metrickit.load`).
    """
    from metrickit.compute.jobs import summarize_trials
    from metrickit.io.registry import FORMATS, HARBOR, read_sources, sources

    given = ([Path(paths)] if isinstance(paths, str | os.PathLike)
             else [Path(p) for p in paths])
    found = sources(given)
    formats = list(dict.fromkeys(s.format for s in found))
    if not any(FORMATS[f].trials for f in formats):  # reward files: one summary each
        return "\n\n".join(
            summarize_rewards(read_sources([s]), title=str(s.path)) for s in found)
    trials = read_sources(found, progress=False)  # refuses rewards mixed with trials
    shown = " ".join(str(p) for p in given)
    if formats == [HARBOR]:
        policy, why = _harbor_policy([s.path for s in found])
        return summarize_trials(trials, title=f"Harbor job {shown}", policy=policy, why=why)
    title = " + ".join(FORMATS[f].title for f in formats)
    return summarize_trials(trials, title=f"{title} {shown}", why="every finished trial counts")
