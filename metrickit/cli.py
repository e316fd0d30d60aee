"""The ``metrickit`` command line: a thin layer over the library.

``metrickit aggregate -i rewards.jsonl -o metrics.json [--metric mean|sum|min|max]``
honours Harbor's custom-metric contract (``-i/--input-path``, ``-o/--output-path``,
one JSON object written), so a Harbor dataset can use it as its ``metric.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from metrickit.errors import MetrickitError

__all__ = ["main"]

Command = Callable[[argparse.Namespace], int]
_COMMANDS: dict[str, Command] = {}


def _command(name: str) -> Callable[[Command], Command]:
    def register(fn: Command) -> Command:
        _COMMANDS[name] = fn
        return fn

    return register


@_command("aggregate")
def _aggregate(args: argparse.Namespace) -> int:
    from metrickit.aggregate import aggregate
    from metrickit.rewards import read_rewards

    frame = read_rewards(args.input_path)
    result = aggregate(frame, args.metric)
    text = json.dumps(result)
    args.output_path.write_text(text)
    return 0


@_command("summarize")
def _summarize(args: argparse.Namespace) -> int:
    from metrickit.summary import summarize_path

    print(summarize_path(args.path))
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
        help="print a readable summary of a reward file or Harbor job folder",
    )
    summ.add_argument("path", type=Path, help="reward .jsonl(.gz) file or Harbor job folder")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
