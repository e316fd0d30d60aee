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

    print(summarize_path(args.path))
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

    report = check_scorer(args.scorer, args.cases, n=args.n, timeout=args.timeout)
    print(report)
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
        help="print a readable summary of a reward file or Harbor job folder",
    )
    summ.add_argument("path", type=Path, help="reward .jsonl(.gz) file or Harbor job folder")

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
    check.add_argument("--n", type=int, default=3,
                       help="sample cases to run, spread evenly over the table (default: 3)")
    check.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per call, at most 600 (default: 60)"
    )

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
    try:
        return _COMMANDS[args.command](args)
    except MetrickitError as exc:
        print(f"metrickit {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"metrickit {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
