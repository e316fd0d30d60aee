"""The ``metrickit`` command line: a thin layer over the library.

``metrickit aggregate -i rewards.jsonl -o metrics.json [--metric mean|sum|min|max]``
honours Harbor's custom-metric contract (``-i/--input-path``, ``-o/--output-path``,
one JSON object written), so a Harbor dataset can use it as its ``metric.py``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from metrickit.errors import MetrickitError

__all__ = ["main"]

# metrickit.scoring.metric_scripts.FUNCTION_SIGNATURE, spelled out here so that --help does
# not import the library (a test keeps the two equal)
FUNCTION_SIGNATURE = "compute(rewards: list[dict | None]) -> dict[str, float]"

Command = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Command] = {}


def _command(name: str) -> Callable[[Command], Command]:
    def register(fn: Command) -> Command:
        _COMMANDS[name] = fn
        return fn

    return register


@_command("aggregate")
def _aggregate(args: argparse.Namespace) -> int:
    from metrickit.compute.aggregate import aggregate

    # Straight from the file, no frame: Harbor's answer for any valid input (keys named like
    # metadata columns too), in memory that grows with the data.
    result = aggregate(Path(args.input_path), args.metric)
    text = json.dumps(result)
    args.output_path.write_text(text)
    return 0


@_command("summarize")
def _summarize(args: argparse.Namespace) -> int:
    from metrickit.reporting.summary import summarize_path

    print(summarize_path(args.paths))
    return 0


@_command("new-metric")
def _new_metric(args: argparse.Namespace) -> int:
    from metrickit.errors import MetricError
    from metrickit.scoring.metric_scripts import write_metric_script

    weights = None
    if args.weights:
        weights = {}
        for item in args.weights.split(","):
            key, sep, value = item.partition("=")
            key = key.strip()
            try:
                if not sep:
                    raise ValueError(item)
                number = float(value)
            except ValueError:
                raise MetricError(f"--weights item {item!r} is not KEY=NUMBER") from None
            if key in weights:
                raise MetricError(f"--weights names {key!r} twice")
            weights[key] = number
    function = None
    if args.kind == "function":
        if not args.source:
            raise SystemExit("metrickit new-metric: error: --kind function needs --from FILE:FUNC")
        function = _load_function(args.source)
    out = write_metric_script(
        args.output,
        kind=args.kind,
        name=args.name,
        threshold=args.threshold,
        keys=args.keys or (),
        weights=weights,
        q=args.q,
        key=args.key,
        function=function,
        overwrite=args.force,
        sample=args.sample if args.kind == "function" else None,
    )
    print(
        f"wrote {out}: a Harbor metric.py ({args.kind}); run it with "
        f"`uv run {out} -i rewards.jsonl -o metrics.json`"
    )
    return 0


def _load_function(spec: str) -> Callable[..., object]:
    import importlib.util

    file, _, name = spec.rpartition(":")
    if not file or not name:
        raise SystemExit(f"metrickit new-metric: error: --from {spec!r} is not FILE.py:FUNCTION")
    module_spec = importlib.util.spec_from_file_location("_metrickit_user_metric", file)
    if module_spec is None or module_spec.loader is None:
        raise SystemExit(f"metrickit new-metric: error: cannot import {file}")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SystemExit(f"metrickit new-metric: error: {file} has no function {name!r}")
    return fn


@_command("check-scorer")
def _check_scorer(args: argparse.Namespace) -> int:
    from metrickit.scoring.scorers import check_scorer

    report = check_scorer(args.scorer, args.cases, n=None if args.all else args.n,
                          timeout=args.timeout)
    # every case: only the failures, grouped by reason (a line per case would be thousands)
    print(report.failures_text() if args.all else report)
    return 0 if report.ok else 1


@_command("report")
def _report(args: argparse.Namespace) -> int:
    from metrickit.reporting.html import run_report

    command = shlex.join(["metrickit", *args.argv])  # recorded under the report's provenance
    return run_report(args, command=command, spec_loader=_reward_spec)


def _reward_spec(path: Path) -> object:
    """The REWARD_SPEC of a scorer file, read without running the file."""
    from metrickit.errors import ScorerError
    from metrickit.scoring.contract import read_reward_spec
    from metrickit.scoring.spec import RewardSpec

    spec = read_reward_spec(path)
    if spec is None:
        raise ScorerError(f"{path}: defines no REWARD_SPEC (give --spec a scorer file with one)")
    return RewardSpec.from_dict(spec)


#: exit codes of ``metrickit gate`` (argparse itself exits 2 on bad arguments)
GATE_BAD_INPUT = 2


@_command("gate")
def _gate(args: argparse.Namespace) -> int:
    from metrickit.compute.gate import gate

    values = args.value or ["reward"]
    margins = args.margin or [0.02]
    if len(margins) not in (1, len(values)):
        raise _BadInput(
            f"{len(margins)} --margin for {len(values)} --value: give one margin for all "
            "values, or one per value in the same order"
        )
    margin = dict(zip(values, margins * len(values) if len(margins) == 1 else margins,
                      strict=False))
    direction: dict[str, Literal["higher", "lower"]] = {}
    for name in args.lower_is_better or []:
        direction[name] = "lower"
    for name in args.higher_is_better or []:
        direction[name] = "higher"
    if args.store is not None:
        from metrickit.compute.store import RunStore

        store = RunStore(args.store)
        base_run, cand_run = store.resolve(args.baseline), store.resolve(args.candidate)
        baseline, candidate = store.trials(base_run), store.trials(cand_run)
        names = (f"run {base_run}", f"run {cand_run}")
    else:
        from metrickit.io.registry import load

        baseline, candidate = load(Path(args.baseline)), load(Path(args.candidate))
        names = (args.baseline, args.candidate)
    picks = args.select or []
    if len(picks) > 2:
        raise _BadInput("--select is given once (for both sides) or twice (baseline, candidate)")
    if picks:
        baseline = _pick(baseline, picks[0], "baseline")
        candidate = _pick(candidate, picks[-1], "candidate")
        names = (f"{names[0]} · {picks[0]}", f"{names[1]} · {picks[-1]}")
    try:
        result = gate(baseline, candidate, value=values, margin=margin,
                      direction=direction or None, alpha=args.alpha, policy=args.policy)
    except MetrickitError as exc:
        raise _BadInput(str(exc)) from None
    from dataclasses import replace

    result = replace(result, baseline=names[0], candidate=names[1])
    text = result.to_markdown()
    print(text, end="")
    if args.markdown is not None:
        args.markdown.write_text(text, encoding="utf-8")
    if args.json is not None:
        args.json.write_text(result.to_json() + "\n", encoding="utf-8")
    return result.exit_code


def _pick(trials: Any, label: str, side: str) -> Any:
    import narwhals as nw

    nf = nw.from_native(trials, eager_only=True)
    have = list(dict.fromkeys(nf.get_column("candidate").to_list()))
    if label not in have:
        raise _BadInput(f"--select {label!r}: the {side} has no such candidate; it has {have}")
    return nf.filter(nw.col("candidate") == label).to_native()


class _BadInput(MetrickitError):
    """Input the gate cannot decide on: exit 2, not 1 (which means a regression)."""


@_command("store")
def _store(args: argparse.Namespace) -> int:
    from metrickit.compute.store import RunStore

    store = RunStore(args.store)
    if args.action == "add":
        from metrickit.io.registry import load

        trials = load(args.paths)
        added = store.add(trials)
        held = sorted(set(map(str, trials["run"])) - set(added))
        for run in added:
            print(f"added {run}")
        for run in held:
            print(f"unchanged {run} (in the store already)")
        return 0
    runs = store.runs()
    if not len(runs):
        print(f"{args.store}: no runs yet (metrickit store add PATH... --store {args.store})")
        return 0
    for row in runs.itertuples(index=False):
        when = row.started_at if row.started_at is not None and row.started_at == \
            row.started_at else row.added_at
        names = ", ".join(row.candidates[:3]) + (
            f" (+{len(row.candidates) - 3})" if len(row.candidates) > 3 else "")
        print(f"{row.run}  {str(when)[:19]}  {row.n_trials:,} trials  {row.n_tasks:,} tasks  "
              f"{names}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="metrickit", description="Load, aggregate and summarise evaluation rewards."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    agg = sub.add_parser(
        "aggregate",
        help="aggregate a reward JSONL file exactly as Harbor does (a drop-in metric.py)",
        description="Read Harbor reward JSONL and write one JSON object of named numbers.",
    )
    agg.add_argument(
        "-i",
        "--input-path",
        type=Path,
        required=True,
        help="rewards JSONL file (one JSON object or null per line)",
    )
    agg.add_argument(
        "-o",
        "--output-path",
        type=Path,
        required=True,
        help="where to write the JSON object of metrics",
    )
    agg.add_argument(
        "--metric",
        default="mean",
        choices=["mean", "sum", "min", "max"],
        help="Harbor aggregate to compute (default: mean)",
    )

    summ = sub.add_parser(
        "summarize",
        help="print a readable summary of reward files, jobs, logs, runs or trial tables",
        description="Print a summary of reward JSONL files (one per file), or of trial "
        "sources read together (Harbor jobs, Inspect AI logs, lm-evaluation-harness output, "
        "Terminal-Bench runs, saved trial tables) per evaluation.",
    )
    summ.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH",
        help="reward .jsonl(.gz) file(s), or Harbor job folder(s) or a folder of jobs, "
        "Inspect AI logs, lm-evaluation-harness output, Terminal-Bench runs, trial tables "
        "(.csv, .parquet, ...); the format is told from each path's own layout",
    )

    new = sub.add_parser(
        "new-metric",
        help="write a Harbor-ready metric.py for a built-in or your own metric",
        description="Write a standalone metric.py (stdlib only, PEP 723 header, -i/-o contract).",
        epilog=(
            "--kind function --from FILE.py:FUNC copies your function into the script. It "
            f"must be  {FUNCTION_SIGNATURE}:  one reward dict per trial (None for a trial "
            "without a reward; a dict may lack keys), returning named finite numbers, e.g. "
            '{"pass_rate": 0.8}. It is run on sample rows first (--sample, default '
            "Harbor's missing-dimensions example), in this process and as the written script "
            "with the standard library only, and refused if it raises or returns anything "
            "else (a bare number, non-string keys, NaN or inf). Imports and helpers it "
            "uses must be inside the function."
        ),
    )
    new.add_argument("name", help="name of the metric (the key it writes)")
    new.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    new.add_argument(
        "--force", action="store_true", help="overwrite the output file if it exists"
    )
    new.add_argument(
        "--kind",
        default="mean",
        choices=["mean", "sum", "min", "max", "pass_rate", "weighted", "quantile", "function"],
        help="what the script computes (mean/sum/min/max are Harbor's own)",
    )
    new.add_argument("--threshold", type=float, default=1.0, help="pass_rate: minimum reward")
    new.add_argument("--keys", nargs="*", help="pass_rate: keys that must pass (default all)")
    new.add_argument("--weights", help="weighted: KEY=W,KEY=W")
    new.add_argument("--q", type=float, default=0.5, help="quantile: which quantile")
    new.add_argument("--key", help="quantile: which reward key")
    new.add_argument(
        "--from",
        dest="source",
        metavar="FILE.py:FUNC",
        help=f"function: the function to copy in, {FUNCTION_SIGNATURE}",
    )
    new.add_argument(
        "--sample",
        type=Path,
        metavar="REWARDS.jsonl",
        help="function: reward rows to try the function on before writing (default: "
        "Harbor's missing-dimensions example)",
    )

    check = sub.add_parser(
        "check-scorer",
        help="check a scorer file against the scorer contract on sample cases",
        description="Run metric.py's score() on sample cases in a separate process and print "
        "a report; exit 1 when the contract is broken.",
    )
    check.add_argument("scorer", type=Path, help="scorer file (metric.py) defining score()")
    check.add_argument("--cases", type=Path, required=True, help="case table (JSONL)")
    check_n = check.add_mutually_exclusive_group()
    check_n.add_argument("--n", type=int, default=3,
                         help="sample cases to run, spread evenly over the table (default: 3)")
    check_n.add_argument("--all", action="store_true",
                         help="run every case and print only the failures, grouped by reason "
                         "with counts and a few examples")
    check.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per call, at most 600 (default: 60)"
    )

    gate = sub.add_parser(
        "gate",
        help="exit 0 pass, 1 regression, 3 inconclusive: a candidate against a baseline",
        description="Pair a candidate with a baseline on the tasks both ran and decide with a "
        "margin: pass (exit 0) when it is shown no worse than the margin, regression (exit 1) "
        "when shown worse by more, inconclusive (exit 3) when neither can be shown; 2 on bad "
        "input. Prints a Markdown summary for a pull-request comment.",
    )
    gate.add_argument("baseline", help="baseline: any path metrickit load reads, or a run of "
                      "--store (an id, 'latest' or 'previous')")
    gate.add_argument("candidate", help="candidate: as BASELINE")
    gate.add_argument("--value", action="append", metavar="NAME",
                      help="value to gate on (repeat for several; default reward)")
    gate.add_argument("--margin", action="append", type=float, metavar="M",
                      help="how much worse is a regression, in the value's units (one for all "
                      "values, or one per --value in order; default 0.02)")
    gate.add_argument("--alpha", type=float, default=0.05,
                      help="level of each one-sided decision (default 0.05)")
    gate.add_argument("--lower-is-better", action="append", metavar="NAME",
                      help="a value where less is better (cost, time and token columns are "
                      "by default)")
    gate.add_argument("--higher-is-better", action="append", metavar="NAME",
                      help="a value where more is better (the default for others)")
    gate.add_argument("--policy", choices=["0.25", "0.26"], default="0.25",
                      help="trials without a valid reward: 0.25 count as 0 (default), 0.26 "
                      "left out")
    gate.add_argument("--store", type=Path, help="a run store (metrickit store); BASELINE and "
                      "CANDIDATE are then run ids")
    gate.add_argument("--select", action="append", metavar="CANDIDATE",
                      help="the candidate to compare when a side holds several (once for both "
                      "sides, or twice: baseline then candidate)")
    gate.add_argument("--json", type=Path, metavar="FILE", help="also write the result as JSON")
    gate.add_argument("--markdown", type=Path, metavar="FILE",
                      help="also write the Markdown summary to FILE")

    store = sub.add_parser(
        "store", help="keep runs in a DuckDB run store: add and list",
        description="Add runs (any path metrickit load reads) to a run store, or list them. "
        "Adding a run again changes nothing; a changed run under a stored id is refused.",
    )
    store.add_argument("action", choices=["add", "list"])
    store.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                       help="add: jobs, logs, runs or trial tables to add")
    store.add_argument("--store", type=Path, default=Path("runs.duckdb"),
                       help="the store file (default runs.duckdb)")

    from metrickit.reporting.arguments import add_report_arguments

    add_report_arguments(sub.add_parser(
        "report",
        help="write a self-contained HTML (or Markdown) report of jobs, logs or a trial table",
        description="Write one HTML file that opens from file:// with no network requests "
        "(or Markdown with images beside it, for a .md output): candidates with "
        "task-clustered intervals and ties, pass@k, trade-off and Pareto front, the task "
        "heatmap, flips, errors, cost and tokens, the REWARD_SPEC ranking and provenance.",
    ))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command == "store" and args.action == "add" and not args.paths:
        parser.error("store add needs at least one PATH")
    failed = GATE_BAD_INPUT if args.command == "gate" else 1  # gate's 1 means a regression
    import warnings

    def one_line(message: Warning | str, category: type[Warning], *_: object,
                 **__: object) -> str:
        # a warning for a person at a terminal: the command and the sentence, not the line
        # of metrickit's source that raised it
        return f"metrickit {args.command}: warning: {message}\n"

    shown = warnings.formatwarning
    warnings.formatwarning = one_line
    try:
        return _COMMANDS[args.command](args)
    except MetrickitError as exc:
        _debug_traceback()
        print(f"metrickit {args.command}: error: {exc}", file=sys.stderr)
        return failed
    except OSError as exc:
        _debug_traceback()
        print(f"metrickit {args.command}: error: {exc}", file=sys.stderr)
        return failed
    except Exception as exc:
        # not an error metrickit raises on purpose: one line naming what failed, never a
        # traceback unless asked for
        _debug_traceback()
        text = " ".join(str(exc).split())
        text = text if len(text) <= 300 else text[:297] + "..."
        hint = ("the traceback is above" if _debugging()
                else "METRICKIT_DEBUG=1 shows the traceback")
        print(f"metrickit {args.command}: error: {args.command} failed unexpectedly with "
              f"{type(exc).__name__}" + (f": {text}" if text else "")
              + f" (a bug in metrickit or an input it does not check; {hint})",
              file=sys.stderr)
        return failed
    finally:
        warnings.formatwarning = shown


def console() -> int:
    """The ``metrickit`` command: :func:`main`, then Python's shutdown without the garbage
    collector's passes over every object the command imported.

    At exit Python clears each module and collects garbage as it goes, walking pandas',
    matplotlib's and scipy's objects several times: 0.35 s after a report, which itself
    takes about two seconds. ``gc.freeze()`` moves every object into the permanent
    generation, which those passes skip; ``atexit`` handlers still run and files are still
    closed (what the command wrote is flushed and closed before it returns). Only the
    command does this: :func:`main` called from Python leaves the collector as it was.
    """
    code = main()
    import gc

    gc.freeze()
    return code


def _debugging() -> bool:
    import os

    return os.environ.get("METRICKIT_DEBUG", "") not in ("", "0")


def _debug_traceback() -> None:
    """The traceback of the exception being handled, on stderr, when METRICKIT_DEBUG=1."""
    if _debugging():
        import traceback

        traceback.print_exc(file=sys.stderr)


if __name__ == "__main__":
    sys.exit(console())
