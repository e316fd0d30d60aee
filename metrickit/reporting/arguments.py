"""The arguments of ``metrickit report``, apart from the report itself: the command line
builds its parser on every call (``metrickit aggregate`` is Harbor's metric.py), so this
module imports only ``argparse`` and ``pathlib``."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_report_arguments"]


def add_report_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``metrickit report`` to ``parser``; returns it."""
    parser.add_argument(
        "sources", nargs="+", type=Path, metavar="SOURCE",
        help="Harbor job folder(s) or a folder of jobs; Inspect AI logs (.eval/.json, or a "
        "folder of them); lm-evaluation-harness output or Terminal-Bench run folders; or a "
        "trial table (.csv, .parquet, .jsonl): one saved from "
        "metrickit's readers, or any table with one row per trial, task_name and the value "
        "column (optional: the candidate column, total_ms, cost_usd)",
    )
    parser.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                        help="file to write: .html (default report.html) or .md (Markdown, "
                        "images in <name>_files/)")
    parser.add_argument("--value", help="reward column to rank by (default: every reward "
                        "key, each ranked in turn; 'reward' first)")
    parser.add_argument("--spec", type=Path, metavar="METRIC.py",
                        help="a scorer file whose REWARD_SPEC ranks the candidates too")
    parser.add_argument("--by", default="candidate",
                        help="candidate column (default: candidate, one per recorded "
                        "configuration; runs with identical recorded configurations pool "
                        "into one, and the report says which did)")
    parser.add_argument("--title", help="page title")
    return parser
