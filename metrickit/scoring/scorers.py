"""Check scorers against the scorer contract and score whole case tables.

A scorer is ``score(input, output, expected=None)`` (or ``score(input, output)``) returning
``(number, {"feedback": str, "scores": {name: number}})``; see docs/contracts.md, section 2.

What runs user code, and where:

* :func:`check_scorer` given a **path** runs the file in a separate Python process, one case
  at a time; a hang is stopped at the timeout (the process is killed), and ``sys.exit``,
  ``os._exit`` or an interpreter crash is reported for that case, then a fresh process takes
  the next case.
* :func:`check_scorer` given a **function**, :func:`load_scorer` and :func:`score_cases` run
  the scorer in this process, each call in a thread; a call past the timeout is reported and
  abandoned (Python cannot stop a thread, so it may keep running in the background).
* Neither is a sandbox: the scorer has the same rights as you (files, network).
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import copy
import html
import importlib.util
import inspect
import json
import math
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from metrickit.errors import RewardInputError, ScorerError, SpecError, UncopiedInputWarning
from metrickit.scoring.current import _measurement, measured, observation, service_cost
from metrickit.scoring.judge import set_judge

__all__ = [
    "DEFAULT_TIMEOUT",
    "KEY_COLUMNS",
    "MAX_TIMEOUT",
    "CaseCheck",
    "ContractReport",
    "as_dspy_metric",
    "check_scorer",
    "load_scorer",
    "observation",
    "read_cases",
    "read_reward_spec",
    "score_cases",
    "score_summary",
    "service_cost",
    "set_judge",
    "validate_result",
]

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 600.0
#: Columns that identify a case; carried into :func:`score_cases` results, never into ``input``.
KEY_COLUMNS = ("case_id", "task", "task_name", "id", "trial_name", "candidate", "split")
MEASURED_COLUMNS = ("latency_ms", "cost_usd")
_CASE_FIELDS = ("input", "output", "expected", *MEASURED_COLUMNS)
_PACKAGE_DIR = str(Path(__file__).resolve().parent)
_SHAPE_HINT = 'return (score, {"feedback": "..."})'

Scorer = Callable[..., Any]
PathLike = str | os.PathLike[str]


# ---------------------------------------------------------------------------
# The return value
# ---------------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


_FLOAT_HINT = " (an int or a float: convert it with float())"


def _is_other_number(value: Any) -> bool:
    """A real number that is not an int or float (Decimal, Fraction): float() converts it."""
    import numbers
    from decimal import Decimal

    return isinstance(value, numbers.Real | Decimal) and not isinstance(value, bool)


def _fits_float(value: Any) -> bool:
    """False for an int too large for a float (10**400): math.isfinite and float() raise."""
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _short(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break the report
        text = f"<unrepresentable {type(value).__name__}: {exc}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(value: Any) -> str:
    return f"{_short(value, 80)} ({type(value).__name__})"


def validate_result(value: Any) -> list[str]:
    """Every way ``value`` breaks the scorer contract, one readable reason each.

    An empty list means the value is a valid ``(score, {"feedback": ..., "scores": ...})``.

    Examples
    --------
    >>> from metrickit.scoring.scorers import validate_result
    >>> validate_result((0.8, {"feedback": "Close. Missing the date."}))
    []
    >>> validate_result(0.8)
    ['returned a bare number 0.8 (float): there is no side information; return (score, {"feedback": "..."})']
    """  # noqa: E501
    if not isinstance(value, tuple | list):
        if _is_number(value) or isinstance(value, bool | np.bool_):
            return [f"returned a bare number {_describe(value)}: there is no side information; "
                    f"{_SHAPE_HINT}"]
        return [f"returned {_describe(value)}; expected a pair, {_SHAPE_HINT}"]
    if len(value) != 2:
        return [f"returned a {type(value).__name__} of {len(value)} item(s); expected a pair "
                f"(2 items), {_SHAPE_HINT}"]
    score, side = value
    problems: list[str] = []
    if isinstance(score, str):
        problems.append(f"the score is a string {score!r}; expected a number (not a string)")
    elif isinstance(score, bool | np.bool_):
        problems.append(f"the score is a bool {score!r}; a bool is not a score, "
                        "return 1.0 or 0.0")
    elif not _is_number(score):
        problems.append(f"the score is {_describe(score)}; expected a number"
                        + _FLOAT_HINT * _is_other_number(score))
    elif not _fits_float(score) or not math.isfinite(score):
        problems.append(f"the score is {_short(score, 80)}; expected a finite number")
    if not isinstance(side, dict):
        problems.append(f"the side information is {_describe(side)}, not a dict; "
                        'expected {"feedback": "..."}')
        return problems
    if "feedback" not in side:
        problems.append(f'the side information {_short(side, 80)} has no "feedback" string; '
                        'expected {"feedback": "what is wrong and what a correct output '
                        'looks like"}')
    elif not isinstance(side["feedback"], str):
        problems.append(f"feedback is {_describe(side['feedback'])}; expected a string")
    if "scores" in side:
        named = side["scores"]
        if not isinstance(named, dict):
            problems.append(f'"scores" is {_describe(named)}; expected a dict of names to numbers')
        else:
            for name, number in named.items():
                if not isinstance(name, str):
                    problems.append(f"a named score's name is {_describe(name)}; "
                                    "expected a string")
                elif not _is_number(number):
                    problems.append(f"named score {name!r} is {_describe(number)}; "
                                    "expected a number" + _FLOAT_HINT * _is_other_number(number))
                elif not _fits_float(number) or not math.isfinite(number):
                    problems.append(f"named score {name!r} is {_short(number, 80)}; "
                                    "expected a finite number")
    return problems


# ---------------------------------------------------------------------------
# Signature, loading
# ---------------------------------------------------------------------------


def scorer_arity(score: Any) -> tuple[int, str | None]:
    """How many arguments to pass (2 or 3), or a reason the signature cannot be used."""
    if not callable(score):
        return 0, (f"the scorer is {_describe(score)}, not a function; expected "
                   "score(input, output, expected=None)")
    try:
        sig = inspect.signature(score)
    except (TypeError, ValueError):
        return 3, None  # not introspectable (a builtin): try the full contract
    params = list(sig.parameters.values())
    positional = [p for p in params
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p.name for p in positional if p.default is p.empty]
    kwonly = [p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    star = any(p.kind == p.VAR_POSITIONAL for p in params)
    name = getattr(score, "__name__", "score")
    if kwonly:
        return 0, (f"{name}{sig} has required keyword-only parameter(s) {kwonly}; the contract "
                   "passes only input, output and expected, positionally")
    if len(required) > 3:
        return 0, (f"{name}{sig} needs {len(required)} arguments; the contract passes at most "
                   "3 (input, output, expected)")
    if star or len(positional) >= 3:
        return 3, None
    if len(positional) == 2:
        return 2, None
    return 0, (f"{name}{sig} takes {len(positional)} positional parameter(s); expected "
               "score(input, output, expected=None) or score(input, output)")


def _scorer_file(score: Any) -> str | None:
    try:
        source = inspect.getsourcefile(score)
    except TypeError:
        return None
    return str(Path(source).resolve()) if source else None


def _scorer_name(score: Any) -> str:
    module = getattr(score, "__module__", None) or ""
    name = getattr(score, "__qualname__", None) or getattr(score, "__name__", None)
    return f"{module}.{name}" if name else _short(score, 60)


def read_reward_spec(path: PathLike) -> dict[str, Any] | None:
    """Read a scorer file's ``REWARD_SPEC`` from its syntax tree, without running the file.

    Returns None when the file defines no ``REWARD_SPEC``. The value is only read, not
    validated (:meth:`metrickit.RewardSpec.from_dict` does that).

    Raises
    ------
    ScorerError
        The file cannot be read or parsed, or ``REWARD_SPEC`` is not a plain literal.
    """
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScorerError(f"{path}: cannot read the scorer file: {exc.strerror or exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ScorerError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    found: ast.expr | None = None
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if any(isinstance(t, ast.Name) and t.id == "REWARD_SPEC" for t in targets):
            found = value  # the last assignment wins, as when the file runs
    if found is None:
        return None
    try:
        spec = ast.literal_eval(found)
    except ValueError:
        raise ScorerError(
            f"{path}:{found.lineno}: REWARD_SPEC is not a plain literal (it uses names, calls "
            "or arithmetic); metrickit reads it without running the file, so write it as a "
            "dict of numbers and strings"
        ) from None
    if not isinstance(spec, dict):
        raise ScorerError(f"{path}:{found.lineno}: REWARD_SPEC is {_describe(spec)}; "
                          "expected a dict")
    return spec


def load_scorer(path: PathLike) -> tuple[Scorer, dict[str, Any] | None]:
    """Run a scorer file in this process; return its ``score`` function and ``REWARD_SPEC``.

    ``skynet`` is made importable first (see :mod:`metrickit.scoring.skynet`), and the file's own
    folder is importable while it runs, as for a script. The file runs with your rights:
    use :func:`check_scorer` on the path to run an unknown file in a separate process.

    Raises
    ------
    ScorerError
        The file is missing, raises while running, or defines no callable ``score``.
    """
    from metrickit.scoring import skynet

    skynet.install()
    path = Path(path).resolve()
    if not path.is_file():
        raise ScorerError(f"{path}: no such scorer file")
    name = f"_metrickit_scorer_{abs(hash(str(path))):x}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ScorerError(f"{path}: cannot be loaded as a Python module (expected a .py file)")
    module = importlib.util.module_from_spec(module_spec)
    folder = str(path.parent)
    sys.path.insert(0, folder)
    sys.modules[name] = module  # lets dataclasses, pickle and tracebacks find the module
    try:
        module_spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ScorerError(f"{path}: running the file {_exception_text(exc, str(path))}") from exc
    finally:
        if folder in sys.path:
            sys.path.remove(folder)
    score = getattr(module, "score", None)
    if not callable(score):
        raise ScorerError(
            f"{path}: defines no function 'score'; expected "
            "def score(input, output, expected=None): ... returning (number, {'feedback': str})"
        )
    spec = getattr(module, "REWARD_SPEC", None)
    return score, spec


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def read_cases(cases: Any, *, backend: str = "pandas") -> tuple[list[dict[str, Any]], Any]:
    """Cases as a list of row dicts, plus the native frame namespace (None for non-frames).

    ``cases`` is a pandas/polars DataFrame, a JSONL path, or an iterable of dicts.
    """
    import narwhals as nw

    try:
        nf = nw.from_native(cases, eager_only=True)
    except TypeError:
        nf = None
    if nf is not None:
        return list(nf.rows(named=True)), nw.get_native_namespace(nf)
    if isinstance(cases, str | os.PathLike):
        path = Path(cases)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ScorerError(f"{path}: cannot read the case table: {exc.strerror or exc}") \
                from None
        rows = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScorerError(f"{path}:{number}: not valid JSON ({exc.msg}); a case table "
                                  "has one JSON object per line") from None
            if not isinstance(row, dict):
                raise ScorerError(f"{path}:{number}: a case is {_describe(row)}; expected a "
                                  "JSON object with input fields and 'output'")
            rows.append(row)
        return rows, None
    if isinstance(cases, Iterable) and not isinstance(cases, str | bytes | Mapping):
        rows = list(cases)
        for number, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise ScorerError(f"case {number} is {_describe(row)}; expected a dict")
        return [dict(r) for r in rows], None
    raise ScorerError(f"cases is {_describe(cases)}; expected a DataFrame, a JSONL path or a "
                      "list of dicts")


def _payload(row: Mapping[str, Any], index: int, keys: Sequence[str]) -> dict[str, Any]:
    if "output" not in row:
        raise ScorerError(f"case {index} has no 'output' field (fields: {sorted(row)}); a case "
                          "table needs the system's output for each case")
    if "input" in row:
        inputs = row["input"]
    else:
        inputs = {k: v for k, v in row.items() if k not in _CASE_FIELDS and k not in keys}
    expected = row.get("expected")
    return {
        "input": inputs,
        "output": row["output"],
        "expected": None if _missing(expected) else expected,
        "latency_ms": row.get("latency_ms"),
        "cost_usd": row.get("cost_usd"),
    }


def _default_keys(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    return [k for k in (*KEY_COLUMNS, *MEASURED_COLUMNS) if k in present]


def _check_timeout(timeout: float | None, *, allow_none: bool) -> None:
    if timeout is None and allow_none:
        return
    if (not _is_number(timeout) or not math.isfinite(timeout)  # type: ignore[arg-type]
            or timeout <= 0 or timeout > MAX_TIMEOUT):  # type: ignore[operator]
        raise ScorerError(f"timeout is {timeout!r}; expected seconds > 0 and at most "
                          f"{MAX_TIMEOUT:g} (the contract's limit; the default is "
                          f"{DEFAULT_TIMEOUT:g})")


# ---------------------------------------------------------------------------
# One call
# ---------------------------------------------------------------------------


def _exception_text(exc: BaseException, scorer_file: str | None) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}); a scorer must return a pair, not exit"
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if scorer_file and f.filename == scorer_file]
    if not own:
        own = [f for f in frames if not f.filename.startswith(_PACKAGE_DIR)]
    text = f"raised {type(exc).__name__}: {exc}"
    if own:
        where = own[-1]
        code = f": {where.line.strip()}" if where.line else ""
        text += f" (at {Path(where.filename).name}:{where.lineno}{code})"
    return text


def _outcome(value: Any, ms: float) -> dict[str, Any]:
    problems = validate_result(value)
    out: dict[str, Any] = {"returned": _short(value), "problems": problems, "ms": ms,
                           "score": None, "feedback": None, "scores": {}, "timed_out": False}
    if isinstance(value, tuple | list) and len(value) == 2:
        score, side = value
        if _is_number(score) and _fits_float(score):
            out["score"] = float(score)
        if isinstance(side, dict):
            if isinstance(side.get("feedback"), str):
                out["feedback"] = side["feedback"]
            named = side.get("scores")
            if isinstance(named, dict):
                out["scores"] = {str(k): float(v) for k, v in named.items()
                                 if _is_number(v) and _fits_float(v)}
    return out


def _private_copy(args: tuple[Any, ...]) -> tuple[Any, ...]:
    # A scorer that mutates its input (or an expected value several cases share) must not
    # change the other cases or the caller's table: each call gets its own copy.
    try:
        return copy.deepcopy(args)
    except Exception as exc:  # an uncopyable value (a lock, a file): pass it as it is, and say so
        warnings.warn(
            f"a case's input could not be copied ({type(exc).__name__}: {exc}); the scorer "
            "gets the caller's own objects, so if it mutates them your table changes too",
            UncopiedInputWarning,
            stacklevel=2,
        )
        return args


def call_scorer(
    score: Scorer, arity: int, payload: Mapping[str, Any], timeout: float | None,
    scorer_file: str | None = None,
) -> dict[str, Any]:
    """Call a scorer on one case and describe what happened (never raises for the scorer).

    With a timeout the call runs in a daemon thread; past the timeout it is abandoned.
    """
    args: tuple[Any, ...] = (payload["input"], payload["output"])
    if arity == 3:
        args += (payload.get("expected"),)
    args = _private_copy(args)
    box: dict[str, Any] = {}
    try:  # a measurement that is not a number is the case's error, found before the call
        latency = _measurement(payload.get("latency_ms"), "latency_ms")
        cost = _measurement(payload.get("cost_usd"), "cost_usd")
    except RewardInputError as bad:
        return {"returned": None, "score": None, "feedback": None, "scores": {},
                "ms": None, "timed_out": False, "problems": [f"case data: {bad}"]}

    def target() -> None:
        with measured(latency, cost):
            start = time.perf_counter()
            try:
                box["value"] = score(*args)
            except BaseException as exc:  # SystemExit too: a scorer must not end the run
                box["exc"] = exc
            finally:
                box["ms"] = (time.perf_counter() - start) * 1000

    if timeout is None:
        target()
    else:
        thread = threading.Thread(target=target, name="metrickit-scorer", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            return {"returned": None, "score": None, "feedback": None, "scores": {},
                    "ms": timeout * 1000, "timed_out": True,
                    "problems": [f"timed out: no result within {timeout:g} s (the call was "
                                 "abandoned and may still be running in a background thread)"]}
    if "exc" in box:
        exc = box["exc"]
        if isinstance(exc, KeyboardInterrupt):
            raise exc
        return {"returned": None, "score": None, "feedback": None, "scores": {},
                "ms": box["ms"], "timed_out": False,
                "problems": [_exception_text(exc, scorer_file)]}
    return _outcome(box["value"], box["ms"])


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseCheck:
    """What one sample case showed: the returned value and every problem found."""

    index: int
    key: dict[str, Any]
    returned: str | None
    score: float | None
    feedback: str | None
    scores: dict[str, float]
    problems: tuple[str, ...]
    duration_ms: float | None
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def label(self) -> str:
        keys = ", ".join(f"{k}={v!r}" for k, v in self.key.items()
                         if k not in MEASURED_COLUMNS)
        return f"case {self.index}" + (f" [{keys}]" if keys else "")


@dataclass(frozen=True)
class ContractReport:
    """Result of :func:`check_scorer`: scorer-level problems and one entry per case.

    ``ok`` is True when the scorer could be used and every sample case returned a valid pair.
    """

    scorer: str
    arity: int | None
    entries: tuple[CaseCheck, ...]
    problems: tuple[str, ...] = ()
    reward_spec: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.entries) and all(e.ok for e in self.entries)

    @property
    def failed(self) -> tuple[CaseCheck, ...]:
        return tuple(e for e in self.entries if not e.ok)

    def _headline(self) -> str:
        if self.ok:
            return f"contract OK: {len(self.entries)} of {len(self.entries)} cases valid"
        if self.problems:
            return "contract BROKEN: the scorer cannot be used as it is"
        return (f"contract BROKEN: {len(self.failed)} of {len(self.entries)} sample cases "
                "break it")

    def __str__(self) -> str:
        lines = [f"Scorer {self.scorer}: {self._headline()}"]
        if self.arity:
            args = "input, output, expected" if self.arity == 3 else "input, output"
            lines.append(f"  called as score({args})")
        lines += [f"  ✗ {p}" for p in self.problems]
        for e in self.entries:
            ms = "" if e.duration_ms is None else f"  ({e.duration_ms:.3g} ms)"
            lines.append(f"  {e.label}: {'ok' if e.ok else 'FAIL'}{ms}")
            if e.returned is not None:
                lines.append(f"      returned {e.returned}")
            lines += [f"      ✗ {p}" for p in e.problems]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        colour = "#1a7f37" if self.ok else "#cf222e"
        parts = [f"<div><b>Scorer <code>{esc(self.scorer)}</code>: "
                 f"<span style='color:{colour}'>{esc(self._headline())}</span></b>"]
        if self.problems:
            parts.append("<ul>" + "".join(f"<li>{esc(p)}</li>" for p in self.problems) + "</ul>")
        if self.entries:
            parts.append("<table><thead><tr><th>case</th><th>status</th><th>returned</th>"
                         "<th>problems</th><th>ms</th></tr></thead><tbody>")
            for e in self.entries:
                status = "ok" if e.ok else "<b style='color:#cf222e'>FAIL</b>"
                problems = "<br>".join(esc(p) for p in e.problems)
                ms = "" if e.duration_ms is None else f"{e.duration_ms:.3g}"
                parts.append(f"<tr><td>{esc(e.label)}</td><td>{status}</td>"
                             f"<td><code>{esc(e.returned or '')}</code></td>"
                             f"<td style='text-align:left'>{problems}</td><td>{ms}</td></tr>")
            parts.append("</tbody></table>")
        parts.append("</div>")
        return "".join(parts)


def _spec_problems(spec: Any) -> list[str]:
    if spec is None:
        return []
    from metrickit.scoring.spec import RewardSpec

    try:
        RewardSpec.from_dict(spec)
    except SpecError as exc:
        return [f"REWARD_SPEC: {p}" for p in exc.problems]
    return []


def check_scorer(
    score_or_path: Scorer | PathLike,
    cases: Any,
    *,
    n: int = 3,
    timeout: float = DEFAULT_TIMEOUT,
) -> ContractReport:
    """Run a scorer on ``n`` sample cases and report how it honours the scorer contract.

    Parameters
    ----------
    score_or_path
        A scorer function (run in this process, each call in a thread) or the path of a
        ``metric.py`` (run in a separate process that a hang, ``sys.exit`` or a crash
        cannot take down with you).
    cases
        A DataFrame, JSONL path or list of dicts with input fields (or an ``input`` dict),
        ``output``, optional ``expected``, ``latency_ms``, ``cost_usd``. The first ``n``
        are used. A path scorer gets each case's own objects (pickled, as
        :func:`score_cases` would pass them); a case that does not pickle fails with the
        field named.
    n
        Number of sample cases (the contract check uses 3).
    timeout
        Seconds per call; at most 600.

    Returns
    -------
    ContractReport
        ``.ok``, ``.entries`` (one per case), ``.problems`` (scorer-level); prints readably.

    Raises
    ------
    ScorerError
        Invalid ``timeout``/``n`` or an unreadable case table (problems of the scorer itself
        are reported, not raised).

    Examples
    --------
    >>> import metrickit as mk
    >>> report = mk.check_scorer(lambda input, output: 0.8, [{"q": "2+2", "output": "4"}])
    >>> report.ok
    False
    >>> print(report.entries[0].problems[0])
    returned a bare number 0.8 (float): there is no side information; return (score, {"feedback": "..."})
    """  # noqa: E501
    _check_timeout(timeout, allow_none=False)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScorerError(f"n is {n!r}; expected a positive number of sample cases")
    rows, _ = read_cases(cases)
    rows = rows[:n]
    keys = _default_keys(rows)
    payloads = [_payload(row, i, keys) for i, row in enumerate(rows)]
    case_keys = [{k: row.get(k) for k in keys} for row in rows]
    problems: list[str] = []
    if not payloads:
        problems.append("the case table has no cases; the contract check needs sample cases")

    if isinstance(score_or_path, str | os.PathLike):
        from metrickit.scoring.child import check_path

        path = Path(score_or_path)
        ready, results = check_path(path, payloads, timeout=timeout)
        arity = int(ready.get("arity") or 0)
        spec = ready.get("reward_spec")
        problems += ready.get("problems") or ready.get("spec_problems") or []
        name = str(path)
    else:
        score = score_or_path
        name = _scorer_name(score)
        arity, reason = scorer_arity(score)
        spec = getattr(score, "__globals__", {}).get("REWARD_SPEC")
        results = []
        if reason:
            problems.append(reason)
        else:
            problems += _spec_problems(spec)
            scorer_file = _scorer_file(score)
            results = [call_scorer(score, arity, p, timeout, scorer_file) for p in payloads]
    entries = tuple(
        CaseCheck(index=i, key=case_keys[i], returned=r["returned"], score=r["score"],
                  feedback=r["feedback"], scores=r["scores"], problems=tuple(r["problems"]),
                  duration_ms=r["ms"], timed_out=r["timed_out"])
        for i, r in enumerate(results)
    )
    return ContractReport(scorer=name, arity=arity or None, entries=entries,
                          problems=tuple(problems),
                          reward_spec=spec if isinstance(spec, dict) else None)


# ---------------------------------------------------------------------------
# Whole case tables
# ---------------------------------------------------------------------------


def _score_one(
    score: Scorer, arity: int, payload: Mapping[str, Any], timeout: float | None,
    scorer_file: str | None,
) -> dict[str, Any]:
    # Top-level so that process and cluster executors can pickle it.
    return call_scorer(score, arity, payload, timeout, scorer_file)


def score_cases(
    score: Scorer | PathLike,
    cases: Any,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    workers: int | None = None,
    executor: cf.Executor | None = None,
    keys: Sequence[str] | None = None,
    backend: str = "pandas",
    progress: bool = True,
) -> Any:
    """Score every case of a table; one result row per case, none lost.

    Parameters
    ----------
    score
        A scorer function, or a scorer file path (loaded in this process with
        :func:`load_scorer`).
    cases
        A DataFrame, JSONL path or list of dicts: input fields (or an ``input`` dict),
        ``output``, optional ``expected``, ``latency_ms``, ``cost_usd``.
    timeout
        Seconds per scorer call (at most 600); None for no limit.
    workers
        Threads of the default pool (``ThreadPoolExecutor``'s default when None).
    executor
        Any :class:`concurrent.futures.Executor` instead of the thread pool, e.g.
        ``distributed.Client(...).get_executor()``; the scorer must then be picklable.
    keys
        Case columns copied into the result; by default those of :data:`KEY_COLUMNS`,
        ``latency_ms`` and ``cost_usd`` that the table has.
    backend
        Result type when ``cases`` is not a DataFrame: ``"pandas"`` or ``"polars"``
        (a DataFrame in gives the same type out).
    progress
        Show a ``tqdm.auto`` progress bar.

    Returns
    -------
    DataFrame
        The key columns, then ``score``, ``feedback``, ``score_<name>`` per named score,
        ``scorer_ms`` (the call's own duration) and ``error`` (None when the call returned
        a valid pair). A call that raised, timed out or broke the contract scores 0 and
        keeps the reason in ``error``; :func:`score_summary` counts them.
    """
    _check_timeout(timeout, allow_none=True)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ScorerError(f"workers is {workers!r}; expected a positive number of threads "
                          "(or None for the thread pool's default)")
    if isinstance(score, str | os.PathLike):
        score, _ = load_scorer(score)
    arity, reason = scorer_arity(score)
    if reason:
        raise ScorerError(f"cannot score cases: {reason}")
    rows, namespace = read_cases(cases)
    key_columns = list(keys) if keys is not None else _default_keys(rows)
    clash = [k for k in key_columns if k in ("score", "feedback", "scorer_ms", "error")
             or k.startswith("score_")]
    if clash:
        raise ScorerError(f"key column(s) {clash} would clash with result columns; pass keys=")
    payloads = [_payload(row, i, key_columns) for i, row in enumerate(rows)]
    scorer_file = _scorer_file(score)
    results: list[dict[str, Any] | None] = [None] * len(payloads)

    own_pool = executor is None
    pool = cf.ThreadPoolExecutor(max_workers=workers) if executor is None else executor
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(payloads), desc="scoring cases", unit="case")
    failures = 0
    try:
        futures = {pool.submit(_score_one, score, arity, p, timeout, scorer_file): i
                   for i, p in enumerate(payloads)}
        for future in cf.as_completed(futures):
            i = futures[future]
            try:
                results[i] = future.result()
            except Exception as exc:  # the executor failed (pickling, a lost worker, ...)
                results[i] = {"returned": None, "score": None, "feedback": None, "scores": {},
                              "ms": None, "timed_out": False,
                              "problems": [f"the executor failed: {type(exc).__name__}: {exc}"]}
            if results[i]["problems"]:  # type: ignore[index]
                failures += 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=failures, refresh=False)
    finally:
        if bar is not None:
            bar.close()
        if own_pool:
            pool.shutdown(wait=False, cancel_futures=True)
    return _results_frame(rows, key_columns, results, namespace, backend)


def _results_frame(
    rows: Sequence[Mapping[str, Any]], keys: Sequence[str],
    results: Sequence[dict[str, Any] | None], namespace: Any, backend: str,
) -> Any:
    import narwhals as nw

    names: list[str] = []
    for r in results:
        for name in (r or {}).get("scores", {}):
            if name not in names:
                names.append(name)
    data: dict[str, list[Any]] = {k: [row.get(k) for row in rows] for k in keys}
    data["score"], data["feedback"] = [], []
    for name in names:
        data[f"score_{name}"] = []
    data["scorer_ms"], data["error"] = [], []
    for r in results:
        assert r is not None
        ok = not r["problems"]
        data["score"].append(r["score"] if ok else 0.0)
        data["feedback"].append(r["feedback"])
        for name in names:
            data[f"score_{name}"].append(r["scores"].get(name, math.nan) if ok else math.nan)
        data["scorer_ms"].append(r["ms"] if r["ms"] is not None else math.nan)
        data["error"].append("; ".join(r["problems"]) if r["problems"] else None)
    if namespace is None:
        if backend not in ("pandas", "polars"):
            raise ScorerError(f"backend is {backend!r}; expected 'pandas' or 'polars'")
        namespace = importlib.import_module(backend)
    schema = {"score": nw.Float64(), "feedback": nw.String(), "scorer_ms": nw.Float64(),
              "error": nw.String(), **{f"score_{n}": nw.Float64() for n in names}}
    frame = nw.from_dict(data, backend=namespace)
    return frame.with_columns(
        *(nw.col(c).cast(dtype) for c, dtype in schema.items())
    ).to_native()


def score_summary(scored: Any) -> dict[str, Any]:
    """Count what :func:`score_cases` produced: cases, mean score, failures, timeouts.

    Examples
    --------
    >>> import metrickit as mk
    >>> def score(input, output, expected=None):
    ...     return float(output == expected), {"feedback": "ok"}
    >>> scored = mk.score_cases(score, [{"q": 1, "output": "a", "expected": "a"},
    ...                                 {"q": 2, "output": "b", "expected": "a"}], progress=False)
    >>> mk.score_summary(scored)
    {'cases': 2, 'mean_score': 0.5, 'failed': 0, 'timed_out': 0}
    """
    import narwhals as nw

    nf = nw.from_native(scored, eager_only=True)
    error = nf.get_column("error")
    errors = [str(e) for e in error.filter(~error.is_null()).to_list()]
    scores = nf.get_column("score").to_numpy()
    return {
        "cases": len(nf),
        "mean_score": float(np.mean(scores)) if len(scores) else 0.0,
        "failed": len(errors),
        "timed_out": sum(e.startswith("timed out") for e in errors),
    }


# ---------------------------------------------------------------------------
# DSPy
# ---------------------------------------------------------------------------


def _fields(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if hasattr(obj, "toDict"):
        return dict(obj.toDict())
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "items"):
        return dict(obj.items())
    return dict(vars(obj))


def as_dspy_metric(
    score: Scorer, *, output_field: str | None = None
) -> Callable[..., Any]:
    """Adapt a contract scorer to DSPy's metric call, as GEPA expects.

    The returned ``metric(example, prediction, trace=None, pred_name=None, pred_trace=None)``
    calls ``score(input, output, expected)`` with ``input = example.inputs()`` as a dict,
    ``expected = example.labels()`` as a dict (e.g. ``{"label": "billing"}``) and ``output``
    the prediction's only field, or ``prediction[output_field]``, or all its fields as a dict.
    It returns ``dspy.Prediction(score=..., feedback=...)``. DSPy is imported only when the
    metric is called.

    Raises
    ------
    ScorerError
        The scorer's signature is unusable (at once), or a call returns something that breaks
        the contract (when called).
    """
    arity, reason = scorer_arity(score)
    if reason:
        raise ScorerError(f"as_dspy_metric: {reason}")

    def metric(example: Any, prediction: Any, trace: Any = None, pred_name: Any = None,
               pred_trace: Any = None) -> Any:
        try:
            import dspy
        except ImportError:
            raise ImportError("as_dspy_metric needs DSPy: pip install dspy") from None
        inputs = _fields(example.inputs()) if hasattr(example, "inputs") else _fields(example)
        labels = _fields(example.labels()) if hasattr(example, "labels") else {}
        produced = _fields(prediction)
        if output_field is not None:
            output = produced[output_field]
        elif len(produced) == 1:
            (output,) = produced.values()
        else:
            output = produced
        args = (inputs, output, labels or None)[:arity]
        value = score(*args)
        problems = validate_result(value)
        if problems:
            raise ScorerError(f"the scorer broke the contract: {'; '.join(problems)}")
        return dspy.Prediction(score=float(value[0]), feedback=value[1]["feedback"])

    metric.__name__ = getattr(score, "__name__", "metric")
    metric.__doc__ = getattr(score, "__doc__", None)
    return metric
