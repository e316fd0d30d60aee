"""Run every benchmark of the project and print one table.

Discovers ``benchmarks/bench_*.py``, runs each with ``--json`` (and ``--quick`` when the
script offers it and ``--quick`` is given here), each in its own process, with the fixed
seeds the scripts use to generate their data, and prints one Markdown table:

    operation | metrickit | baseline | ratio | peak memory

``ratio`` is baseline time / metrickit time (above 1: metrickit is faster). A row that
measures a size (``bench_install.py``: ``value``, ``unit``, ``goal``) shows the size against
its goal, and ``ratio`` is goal / size (above 1: within the goal). Peak memory is
the metrickit side's peak RSS as the script measured it (with the baseline's in
brackets); for a script that reports none, the peak RSS of the whole script process.

    python benchmarks/run.py            # full sizes (the 2 GB file takes a few minutes)
    python benchmarks/run.py --quick    # smaller sizes, a smoke run
    python benchmarks/run.py --only scan jobs
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _bench import machine  # noqa: E402

# Runs a script in this interpreter and reports the process's own peak RSS on stderr.
_WRAPPER = """
import json, resource, runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name="__main__")
finally:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("@@peak_mb " + json.dumps(peak), file=sys.stderr, flush=True)
"""


def discover() -> list[Path]:
    return sorted(HERE.glob("bench_*.py"))


def _supports(script: Path, flag: str) -> bool:
    return flag in script.read_text()


def run_script(script: Path, *, quick: bool, timeout: float) -> list[dict[str, Any]]:
    args = [sys.executable, "-c", _WRAPPER, str(script), "--json"]
    if quick and _supports(script, '"--quick"'):
        args.append("--quick")
    start = time.perf_counter()
    try:
        out = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, cwd=HERE.parent, check=False
        )
    except subprocess.TimeoutExpired:
        return [{"operation": script.stem, "error": f"timed out after {timeout:.0f} s"}]
    elapsed = time.perf_counter() - start
    process_peak = None
    for line in out.stderr.splitlines():
        if line.startswith("@@peak_mb "):
            process_peak = float(line.split(" ", 1)[1])
    if out.returncode != 0:
        tail = [ln for ln in out.stderr.splitlines() if not ln.startswith("@@")][-3:]
        return [{"operation": script.stem, "error": " / ".join(tail) or "failed"}]
    rows = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "operation" in obj:
            rows.append(_normalise(obj, process_peak))
    if not rows:
        rows.append({"operation": script.stem, "error": "printed no JSON rows"})
    for r in rows:
        r["script"] = script.name
        r["script_seconds"] = elapsed
    return rows


def _seconds(obj: dict[str, Any], side: str) -> float | None:
    if obj.get(f"{side}_s") is not None:
        return float(obj[f"{side}_s"])
    if obj.get(f"{side}_ms") is not None:
        return float(obj[f"{side}_ms"]) / 1000
    return None


def _normalise(obj: dict[str, Any], process_peak: float | None) -> dict[str, Any]:
    if obj.get("value") is not None:  # a size against its goal, not a time
        value, goal, unit = float(obj["value"]), float(obj["goal"]), obj["unit"]
        return {"operation": obj["operation"], "size": f"{value:,.2f} {unit}",
                "goal": f"goal: at most {goal:,g} {unit}", "ratio": goal / value if value
                else None, "note": obj.get("note", "")}
    mine, base = _seconds(obj, "metrickit"), _seconds(obj, "baseline")
    peak = obj.get("peak_mb")
    return {
        "operation": obj["operation"],
        "metrickit_s": mine,
        "baseline": obj.get("baseline", ""),
        "baseline_s": base,
        "ratio": base / mine if mine and base else None,
        "peak_mb": peak if peak is not None else process_peak,
        "peak_is_process": peak is None,
        "baseline_peak_mb": obj.get("baseline_peak_mb"),
        "note": obj.get("note", ""),
    }


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} MB"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| operation | metrickit | baseline | ratio | peak memory |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['operation']} | failed: {r['error']} | | | |")
            continue
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        if "size" in r:  # ratio: goal / size (above 1: within the goal)
            lines.append(f"| {r['operation']}; {r['note']} | {r['size']} | {r['goal']} | "
                         f"{ratio} | - |")
            continue
        base = f"{_time(r['baseline_s'])} ({r['baseline']})" if r["baseline"] else "-"
        peak = _mb(r["peak_mb"])
        if r["peak_is_process"] and r["peak_mb"] is not None:
            peak += " (whole script)"
        elif r["baseline_peak_mb"] is not None:
            peak += f" (baseline {_mb(r['baseline_peak_mb'])})"
        mine = _time(r["metrickit_s"])
        lines.append(f"| {r['operation']} | {mine} | {base} | {ratio} | {peak} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes (smoke run)")
    parser.add_argument("--only", nargs="*", help="run only scripts whose name contains these")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per script")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines too")
    args = parser.parse_args()
    scripts = discover()
    if args.only:
        scripts = [s for s in scripts if any(word in s.stem for word in args.only)]
    rows: list[dict[str, Any]] = []
    for script in scripts:
        print(f"running {script.name} ...", file=sys.stderr, flush=True)
        rows.extend(run_script(script, quick=args.quick, timeout=args.timeout))
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick" if args.quick else "full"
    print(f"metrickit benchmarks ({mode} sizes), {stamp}")
    print(f"machine: {machine()}")
    print("ratio = baseline time / metrickit time (above 1: metrickit is faster); for a "
          "size, goal / size (above 1: within the goal)\n")
    print(table(rows))
    if args.json:
        for r in rows:
            print(json.dumps(r))
    if any("error" in r for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
