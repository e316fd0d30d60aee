"""Readable text summaries for a person at a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TRIAL_READERS", "summarize_path", "summarize_rewards", "trial_source"]


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


def _read_inspect(path: Path) -> Any:
    from metrickit.io.inspect_logs import read_inspect_log

    return read_inspect_log(path)


def _read_lm_eval(path: Path) -> Any:
    from metrickit.io.lm_eval_samples import read_lm_eval_samples

    return read_lm_eval_samples(path)


def _read_terminal_bench(path: Path) -> Any:
    from metrickit.io.terminal_bench import read_terminal_bench

    return read_terminal_bench(path)


#: The reader of each trial format :func:`trial_source` names (other than Harbor jobs).
TRIAL_READERS = {
    "Inspect AI log": _read_inspect,
    "lm-evaluation-harness output": _read_lm_eval,
    "Terminal-Bench run": _read_terminal_bench,
}


def trial_source(path: Path) -> str | None:
    """Which trial reader a path is for, from its name and files: ``"harbor"`` for any other
    folder, None for a reward file."""
    if path.is_file():
        return "Inspect AI log" if path.suffix in (".eval", ".json") else None
    if not path.is_dir():
        return None
    if (path / "results.json").is_file() and (path / "run_metadata.json").is_file():
        return "Terminal-Bench run"
    if next(path.rglob("results_*.json"), None) is not None:
        return "lm-evaluation-harness output"
    if next(path.glob("*.eval"), None) is not None:
        return "Inspect AI log"
    return "harbor"


def summarize_path(path: Path) -> str:
    """Summary of a reward file, a Harbor job folder, an Inspect AI log (``.eval``/``.json``),
    an lm-evaluation-harness output folder or a Terminal-Bench 1 run folder."""
    from metrickit.compute.jobs import summarize_job, summarize_trials
    from metrickit.io.rewards import read_rewards

    path = Path(path)
    source = trial_source(path)
    if source == "harbor":
        return summarize_job(path)
    if source is not None:
        trials = TRIAL_READERS[source](path)
        return summarize_trials(trials, title=f"{source} {path}", why="every finished trial counts")
    return summarize_rewards(read_rewards(path), title=str(path))
