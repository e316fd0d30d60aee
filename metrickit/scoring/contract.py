"""The scorer contract in code: what a scorer is, what it must return, how one call is made.

A scorer is ``score(input, output, expected=None)`` (or ``score(input, output)``) returning
``(number, {"feedback": str, "scores": {name: number}})``; ``docs/contracts.md`` (section 2)
states the contract. Both the checking process (:mod:`metrickit.scoring.scorers`) and the
scorer child process (:mod:`metrickit.scoring.child`) use these functions.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import inspect
import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from metrickit._core.values import describe_value, is_finite_number, is_number, short_repr
from metrickit.errors import RewardInputError, ScorerError, SpecError, UncopiedInputWarning
from metrickit.scoring.current import current_measurement, measured

DEFAULT_TIMEOUT = 60.0



MAX_TIMEOUT = 600.0



MEASURED_COLUMNS = ("latency_ms", "cost_usd")



CASE_FIELDS = ("input", "output", "expected", *MEASURED_COLUMNS)

#: Columns that identify a case; carried into :func:`score_cases` results, never into ``input``.
KEY_COLUMNS = ("case_id", "task", "task_name", "id", "trial_name", "candidate", "split")



_PACKAGE_DIR = str(Path(__file__).resolve().parent)



_SHAPE_HINT = 'return (score, {"feedback": "..."})'



Scorer = Callable[..., Any]



PathLike = str | os.PathLike[str]






_FLOAT_HINT = " (an int or a float: convert it with float())"



def _is_other_number(value: Any) -> bool:
    """A real number that is not an int or float (Decimal, Fraction): float() converts it."""
    import numbers
    from decimal import Decimal

    return isinstance(value, numbers.Real | Decimal) and not isinstance(value, bool)












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
        if is_number(value) or isinstance(value, bool | np.bool_):
            return [f"returned a bare number {describe_value(value)}: there is no side "
                    f"information; {_SHAPE_HINT}"]
        return [f"returned {describe_value(value)}; expected a pair, {_SHAPE_HINT}"]
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
    elif not is_number(score):
        problems.append(f"the score is {describe_value(score)}; expected a number"
                        + _FLOAT_HINT * _is_other_number(score))
    elif not is_finite_number(score):
        problems.append(f"the score is {short_repr(score, 80)}; expected a finite number")
    if not isinstance(side, dict):
        problems.append(f"the side information is {describe_value(side)}, not a dict; "
                        'expected {"feedback": "..."}')
        return problems
    if "feedback" not in side:
        problems.append(f'the side information {short_repr(side, 80)} has no "feedback" string; '
                        'expected {"feedback": "what is wrong and what a correct output '
                        'looks like"}')
    elif not isinstance(side["feedback"], str):
        problems.append(f"feedback is {describe_value(side['feedback'])}; expected a string")
    if "scores" in side:
        named = side["scores"]
        if not isinstance(named, dict):
            problems.append(
                f'"scores" is {describe_value(named)}; expected a dict of names to numbers'
            )
        else:
            for name, number in named.items():
                if not isinstance(name, str):
                    problems.append(f"a named score's name is {describe_value(name)}; "
                                    "expected a string")
                elif not is_number(number):
                    problems.append(f"named score {name!r} is {describe_value(number)}; "
                                    "expected a number" + _FLOAT_HINT * _is_other_number(number))
                elif not is_finite_number(number):
                    problems.append(f"named score {name!r} is {short_repr(number, 80)}; "
                                    "expected a finite number")
    return problems



def scorer_arity(score: Any) -> tuple[int, str | None]:
    """How many arguments to pass (2 or 3), or a reason the signature cannot be used."""
    if not callable(score):
        return 0, (f"the scorer is {describe_value(score)}, not a function; expected "
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



def source_file_of(score: Any) -> str | None:
    try:
        source = inspect.getsourcefile(score)
    except TypeError:
        return None
    return str(Path(source).resolve()) if source else None



def scorer_name(score: Any) -> str:
    module = getattr(score, "__module__", None) or ""
    name = getattr(score, "__qualname__", None) or getattr(score, "__name__", None)
    return f"{module}.{name}" if name else short_repr(score, 60)



def read_case_lines(path: PathLike) -> list[dict[str, Any]]:
    """The rows of a JSONL case table: one JSON object per line, UTF-8.

    Lines are split at ``\\n`` only (``\\r\\n`` too): JSON text may hold U+2028, U+0085 or
    a form feed inside a string, which :meth:`str.splitlines` would break a line at. A
    UTF-8 BOM at the start is ignored.

    Raises
    ------
    ScorerError
        The file cannot be read, a line is not UTF-8 (naming the line and the bytes), not
        valid JSON, or not an object.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ScorerError(f"{path}: cannot read the case table: {exc.strerror or exc}") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rows: list[dict[str, Any]] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            around = raw[max(exc.start - 12, 0):exc.end + 12]
            raise ScorerError(
                f"{path}:{number}: not UTF-8: bytes {raw[exc.start:exc.end]!r} at byte "
                f"{exc.start} of the line (in {around!r}); a case table is UTF-8 JSON lines: "
                "re-save the file as UTF-8 (it looks like Latin-1 or Windows-1252 text)"
            ) from None
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScorerError(f"{path}:{number}: not valid JSON ({exc.msg}, column "
                              f"{exc.colno}); a case table has one JSON object per line") \
                from None
        except (ValueError, RecursionError) as exc:  # a 5,000-digit number, deep nesting
            raise ScorerError(f"{path}:{number}: cannot be read ({type(exc).__name__}: "
                              f"{str(exc)[:200]}); a case table has one JSON object per line") \
                from None
        if not isinstance(row, dict):
            raise ScorerError(f"{path}:{number}: a case is {describe_value(row)}; expected a "
                              "JSON object with input fields and 'output'")
        rows.append(row)
    return rows


def read_reward_spec(path: PathLike) -> dict[str, Any] | None:
    """Read a scorer file's ``REWARD_SPEC`` from its syntax tree, without running the file.

    The file is decoded as Python decodes it (a UTF-8 BOM, a ``# coding: latin-1``
    declaration), so every file :func:`load_scorer` runs can be read. ``REWARD_SPEC`` must be
    assigned a plain literal (a dict of numbers and strings) at the top level of the file;
    when it is assigned several times there, the last assignment is the spec, as when the
    file runs.

    Returns None when the file defines no ``REWARD_SPEC``. The value is only read, not
    validated (:meth:`metrickit.RewardSpec.from_dict` does that).

    Raises
    ------
    ScorerError
        The file cannot be read or parsed, ``REWARD_SPEC`` is not a plain literal, or it is
        set in a way that cannot be read without running the file: changed in place
        (``REWARD_SPEC |= {...}``, ``REWARD_SPEC["w"] = ...``, ``.update(...)``), assigned
        inside ``if``/``for``/``while``/``try``/``with``/``match``, inside a function with
        ``global REWARD_SPEC``, imported, unpacked from a tuple, bound by ``:=`` or deleted
        (the message gives the line and why).
    """
    path = Path(path)
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise ScorerError(f"{path}: cannot read the scorer file: {exc.strerror or exc}") from None
    try:
        # bytes: Python's own decoding (BOM, PEP 263 coding declaration), as when it runs
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ScorerError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except (ValueError, UnicodeError) as exc:  # null bytes, an unknown or wrong coding
        raise ScorerError(f"{path}: cannot be read as Python source ({exc}); save it as UTF-8 "
                          "or declare its encoding (# coding: latin-1)") from None
    except RecursionError:
        raise ScorerError(f"{path}: nested too deeply to parse") from None
    found: ast.expr | None = None
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if any(isinstance(t, ast.Name) and t.id == _SPEC for t in targets):
            found = value  # the last assignment wins, as when the file runs
    unreadable = _unreadable_spec(tree)
    if unreadable is not None:
        line, why = unreadable
        raise ScorerError(
            f"{path}:{line}: REWARD_SPEC {why}, so its value cannot be read without running "
            "the file; metrickit reads it from the source: assign the whole spec once, as a "
            "plain dict literal at the top level of the file (REWARD_SPEC = {...})"
        )
    if found is None:
        return None
    try:
        spec = ast.literal_eval(found)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ScorerError(
            f"{path}:{found.lineno}: REWARD_SPEC is not a plain literal (it uses names, calls "
            "or arithmetic); metrickit reads it without running the file, so write it as a "
            "dict of numbers and strings"
        ) from None
    if not isinstance(spec, dict):
        raise ScorerError(f"{path}:{found.lineno}: REWARD_SPEC is {describe_value(spec)}; "
                          "expected a dict")
    return spec


_SPEC = "REWARD_SPEC"
_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith,
           ast.Match, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _names_spec(target: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == _SPEC for n in ast.walk(target))


def _unreadable_spec(tree: ast.Module) -> tuple[int, str] | None:
    """Where and how the module's ``REWARD_SPEC`` is set other than by a top-level
    assignment of a whole value (None when it is not)."""

    def visit(node: ast.AST, top: bool, module_scope: bool) -> tuple[int, str] | None:
        for child in ast.iter_child_nodes(node):
            found = check(child, top, module_scope)
            if found is not None:
                return found
        return None

    def check(node: ast.AST, top: bool, module_scope: bool) -> tuple[int, str] | None:
        line = getattr(node, "lineno", 0)
        if isinstance(node, _SCOPES):
            # a function's or class's own names are not the module's, unless declared global
            inner = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Global) and _SPEC in n.names for n in ast.walk(node))
            return visit(node, False, inner)
        if module_scope:
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name) and t.id == _SPEC:
                        if not top:
                            return line, ("is assigned inside a block (if/for/while/try/with/"
                                          "match or a function), which may or may not run")
                    elif isinstance(t, ast.Subscript | ast.Attribute) and _is_spec(t.value):
                        return line, "is changed in place (an item or attribute assigned)"
                    elif _names_spec(t):
                        return line, "is unpacked from a tuple or list"
            elif isinstance(node, ast.AugAssign) and (
                    _is_spec(node.target) or _names_spec(node.target)):
                return line, "is changed in place (an augmented assignment such as |=)"
            elif isinstance(node, ast.NamedExpr) and _is_spec(node.target):
                return line, "is bound by :="
            elif isinstance(node, ast.Delete) and any(_names_spec(t) for t in node.targets):
                return line, "is deleted"
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension) and _names_spec(
                    node.target):
                return line, "is a loop variable"
            elif isinstance(node, ast.withitem) and node.optional_vars is not None and (
                    _names_spec(node.optional_vars)):
                return line, "is bound by with ... as"
            elif isinstance(node, ast.Import | ast.ImportFrom) and any(
                    (a.asname or a.name) == _SPEC for a in node.names):
                return line, "is imported from another module"
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    _is_spec(node.func.value) and node.func.attr in _MUTATORS):
                return line, f"is changed in place (.{node.func.attr}(...))"
        return visit(node, top and not isinstance(node, _BLOCKS), module_scope)

    for statement in tree.body:
        found = check(statement, not isinstance(statement, _BLOCKS), True)
        if found is not None:
            return found
    return None


_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                       "__delitem__", "__ior__"})


def _is_spec(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == _SPEC



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



def check_timeout(timeout: float, *, error: type[Exception] = ScorerError) -> float:
    """``timeout`` as seconds, checked against the contract's limit (user code, scorers and
    metric scripts alike, runs at most :data:`MAX_TIMEOUT` seconds); ``error`` otherwise."""
    if (not is_finite_number(timeout)
            or timeout <= 0 or timeout > MAX_TIMEOUT):
        raise error(f"timeout is {timeout!r}; expected seconds > 0 and at most "
                    f"{MAX_TIMEOUT:g} (the {MAX_TIMEOUT:g} s maximum user code may run; the "
                    f"default is {DEFAULT_TIMEOUT:g})")
    return float(timeout)



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
    out: dict[str, Any] = {"returned": short_repr(value), "problems": problems, "ms": ms,
                           "score": None, "feedback": None, "scores": {}, "timed_out": False}
    if isinstance(value, tuple | list) and len(value) == 2:
        score, side = value
        if is_finite_number(score):
            out["score"] = float(score)
        if isinstance(side, dict):
            if isinstance(side.get("feedback"), str):
                out["feedback"] = side["feedback"]
            named = side.get("scores")
            if isinstance(named, dict):
                out["scores"] = {str(k): float(v) for k, v in named.items()
                                 if is_finite_number(v)}
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
        latency = current_measurement(payload.get("latency_ms"), "latency_ms")
        cost = current_measurement(payload.get("cost_usd"), "cost_usd")
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



def reward_spec_problems(spec: Any) -> list[str]:
    if spec is None:
        return []
    from metrickit.scoring.spec import RewardSpec

    try:
        RewardSpec.from_dict(spec)
    except SpecError as exc:
        return [f"REWARD_SPEC: {p}" for p in exc.problems]
    return []
