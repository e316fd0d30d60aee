"""How a result object shows itself in a notebook and a console: one pattern for all.

Every result object (a comparison, pass@k, a gate, a contract report, ...) shows the same
three things in the same order: its headline (the verdict sentence its ``str()`` opens
with), a small table (the head of its ``.table``) and its notes. :func:`result_html` builds
the ``_repr_html_`` of that, :func:`result_repr` the compact ``__repr__``; a class's methods
are one call each. Counts print as integers (:func:`tidy_counts`) and candidate labels as
the shortest names that still tell them apart (:func:`short_labels`).
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "LABEL_WIDTH", "MAX_ROWS", "TABLE_WIDTH", "ellipsize", "result_html", "result_repr",
    "short_column", "short_labels", "short_names", "tidy_counts",
]

#: rows of a result's table shown in a notebook or a repr (the object holds them all)
MAX_ROWS = 15

#: columns that hold counts: shown as integers however they are stored
_COUNT_NAMES = ("n", "count", "cases", "failing", "wins", "losses", "ties", "k")
_COUNT_PREFIXES = ("n_", "min_trials", "with ", "failing ")

_FILE_SUFFIXES = (".jsonl", ".json", ".csv", ".parquet", ".txt", ".gz", ".zst", ".bz2")
LABEL_WIDTH = 32  # characters of a candidate name kept in ticks and legends
#: characters of a candidate name kept in a result's headline and table: enough that only
#: the parts every candidate shares go, and a name is never cut
TABLE_WIDTH = 64
_PART = " · "  # between the parts of a candidate label (metrickit._core.identity.SEP)

_STYLE = (
    "<style>.metrickit-result table{border-collapse:collapse;font-size:12px;margin:4px 0}"
    ".metrickit-result th,.metrickit-result td{padding:2px 8px;text-align:right;"
    "border-bottom:1px solid #ddd}.metrickit-result td:first-child,"
    ".metrickit-result th:first-child{text-align:left}"
    ".metrickit-result .mk-headline{font-weight:600;margin:2px 0 4px}"
    ".metrickit-result ul{margin:4px 0;padding-left:18px;color:#555}</style>"
)


def _is_count(name: str) -> bool:
    low = name.lower()
    return low in _COUNT_NAMES or low.startswith(_COUNT_PREFIXES)


def tidy_counts(frame: Any) -> Any:
    """A copy of a pandas frame whose count columns (``n``, ``n_*``, ``count``, ...) and
    whole-number float columns named as counts hold integers (nullable ``Int64`` where
    some are missing), so they print as ``12``, never ``12.0``."""
    import numpy as np
    import pandas as pd

    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if not (_is_count(str(column)) and pd.api.types.is_float_dtype(values)):
            continue
        finite = values.dropna().to_numpy(dtype=float)
        if np.all(np.isfinite(finite)) and np.all(finite == np.round(finite)):
            out[column] = values.astype("Int64")
    return out


def _head(table: Any, max_rows: int) -> tuple[Any, int]:
    """The first ``max_rows`` rows of ``table`` (pandas, polars or None) as a tidy pandas
    frame, and how many rows were left out."""
    if table is None:
        return None, 0
    if not hasattr(table, "iloc"):  # polars or another narwhals-supported frame
        import narwhals as nw

        table = nw.from_native(table, eager_only=True).to_pandas()
    return tidy_counts(table.head(max_rows)), max(len(table) - max_rows, 0)


def _cell(value: Any) -> str:
    import math

    if isinstance(value, float):
        if math.isnan(value):
            return ""
        text = f"{value:.4g}"
        return "0" if text in ("-0", "0") else text
    return "" if value is None else str(value)


def result_html(
    headline: str, table: Any = None, notes: Iterable[str] = (), *,
    max_rows: int = MAX_ROWS, title: str | None = None,
) -> str:
    """A result as HTML for a notebook: the headline, the table's first ``max_rows`` rows
    and the notes, every text escaped (labels come from user data).

    Parameters
    ----------
    headline
        The verdict sentence (one or more lines; each line is its own line in the page).
    table
        A pandas (or polars) frame, or None for no table.
    notes
        What was left out and why; shown as a list under the table.
    title
        A short bold name before the headline (e.g. ``"pass@k"``).

    Examples
    --------
    >>> import pandas as pd
    >>> out = result_html("best: <b>", pd.DataFrame({"n": [3.0], "x": [0.5]}))
    >>> "&lt;b&gt;" in out and "<td>3</td>" in out
    True
    """
    esc = html.escape
    lines = [line for line in str(headline).splitlines() if line.strip()]
    head = "<br>".join(esc(line.strip()) for line in lines)
    parts = [_STYLE, "<div class='metrickit-result'>"]
    if title:
        parts.append(f"<div class='mk-title'><b>{esc(title)}</b></div>")
    parts.append(f"<div class='mk-headline'>{head}</div>")
    shown, more = _head(table, max_rows)
    if shown is not None and len(shown.columns):
        cells = ["<table><thead><tr>"]
        cells += [f"<th>{esc(str(c))}</th>" for c in shown.columns]
        cells.append("</tr></thead><tbody>")
        for row in shown.itertuples(index=False):
            cells.append("<tr>" + "".join(f"<td>{esc(_cell(v))}</td>" for v in row) + "</tr>")
        cells.append("</tbody></table>")
        parts.append("".join(cells))
        if more:
            parts.append(f"<div><small>… {more:,} more row(s) in <code>.table</code>"
                         "</small></div>")
    notes = [n for n in notes if n]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{esc(str(n))}</li>" for n in notes) + "</ul>")
    parts.append("</div>")
    return "".join(parts)


def result_repr(
    name: str, headline: str, table: Any = None, notes: Sequence[str] = (), *,
    max_rows: int = MAX_ROWS,
) -> str:
    """A compact text form: ``name: headline``, the table's head as text, the notes'
    count. For ``__repr__`` (the console), where :func:`result_html` is the notebook's."""
    lines = [f"{name}: {str(headline).strip()}"]
    shown, more = _head(table, max_rows)
    if shown is not None and len(shown.columns):
        import pandas as pd

        with pd.option_context("display.width", 120, "display.max_columns", 12,
                               "display.max_colwidth", 40):
            lines.append(shown.to_string(index=False, float_format=_cell))
        if more:
            lines.append(f"… {more:,} more row(s) in .table")
    notes = [n for n in notes if n]
    if notes:
        lines.append(f"({len(notes)} note(s): see .notes)")
    return "\n".join(lines)


# -- labels ------------------------------------------------------------------------------


def ellipsize(text: str, width: int) -> str:
    """``text`` in ``width`` characters, keeping its start and its end (the part that
    tells versions apart)."""
    if len(text) <= width:
        return text
    tail = (width - 1) // 2
    head = width - 1 - tail
    return text[:head] + "…" + text[-tail:]


def _stem(text: str) -> str:
    name = text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    while name.lower().endswith(_FILE_SUFFIXES):
        name = name[: name.rfind(".")]
    return name


def _model_part(part: str) -> str:
    """``provider/model`` as ``model`` (a part with no space; anything else unchanged)."""
    if "/" not in part or " " in part or part.endswith("/"):
        return part
    return part.rsplit("/", 1)[-1]


def _fit(label: str, width: int) -> str:
    """``label`` in ``width`` characters: the first part of ``agent · model · ...`` is cut
    first (to no less than 4 characters), so the model stays whole when it fits; then the
    middle of the rest."""
    if len(label) <= width:
        return label
    parts = label.split(_PART)
    if len(parts) > 1:
        over = len(label) - width
        room = len(parts[0]) - over - 1
        if room >= 4:
            return _PART.join([parts[0][:room] + "…", *parts[1:]])
    return ellipsize(label, width)


def short_labels(names: Sequence[Any], *, width: int = LABEL_WIDTH) -> list[str]:
    """Short, still distinct, display names for candidates.

    File names (``…/runs/steady.jsonl``: every name ends in a data-file suffix such as
    ``.jsonl``) become their stems, a prefix every name shares up
    to a ``/`` (``openrouter/``) is dropped, so is a part every name shares after a ``__``
    (the data set in Harbor's ``agent__model__dataset`` evaluation names) and a part every
    candidate label has (``agent · model · harness=pi``: the ``·``-separated parts). When a
    name is longer than ``width`` characters, a provider before a model goes
    (``anthropic/claude-opus-4.5``), then the end of the first part (the agent) to no less
    than 4 characters, so the model stays whole; a name still too long keeps its start and
    end around an ellipsis. A step that would make two names equal is skipped.

    Examples
    --------
    >>> short_labels(["openrouter/openai/gpt-5", "openrouter/google/gemini-2.5-pro"])
    ['openai/gpt-5', 'google/gemini-2.5-pro']
    >>> short_labels(["/data/runs/flaky.jsonl", "/data/runs/steady.jsonl"])
    ['flaky', 'steady']
    >>> short_labels(["codex__gpt-5__terminal-bench", "codex__gpt-5-mini__terminal-bench"])
    ['codex__gpt-5', 'codex__gpt-5-mini']
    >>> short_labels(["pi-agent · gpt-5 · harness=pi", "pi-agent · gpt-5 · harness=thin"])
    ['harness=pi', 'harness=thin']
    >>> short_labels(["terminus-2 · anthropic/claude-opus-4.5", "codex · gpt-5-mini"], width=24)
    ['termi… · claude-opus-4.5', 'codex · gpt-5-mini']
    """
    labels = ["" if n is None else str(n) for n in names]

    def distinct(candidate: list[str]) -> bool:
        return len(set(candidate)) == len(set(labels)) and all(candidate)

    if all(s.lower().endswith(_FILE_SUFFIXES) for s in labels):
        stems = [_stem(s) for s in labels]
        if distinct(stems):
            labels = stems
    parts = [s.split(_PART) for s in labels]
    if len(set(labels)) > 1 and all(len(p) > 1 for p in parts):
        shared = set(parts[0]).intersection(*parts[1:])
        kept = [_PART.join(x for x in p if x not in shared) for p in parts]
        if shared and distinct(kept):
            labels = kept
    if len(set(labels)) > 1:
        prefix = labels[0][: next((i for i, chars in enumerate(zip(*labels, strict=False))
                                   if len(set(chars)) > 1), min(map(len, labels)))]
        cut = prefix.rfind("/") + 1
        if cut and distinct([s[cut:] for s in labels]):
            labels = [s[cut:] for s in labels]
    if len(set(labels)) > 1:
        reversed_labels = [s[::-1] for s in labels]
        suffix = labels[0][len(labels[0]) - next(
            (i for i, chars in enumerate(zip(*reversed_labels, strict=False))
             if len(set(chars)) > 1), min(map(len, labels))):]
        cut = suffix.find("__")
        if cut >= 0:
            drop = len(suffix) - cut
            if distinct([s[:-drop] for s in labels]):
                labels = [s[:-drop] for s in labels]
    if any(len(s) > width for s in labels):
        # a provider before the model (anthropic/claude-opus-4.5): the model is what tells
        stripped = [_PART.join(_model_part(x) for x in s.split(_PART)) for s in labels]
        if distinct(stripped):
            labels = stripped
    shortened = [_fit(s, width) for s in labels]
    return shortened if distinct(shortened) else labels


def short_names(names: Sequence[Any]) -> list[str]:
    """:func:`short_labels` for a result's headline and table (``TABLE_WIDTH``)."""
    return short_labels(names, width=TABLE_WIDTH)


def short_column(frame: Any, column: str) -> Any:
    """A copy of a pandas frame with ``column``'s labels as :func:`short_names` (the
    same label always gets the same short name)."""
    if column not in frame.columns or not len(frame):
        return frame
    unique = list(dict.fromkeys(frame[column].tolist()))
    short = dict(zip(unique, short_names(unique), strict=True))
    return frame.assign(**{column: [short[v] for v in frame[column]]})
