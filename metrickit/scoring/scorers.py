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

import concurrent.futures as cf
import importlib.util
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from metrickit._core.display import result_html, result_repr
from metrickit.errors import ScorerError
from metrickit.scoring.contract import (
    CASE_FIELDS,
    DEFAULT_TIMEOUT,
    KEY_COLUMNS,
    MEASURED_COLUMNS,
    PathLike,
    Scorer,
    call_scorer,
    check_timeout,
    describe_value,
    load_scorer,
    read_case_lines,
    reward_spec_problems,
    scorer_arity,
    scorer_name,
    source_file_of,
    validate_result,
)
from metrickit.scoring.current import observation, service_cost
from metrickit.scoring.feedback import FeedbackCase, feedback_warnings
from metrickit.scoring.judge import set_judge

__all__ = [
    "DEFAULT_TIMEOUT",
    "KEY_COLUMNS",
    "CaseCheck",
    "ContractReport",
    "as_dspy_metric",
    "check_scorer",
    "load_scorer",
    "observation",
    "read_cases",
    "score_cases",
    "score_summary",
    "service_cost",
    "set_judge",
    "validate_result",
]




# ---------------------------------------------------------------------------
# The return value
# ---------------------------------------------------------------------------
















# ---------------------------------------------------------------------------
# Signature, loading
# ---------------------------------------------------------------------------












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
        return read_case_lines(cases), None
    if isinstance(cases, Iterable) and not isinstance(cases, str | bytes | Mapping):
        rows = list(cases)
        for number, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise ScorerError(f"case {number} is {describe_value(row)}; expected a dict")
        return [dict(r) for r in rows], None
    raise ScorerError(f"cases is {describe_value(cases)}; expected a DataFrame, a JSONL path or a "
                      "list of dicts")


def _payload(row: Mapping[str, Any], index: int, keys: Sequence[str]) -> dict[str, Any]:
    if "output" not in row:
        raise ScorerError(f"case {index} has no 'output' field (fields: {sorted(row)}); a case "
                          "table needs the system's output for each case")
    if "input" in row:
        inputs = row["input"]
    else:
        inputs = {k: v for k, v in row.items() if k not in CASE_FIELDS and k not in keys}
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




# ---------------------------------------------------------------------------
# One call
# ---------------------------------------------------------------------------










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
    ``warnings`` are about feedback an optimiser cannot learn from
    (:mod:`metrickit.scoring.feedback`); they never make ``ok`` False.
    """

    scorer: str
    arity: int | None
    entries: tuple[CaseCheck, ...]
    problems: tuple[str, ...] = ()
    reward_spec: dict[str, Any] | None = field(default=None, compare=False)
    warnings: tuple[str, ...] = ()
    #: the cases in the table (``entries`` are the ones checked); None: not known
    n_cases: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and bool(self.entries) and all(e.ok for e in self.entries)

    @property
    def failed(self) -> tuple[CaseCheck, ...]:
        return tuple(e for e in self.entries if not e.ok)

    @property
    def unchecked(self) -> int:
        """Cases of the table that were not checked (0 when every case was)."""
        return max((self.n_cases or 0) - len(self.entries), 0)

    def _coverage(self) -> str:
        checked = len(self.entries)
        if self.n_cases is None:
            return ""
        if not self.unchecked:
            return f" (every case of the table checked: {checked:,})"
        return (f" ({checked:,} of {self.n_cases:,} cases checked, spread over the table; "
                f"the other {self.unchecked:,} were not: n=None or --all checks every case)")

    def _headline(self) -> str:
        if self.ok:
            return (f"contract OK: {len(self.entries)} of {len(self.entries)} cases valid"
                    + self._coverage())
        if self.problems:
            return "contract BROKEN: the scorer cannot be used as it is"
        sample = " sample" if self.unchecked else ""
        return (f"contract BROKEN: {len(self.failed):,} of {len(self.entries):,}{sample} cases "
                "break it" + self._coverage())

    def failure_groups(self) -> list[tuple[str, list[CaseCheck]]]:
        """The failed cases grouped by reason (each problem's text), most frequent first;
        a case with several problems is in each of their groups."""
        groups: dict[str, list[CaseCheck]] = {}
        for e in self.failed:
            for problem in dict.fromkeys(e.problems):
                groups.setdefault(problem, []).append(e)
        return sorted(groups.items(), key=lambda item: -len(item[1]))

    def failures_text(self, examples: int = 3, reasons: int = 20) -> str:
        """The report with only the failures, grouped by reason with their counts and the
        first ``examples`` cases of each (``metrickit check-scorer --all`` prints this)."""
        lines = [f"Scorer {self.scorer}: {self._headline()}"]
        if self.arity:
            args = "input, output, expected" if self.arity == 3 else "input, output"
            lines.append(f"  called as score({args})")
        lines += [f"  ✗ {p}" for p in self.problems]
        groups = self.failure_groups()
        for problem, cases in groups[:reasons]:
            shown = ", ".join(e.label for e in cases[:examples])
            more = f", ... ({len(cases) - examples:,} more)" if len(cases) > examples else ""
            lines.append(f"  ✗ {len(cases):,} case(s): {problem}")
            lines.append(f"      e.g. {shown}{more}")
            first = cases[0]
            if first.returned is not None:
                lines.append(f"      ({first.label} returned {first.returned})")
        if len(groups) > reasons:
            rest = sum(len(c) for _, c in groups[reasons:])
            lines.append(f"  ... and {len(groups) - reasons:,} other reason(s) ({rest:,} "
                         "failures; check_scorer(...).failure_groups() lists them all)")
        if self.warnings:
            lines.append("  feedback warnings (not failures):")
            lines += [f"  ! {w}" for w in self.warnings]
        return "\n".join(lines)

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
        if self.warnings:
            lines.append("  feedback warnings (not failures):")
            lines += [f"  ! {w}" for w in self.warnings]
        return "\n".join(lines)

    @property
    def table(self) -> Any:
        """One row per checked case, failures first (pandas): ``case``, ``status``,
        ``returned``, ``problems``, ``ms``."""
        import pandas as pd

        entries = sorted(self.entries, key=lambda e: e.ok)  # stable: failures first
        return pd.DataFrame({
            "case": [e.label for e in entries],
            "status": ["ok" if e.ok else "FAIL" for e in entries],
            "returned": [e.returned or "" for e in entries],
            "problems": ["; ".join(e.problems) for e in entries],
            "ms": [math.nan if e.duration_ms is None else e.duration_ms for e in entries],
        }, columns=["case", "status", "returned", "problems", "ms"])

    def _display(self) -> tuple[str, Any, list[str]]:
        notes = list(self.problems)
        if self.warnings:
            notes += [f"Feedback warnings (not failures): {len(self.warnings)}",
                      *self.warnings]
        return (f"Scorer {self.scorer}: {self._headline()}",
                self.table if self.entries else None, notes)

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="ContractReport")

    def __repr__(self) -> str:
        return result_repr("ContractReport", *self._display())




def check_scorer(
    score_or_path: Scorer | PathLike,
    cases: Any,
    *,
    n: int | None = 3,
    timeout: float = DEFAULT_TIMEOUT,
) -> ContractReport:
    """Run a scorer on ``n`` sample cases (or every case) and report how it honours the
    scorer contract.

    Parameters
    ----------
    score_or_path
        A scorer function (run in this process, each call in a thread) or the path of a
        ``metric.py`` (run in a separate process that a hang, ``sys.exit`` or a crash
        cannot take down with you).
    cases
        A DataFrame, JSONL path or list of dicts with input fields (or an ``input`` dict),
        ``output``, optional ``expected``, ``latency_ms``, ``cost_usd``. ``n`` cases
        spread evenly over the table are used (first and last included; all of them when
        the table has no more than ``n``), and each is labelled with its row number. A path scorer gets each case's own objects (pickled, as
        :func:`score_cases` would pass them); a case that does not pickle fails with the
        field named.
    n
        Number of sample cases (the contract check uses 3); None: every case of the table.
        The report says how many of the table's cases were checked.
    timeout
        Seconds per call; at most 600.

    Returns
    -------
    ContractReport
        ``.ok``, ``.entries`` (one per case checked), ``.n_cases`` (in the table),
        ``.failure_groups()`` and ``.failures_text()`` (failures by reason),
        ``.problems`` (scorer-level), ``.warnings``
        (feedback that is empty, generic, the same for different scores, or names neither
        the expected value nor the output: see :mod:`metrickit.scoring.feedback`); prints
        readably.

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
    check_timeout(timeout)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ScorerError(f"n is {n!r}; expected a positive number of sample cases, or None "
                          "for every case")
    rows, _ = read_cases(cases)
    n_cases = len(rows)
    n = n_cases if n is None else n
    # spread over the table, not its first rows: a case table is often sorted by case, so
    # its first rows are one case answered by several candidates, often all correct
    positions = sorted({round(i * (len(rows) - 1) / max(n - 1, 1)) for i in range(n)}
                       if len(rows) > n else range(len(rows)))
    rows = [rows[i] for i in positions]
    keys = _default_keys(rows)
    payloads = [_payload(row, i, keys) for i, row in zip(positions, rows, strict=True)]
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
        name = scorer_name(score)
        arity, reason = scorer_arity(score)
        spec = getattr(score, "__globals__", {}).get("REWARD_SPEC")
        results = []
        if reason:
            problems.append(reason)
        else:
            problems += reward_spec_problems(spec)
            scorer_file = source_file_of(score)
            results = [call_scorer(score, arity, p, timeout, scorer_file) for p in payloads]
    entries = tuple(
        CaseCheck(index=positions[i], key=case_keys[i], returned=r["returned"],
                  score=r["score"], feedback=r["feedback"], scores=r["scores"],
                  problems=tuple(r["problems"]), duration_ms=r["ms"], timed_out=r["timed_out"])
        for i, r in enumerate(results)
    )
    # A REWARD_SPEC scorer's feedback is about accuracy; speed and cost are measured for it.
    part = "accuracy" if isinstance(spec, dict) else None
    looked_at = [FeedbackCase(e.label, e.scores.get(part, e.score) if part else e.score,
                              e.feedback, payload["output"], payload["expected"],
                              part or "score")
                 for e, payload in zip(entries, payloads, strict=False) if e.ok]
    return ContractReport(scorer=name, arity=arity or None, entries=entries,
                          problems=tuple(problems),
                          reward_spec=spec if isinstance(spec, dict) else None,
                          warnings=tuple(feedback_warnings(looked_at)), n_cases=n_cases)


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
    if timeout is not None:
        check_timeout(timeout)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ScorerError(f"workers is {workers!r}; expected a positive number of threads "
                          "(or None for the thread pool's default)")
    if backend not in ("pandas", "polars"):  # refused before any case is scored
        raise ScorerError(f"backend is {backend!r}; expected 'pandas' or 'polars'")
    if backend == "polars":  # refused before any case is scored when polars is missing
        from metrickit._core.schema import import_polars

        import_polars("score_cases(backend='polars')", "use backend='pandas' (the default)")
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
    scorer_file = source_file_of(score)
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
    if namespace is None:  # score_cases refused any other backend before scoring
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
