"""Readable text summaries for a person at a terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

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


def summarize_path(path: Path) -> str:
    """Summary of a reward file or a Harbor job folder."""
    from metrickit.io.rewards import read_rewards

    path = Path(path)
    if path.is_dir():
        from metrickit.compute.jobs import summarize_job

        return str(summarize_job(path))
    return summarize_rewards(read_rewards(path), title=str(path))
