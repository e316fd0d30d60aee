"""An independent oracle for Harbor reward JSONL, for the fuzz and corpus tests.

Written from the contract in docs/contracts.md (section 1) with nothing but ``json.loads`` per line,
so that it shares no code with :mod:`metrickit.io.rewards`: a line is a JSON object of named
numbers, ``{}`` or ``null``; blank lines are not rows; a value is a JSON int (|x| <= 2**53),
a finite float or a bool; each key once; no NaN/Infinity tokens; UTF-8 text; a BOM only
at the start of the file.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

META = ("_source", "_line", "_status")


@dataclass
class Expected:
    """What a correct reader must produce for one input."""

    rows: list[tuple[int, str, dict[str, tuple[float, str]]]] = field(default_factory=list)
    bad_lines: list[int] = field(default_factory=list)

    @property
    def first_bad(self) -> int | None:
        return self.bad_lines[0] if self.bad_lines else None

    @property
    def keys(self) -> list[str]:
        return sorted({k for _, _, cells in self.rows for k in cells})

    def clash(self) -> str | None:
        """A key that would collide with a metadata column (a file-level error)."""
        keys = self.keys
        for key in keys:
            if key in META or any(key == "_kind_" + other for other in keys):
                return key
        return None

    def clash_line(self) -> int:
        key = self.clash()
        return next(line for line, _, cells in self.rows if key in cells)


class _Dup(Exception):
    pass


class _Constant(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Dup(key)
        seen[key] = value
    return seen


def _no_constant(token: str) -> Any:
    raise _Constant(token)


def _cell(value: Any) -> tuple[float, str] | None:
    if isinstance(value, bool):
        return (1.0 if value else 0.0), "bool"
    if isinstance(value, int):
        return (float(value), "int") if abs(value) <= 2**53 else None
    if isinstance(value, float):
        return (value, "float") if math.isfinite(value) else None
    return None


def _line(text: bytes) -> tuple[str, dict[str, tuple[float, str]]] | None:
    """(status, cells) for one non-blank line, or None when the line is bad."""
    try:
        decoded = text.decode("utf-8")
        obj = json.loads(decoded, object_pairs_hook=_pairs, parse_constant=_no_constant)
    except (ValueError, RecursionError, _Dup, _Constant):
        return None
    if obj is None:
        return "null", {}
    if not isinstance(obj, dict):
        return None
    cells: dict[str, tuple[float, str]] = {}
    for key, value in obj.items():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate escape
            return None
        cell = _cell(value)
        if cell is None:
            return None
        cells[key] = cell
    return ("ok" if cells else "empty"), cells


def expect(data: bytes) -> Expected:
    """The rows (line, status, cells) and the bad lines of one JSONL payload."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    out = Expected()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.strip(b" \t\r\n")
        if not text:
            continue
        parsed = _line(text)
        if parsed is None:
            out.bad_lines.append(number)
            out.rows.append((number, "invalid", {}))
        else:
            out.rows.append((number, parsed[0], parsed[1]))
    return out


def _bits(values: Any) -> Any:
    return np.asarray(values, dtype=np.float64).view(np.int64)


def check_frame(frame: Any, expected: Expected, *, report: bool = False) -> None:
    """Assert that a read_rewards frame (pandas or polars) holds exactly ``expected``.

    Values are compared bit for bit (so -0.0 vs 0.0 and the last ulp count), and every
    non-blank line must be a row: nothing dropped, nothing invented.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    rows = expected.rows if report else [r for r in expected.rows if r[1] != "invalid"]
    assert len(nf) == len(rows), f"rows {len(nf)} != non-blank lines {len(rows)}"
    assert nf.get_column("_line").to_list() == [r[0] for r in rows]
    assert [str(s) for s in nf.get_column("_status").to_list()] == [r[1] for r in rows]
    keys = expected.keys
    got_keys = [c for c in nf.columns if "_kind_" + c in nf.columns]
    assert got_keys == keys, f"keys {got_keys!r} != {keys!r}"
    for key in keys:
        want = [cells[key][0] if key in cells else 0.0 for _, _, cells in rows]
        kinds = [cells[key][1] if key in cells else "missing" for _, _, cells in rows]
        got = nf.get_column(key).to_numpy()
        assert np.array_equal(_bits(got), _bits(want)), f"values of {key!r}: {got} != {want}"
        assert [str(k) for k in nf.get_column("_kind_" + key).to_list()] == kinds
