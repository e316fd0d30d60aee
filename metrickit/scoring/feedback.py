"""Is a scorer's feedback something an optimiser can learn from?

An optimiser such as DSPy's GEPA reads only a scorer's feedback text, never its code or the
case (docs/contracts.md, section 2). Feedback helps it when it says what was expected and
what was produced ("Expected 'billing', got 'other'. The message mentions a charge.");
"Wrong." or "Bad format." could be said of any case and teach it nothing.

:func:`feedback_warnings` is what :func:`metrickit.check_scorer` adds to its report as
warnings (never failures); :func:`feedback_report` summarises the feedback of a whole scored
case table (:func:`metrickit.score_cases` output).

The heuristics, and what they miss
----------------------------------
*empty*
    The feedback is empty or only whitespace.
*generic*
    Every word of the feedback is one of :data:`GENERIC_WORDS`: words that carry no
    information about the case ("wrong", "incorrect", "bad", "format", "answer", ...), so
    "Wrong.", "Bad format.", "Incorrect", "Wrong label." and "The answer is wrong." are
    generic, and "Wrong: expected 'billing'" is not. A bare affirmation ("Correct.", "OK")
    is accepted on a case with full marks and generic on any other case. Limits: a generic
    sentence with one unlisted word ("Wrong, sorry.") passes; a specific feedback made only
    of listed words ("No." as the right answer to a yes/no question) is flagged.
*the same for different scores*
    One feedback text is returned for cases with different scores: the text cannot tell the
    optimiser what made the difference. Only the sample cases are compared.
*names neither the expected value nor the output*
    On a case below full marks, the feedback contains none of the expected value's or the
    output's values. A value is looked for as a whole word, case-insensitively, after
    taking the leaves of dicts and lists (values, not keys: ``{"label": "billing"}`` is
    looked for as ``billing``); a long string (over 60 characters) counts as named when a
    run of 4 of its words appears. Limits: a paraphrase ("a charge-related label") is not
    recognised; a one-character value ("a", "1") is named by almost any feedback; a value
    that is also an ordinary word ("other") may be found by chance.

:func:`metrickit.check_scorer` judges a ``REWARD_SPEC`` scorer's feedback against its
accuracy part (``scores["accuracy"]``): speed and cost are measured by the framework, and a
fast correct answer is not failing because its composite is 0.96.

*Full marks* is 1 or the best score among the cases looked at, whichever is larger (scores
in [0, 1] are the usual range; a 0-10 scorer gets its best observed score).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from metrickit._core.display import result_html, result_repr
from metrickit.errors import ScorerError

__all__ = [
    "GENERIC_WORDS",
    "POSITIVE_WORDS",
    "FeedbackCase",
    "FeedbackReport",
    "feedback_report",
    "feedback_warnings",
    "full_marks",
    "is_generic",
    "names_value",
]

#: Words that say nothing about a particular case; feedback made only of these is generic.
GENERIC_WORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "it", "this", "that", "not", "no", "nope", "bad",
    "wrong", "incorrect", "invalid", "error", "errors", "fail", "failed", "failure", "fails",
    "mismatch", "format", "formatted", "formatting", "answer", "label", "output", "response",
    "result", "prediction", "value", "try", "again", "please", "score", "very", "totally",
    "completely", "partially", "partly", "somewhat", "close", "almost", "poor",
    "unacceptable", "inaccurate", "missing", "mistake", "problem", "issue", "see", "above",
    "correct", "ok", "okay", "good", "great", "right", "pass", "passed", "perfect", "yes",
    "fine", "valid", "match", "matches", "exact", "done", "success", "well", "nice", "and",
    "or", "of", "in", "0", "1", "0.0", "1.0",
})
#: Generic words that say the case is fine; such feedback is accepted on a full-marks case.
POSITIVE_WORDS = frozenset({
    "correct", "ok", "okay", "good", "great", "right", "pass", "passed", "perfect", "yes",
    "fine", "valid", "match", "matches", "exact", "done", "success", "well", "nice", "1",
    "1.0", "a", "an", "the", "is", "it", "this", "that", "answer", "label", "output",
    "response", "result", "prediction", "value", "very", "totally", "completely", "and",
})

_WORD = re.compile(r"[0-9]+(?:\.[0-9]+)?|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_LONG = 60  # characters; a longer value is named by a run of _RUN of its words
_RUN = 4
_QUOTE = 80  # characters of feedback or value quoted in a warning


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _quote(value: Any, limit: int = _QUOTE) -> str:
    text = repr(value)
    if len(text) <= limit:
        return text
    end = text[0] if text[0] in "'\"" else ""
    return text[: limit - 3 - len(end)] + "..." + end


def is_generic(feedback: str, *, full: bool = False) -> bool:
    """True when ``feedback`` is made only of :data:`GENERIC_WORDS` (see the module notes).

    Parameters
    ----------
    feedback
        The feedback text.
    full
        The case has full marks: a bare affirmation ("Correct.") is then not generic.

    Examples
    --------
    >>> from metrickit.scoring.feedback import is_generic
    >>> is_generic("Wrong."), is_generic("Bad format."), is_generic("Correct.", full=True)
    (True, True, False)
    >>> is_generic("Expected 'billing', got 'other'. The message mentions a charge.")
    False
    """
    words = _words(feedback)
    if not words or any(w not in GENERIC_WORDS for w in words):
        return False
    return not (full and all(w in POSITIVE_WORDS for w in words))


def _leaves(value: Any, depth: int = 0) -> list[str]:
    """The values of ``value`` as text: strings and numbers, through dicts and lists."""
    if value is None or isinstance(value, bool) or depth > 6:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, int | np.integer):
        return [str(int(value))]
    if isinstance(value, float | np.floating):
        number = float(value)
        if not math.isfinite(number):
            return []
        return [str(int(number))] if number.is_integer() else [repr(number)]
    if isinstance(value, Mapping):
        return [leaf for v in value.values() for leaf in _leaves(v, depth + 1)]
    if isinstance(value, list | tuple | set | frozenset):
        return [leaf for v in value for leaf in _leaves(v, depth + 1)]
    text = str(value)
    return [text] if text.strip() else []


def _normal(text: str) -> str:
    return " ".join(text.casefold().split())


def _contains(feedback: str, leaf: str) -> bool:
    needle = _normal(leaf)
    if len(needle) <= _LONG:
        return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", feedback) is not None
    words = needle.split()
    return any(" ".join(words[i:i + _RUN]) in feedback
               for i in range(max(1, len(words) - _RUN + 1)))


def names_value(feedback: str, value: Any) -> bool:
    """True when ``feedback`` names ``value`` or one of its leaves (see the module notes).

    Examples
    --------
    >>> from metrickit.scoring.feedback import names_value
    >>> names_value("Expected 'billing', got 'other'.", {"label": "billing"})
    True
    >>> names_value("Wrong.", {"label": "billing"})
    False
    """
    text = _normal(feedback)
    return any(_contains(text, leaf) for leaf in _leaves(value))


def full_marks(scores: Sequence[float | None]) -> float:
    """Full marks among ``scores``: 1 or the best finite score, whichever is larger."""
    finite = [s for s in scores if s is not None and math.isfinite(s)]
    return max([1.0, *finite])


@dataclass(frozen=True)
class FeedbackCase:
    """One scored case as the feedback checks see it."""

    label: str
    score: float | None
    feedback: str | None
    output: Any = None
    expected: Any = None
    scored_as: str = "score"  # what ``score`` is: "score", or "accuracy" for a REWARD_SPEC part

    def describe(self) -> str:
        what = f"output {_quote(self.output, 60)}"
        if self.expected is not None:
            what += f", expected {_quote(self.expected, 60)}"
        return f"{self.label} ({what})"


def feedback_warnings(cases: Sequence[FeedbackCase]) -> list[str]:
    """Warnings about feedback an optimiser cannot learn from; each quotes feedback and case.

    Cases without feedback (a call that failed) are skipped. The checks are those of the
    module notes: empty, generic, the same text for different scores, and (on a case below
    full marks) naming neither the expected value nor the output.

    Examples
    --------
    >>> from metrickit.scoring.feedback import FeedbackCase, feedback_warnings
    >>> weak = FeedbackCase("case 0", 0.0, "Wrong.", "other", {"label": "billing"})
    >>> print(feedback_warnings([weak])[0])  # doctest: +ELLIPSIS
    case 0 (output 'other', expected {'label': 'billing'}): feedback 'Wrong.' is generic...
    >>> useful = FeedbackCase("case 0", 0.0, "Expected 'billing', got 'other'.", "other",
    ...                       {"label": "billing"})
    >>> feedback_warnings([useful])
    []
    """
    scored = [c for c in cases if isinstance(c.feedback, str)]
    full = full_marks([c.score for c in scored])
    warnings: list[str] = []
    for case in scored:
        text = case.feedback or ""
        at_full = case.score is not None and case.score >= full
        if not text.strip():
            warnings.append(
                f"{case.describe()}: the feedback is empty ({text!r}); the optimiser reads "
                "only the feedback, so say what is wrong and what a correct output looks like"
            )
        elif is_generic(text, full=at_full):
            warnings.append(
                f"{case.describe()}: feedback {_quote(text)} is generic: it could be said of "
                f"any case{'' if at_full else f' ({case.scored_as} {case.score:g})'}. Say what "
                "was expected and what was produced, e.g. \"Expected 'billing', got 'other'. "
                "The message mentions a charge.\""
            )
        elif not at_full:
            values = [v for v in (case.expected, case.output) if _leaves(v)]
            if values and not any(names_value(text, v) for v in values):
                named = "the expected value nor the output" if case.expected is not None \
                    else "the output"
                warnings.append(
                    f"{case.describe()}: feedback {_quote(text)} names neither "
                    f"{named}; an optimiser that never sees the case cannot tell what "
                    "a correct output looks like"
                )
    by_text: dict[str, list[FeedbackCase]] = {}
    for case in scored:
        if (case.feedback or "").strip() and case.score is not None:
            by_text.setdefault(case.feedback or "", []).append(case)
    for text, group in by_text.items():
        if len({c.score for c in group}) > 1:
            listed = ", ".join(f"{c.label}: {c.score:g}" for c in group)
            warnings.append(
                f"feedback {_quote(text)} is the same for different scores ({listed}): the "
                "text cannot tell the optimiser what made the difference"
            )
    return warnings


# ---------------------------------------------------------------------------
# A whole scored table
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FeedbackReport:
    """What :func:`feedback_report` found; ``summary()`` gives the headline numbers.

    Attributes
    ----------
    rows
        One row per case (pandas): ``score``, ``feedback``, ``length`` (characters),
        ``failing`` (below full marks), ``empty``, ``generic``, ``names_expected`` and
        ``names_output`` (NA where the table has no such column or the case no value).
    top
        The most common feedback strings: ``feedback``, ``count``, ``share`` (of cases with
        feedback), ``mean_score``, ``min_score``, ``max_score``.
    lengths
        Length distribution in characters (``min``, ``p25``, ``median``, ``p75``,
        ``max``) and ``median_words``.
    full
        The score counted as full marks (see the module notes).
    """

    rows: Any
    top: Any
    lengths: dict[str, float]
    full: float
    n_cases: int
    n_feedback: int
    n_errors: int
    distinct: int
    failing: int
    failing_with_expected: int
    names_expected: int
    has_output: bool

    @property
    def distinct_share(self) -> float:
        """Distinct feedback strings per case with feedback (1: every case has its own)."""
        return self.distinct / self.n_feedback if self.n_feedback else math.nan

    @property
    def failing_distinct_share(self) -> float:
        """Distinct feedback strings per failing case: what an optimiser learns from."""
        failing = self.rows[self.rows["failing"].fillna(False).astype(bool)]
        return failing["feedback"].nunique() / len(failing) if len(failing) else math.nan

    @property
    def names_expected_share(self) -> float:
        """Share of failing cases with an expected value whose feedback names that value."""
        return (self.names_expected / self.failing_with_expected
                if self.failing_with_expected else math.nan)

    def summary(self) -> dict[str, float | int]:
        """The headline numbers as one dict (e.g. a column of a side-by-side table);
        counts are ints, shares and lengths floats."""
        rows = self.rows
        with_feedback = rows[rows["feedback"].notna()]
        return {
            "cases": int(self.n_cases),
            "with feedback": int(self.n_feedback),
            "distinct share": self.distinct_share,
            "distinct share (failing)": self.failing_distinct_share,
            "generic share": float(with_feedback["generic"].mean()) if len(with_feedback)
            else math.nan,
            "empty share": float(with_feedback["empty"].mean()) if len(with_feedback)
            else math.nan,
            "median length": self.lengths.get("median", math.nan),
            "failing": int(self.failing),
            "failing naming expected": self.names_expected_share,
        }

    def __str__(self) -> str:
        lines = [
            f"Feedback of {self.n_cases} cases ({self.n_feedback} with feedback"
            + (f"; {_count(self.n_errors, 'call')} failed and gave no feedback to judge"
               if self.n_errors else "") + ")",
            f"  distinct strings: {self.distinct} ({self.distinct_share:.1%} of cases with "
            f"feedback; {self.failing_distinct_share:.1%} among failing cases)"
            if self.n_feedback else "  no feedback to look at",
        ]
        if self.lengths:
            lg = self.lengths
            lines.append(f"  length (characters): min {lg['min']:g}, median {lg['median']:g}, "
                         f"max {lg['max']:g}; median {lg['median_words']:g} "
                         + ("word" if lg["median_words"] == 1 else "words"))
        if self.failing_with_expected:
            lines.append(f"  failing cases (below {self.full:g}) whose feedback names the "
                         f"expected value: {self.names_expected} of "
                         f"{self.failing_with_expected} ({self.names_expected_share:.0%})")
        elif self.failing:
            lines.append(f"  {self.failing} failing cases (below {self.full:g}); the table "
                         "has no expected values to look for")
        if len(self.top):
            lines.append("  most common:")
            for row in self.top.itertuples(index=False):
                lines.append(f"    {row.count:>5}  {_quote(row.feedback)}  "
                             f"(mean score {row.mean_score:.3g})")
        return "\n".join(lines)

    def _display(self) -> tuple[str, Any, list[str]]:
        lines = str(self).splitlines()
        end = lines.index("  most common:") if "  most common:" in lines else len(lines)
        return "\n".join(lines[:end]), self.top, []

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="FeedbackReport")

    def __repr__(self) -> str:
        return result_repr("FeedbackReport", *self._display())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _case_rows(cases: Any) -> list[Mapping[str, Any]]:
    """The rows of a case table: a DataFrame, a JSONL path or a list of dicts."""
    import os

    import narwhals as nw

    try:
        return list(nw.from_native(cases, eager_only=True).rows(named=True))
    except TypeError:
        pass
    if isinstance(cases, str | os.PathLike):
        # the reader score_cases used, so the rows are the ones that were scored
        from metrickit.scoring.contract import read_case_lines

        return [{str(k): v for k, v in row.items()} for row in read_case_lines(cases)]
    if isinstance(cases, Sequence) and all(isinstance(r, Mapping) for r in cases):
        return list(cases)
    raise ScorerError(f"cases is {type(cases).__name__}; expected the case table that was "
                      "scored: a DataFrame, a JSONL path or a list of dicts")


def _column(frame: Any, name: str) -> list[Any] | None:
    return list(frame[name]) if name in frame.columns else None


def _same(a: Any, b: Any) -> bool:
    import pandas as pd

    if pd.api.types.is_scalar(a) and pd.api.types.is_scalar(b) and pd.isna(a) and pd.isna(b):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _check_same_order(frame: Any, case_rows: list[Mapping[str, Any]]) -> None:
    """Raise when a key column both tables have (``case_id``, ``candidate``, ...) differs
    on some row: ``cases`` is paired with ``scored`` row by row."""
    from metrickit.scoring.contract import KEY_COLUMNS

    keys = [k for k in KEY_COLUMNS
            if k in frame.columns and all(k in row for row in case_rows)]
    if not keys:
        return
    for i, (ours, row) in enumerate(zip(frame[keys].itertuples(index=False), case_rows,
                                        strict=True)):
        if not all(_same(v, row[k]) for k, v in zip(keys, ours, strict=True)):
            got = ", ".join(f"{k}={v!r}" for k, v in zip(keys, ours, strict=True))
            want = ", ".join(f"{k}={row[k]!r}" for k in keys)
            raise ScorerError(
                f"scored and cases are not in the same order: row {i} of scored has {got}, "
                f"row {i} of cases has {want}. feedback_report pairs them row by row; pass "
                "scored in the order score_cases returned it, or keep output and expected in "
                "scored with score_cases(..., keys=[..., 'output', 'expected']) and leave out "
                "cases=")


def feedback_report(
    scored: Any,
    *,
    cases: Any = None,
    top: int = 10,
    full: float | None = None,
) -> FeedbackReport:
    """How informative the feedback of a scored case table is.

    Parameters
    ----------
    scored
        :func:`metrickit.score_cases` output (pandas or polars): ``score`` and ``feedback``,
        an ``error`` column (rows with an error are counted, not judged), and optionally
        ``expected`` and ``output`` (pass ``keys=[..., "output", "expected"]`` to
        ``score_cases`` to keep them, or give ``cases``).
    cases
        The case table that was scored (the same rows in the same order): its ``output``
        and ``expected`` are used when ``scored`` lacks them. The key columns both tables
        have (``case_id``, ``candidate``, ...) must match row by row; a reordered
        ``scored`` (e.g. ``scored.sort_values("score")``) is an error, not a silent
        mismatch.
    top
        How many of the most common feedback strings to list.
    full
        The score that counts as full marks; by default 1 or the best score in the table,
        whichever is larger. A case below it is *failing*.

    Returns
    -------
    FeedbackReport
        The share of distinct strings, the most common strings with counts, the length
        distribution, and the share of failing cases whose feedback names the expected
        value (see the module notes for how a value counts as named).

    Raises
    ------
    ScorerError
        ``scored`` lacks ``score`` or ``feedback``, or ``cases`` has another number of rows
        or, in a key column both have, another value on some row.

    Examples
    --------
    >>> import metrickit as mk
    >>> from metrickit.scoring.feedback import feedback_report
    >>> cases = [{"q": 1, "output": "other", "expected": "billing"},
    ...          {"q": 2, "output": "billing", "expected": "billing"}]
    >>> def weak(input, output, expected=None):
    ...     return float(output == expected), {"feedback": "OK" if output == expected else "Wrong."}
    >>> report = feedback_report(mk.score_cases(weak, cases, progress=False), cases=cases)
    >>> report.names_expected_share, report.distinct
    (0.0, 2)
    """
    import narwhals as nw
    import pandas as pd

    try:
        frame = nw.from_native(scored, eager_only=True).to_pandas()
    except TypeError:
        raise ScorerError(f"scored is {type(scored).__name__}; expected the DataFrame "
                          "score_cases returns") from None
    missing = [c for c in ("score", "feedback") if c not in frame.columns]
    if missing:
        raise ScorerError(f"scored has no column(s) {missing} (columns: {list(frame.columns)});"
                          " expected score_cases output with 'score' and 'feedback'")
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ScorerError(f"top is {top!r}; expected a number of strings >= 0")
    n = len(frame)
    outputs, expected = _column(frame, "output"), _column(frame, "expected")
    if cases is not None and (outputs is None or expected is None):
        case_rows = _case_rows(cases)
        if len(case_rows) != n:
            raise ScorerError(f"cases has {len(case_rows)} rows and scored {n}; expected the table "
                              "that was scored, in the same order")
        _check_same_order(frame, case_rows)
        outputs = outputs or [r.get("output") for r in case_rows]
        expected = expected or [r.get("expected") for r in case_rows]
    errors = [None if pd.isna(e) else str(e) for e in (_column(frame, "error") or [None] * n)]
    scores = [float(s) for s in frame["score"]]
    texts: list[str | None] = [f if isinstance(f, str) and e is None else None
             for f, e in zip(frame["feedback"], errors, strict=True)]
    ok_scores = [s for s, t in zip(scores, texts, strict=True) if t is not None]
    best = full_marks(ok_scores) if full is None else float(full)

    def missing_value(v: Any) -> bool:
        return v is None or (isinstance(v, float) and math.isnan(v))

    records = []
    for i in range(n):
        text, score = texts[i], scores[i]
        out = None if outputs is None else outputs[i]
        exp = None if expected is None else expected[i]
        rec: dict[str, Any] = {"score": score, "feedback": text,
                               "length": len(text) if text is not None else pd.NA,
                               "failing": score < best if text is not None else pd.NA}
        if text is None:
            rec.update(empty=pd.NA, generic=pd.NA, names_expected=pd.NA, names_output=pd.NA)
        else:
            rec["empty"] = not text.strip()
            rec["generic"] = is_generic(text, full=score >= best)
            rec["names_expected"] = (pd.NA if missing_value(exp) or not _leaves(exp)
                                     else names_value(text, exp))
            rec["names_output"] = (pd.NA if missing_value(out) or not _leaves(out)
                                   else names_value(text, out))
        records.append(rec)
    rows = pd.DataFrame.from_records(
        records, columns=["score", "feedback", "length", "failing", "empty", "generic",
                          "names_expected", "names_output"])
    for col in ("failing", "empty", "generic", "names_expected", "names_output"):
        rows[col] = rows[col].astype("boolean")
    rows["length"] = rows["length"].astype("Int64")

    given = [t for t in texts if t is not None]
    counts = Counter(given)
    top_rows = []
    for text, count in counts.most_common(top):
        s = [sc for sc, t in zip(scores, texts, strict=True) if t == text]
        top_rows.append({"feedback": text, "count": count, "share": count / len(given),
                         "mean_score": float(np.mean(s)), "min_score": float(np.min(s)),
                         "max_score": float(np.max(s))})
    top_frame = pd.DataFrame(top_rows, columns=["feedback", "count", "share", "mean_score",
                                                "min_score", "max_score"])
    lengths: dict[str, float] = {}
    if given:
        chars = np.array([len(t) for t in given], dtype=float)
        lengths = {"min": float(chars.min()), "p25": float(np.percentile(chars, 25)),
                   "median": float(np.median(chars)), "p75": float(np.percentile(chars, 75)),
                   "max": float(chars.max()),
                   "median_words": float(np.median([len(t.split()) for t in given]))}
    failing_mask = rows["failing"].fillna(False).astype(bool)
    named = rows.loc[failing_mask, "names_expected"]
    return FeedbackReport(
        rows=rows, top=top_frame, lengths=lengths, full=best, n_cases=n,
        n_feedback=len(given), n_errors=sum(e is not None for e in errors),
        distinct=len(counts), failing=int(failing_mask.sum()),
        failing_with_expected=int(named.notna().sum()),
        names_expected=int(named.fillna(False).astype(bool).sum()),
        has_output=outputs is not None,
    )
