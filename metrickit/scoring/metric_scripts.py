"""Harbor custom metric scripts (``metric.py -i rewards.jsonl -o metrics.json``).

:func:`run_metric_script` runs a script exactly as Harbor does: the rewards are written
as JSONL (``json.dumps`` of each row's dict, ``null`` for a row without a result), the
script is called with ``-i`` and ``-o``, and the JSON object it wrote is read back.
With ``uv`` on PATH and a PEP 723 block in the script, it runs ``uv run`` (Harbor's
way); otherwise the current interpreter.

The script is the user's code: it runs in its own process (its own session, so the
whole process group is killed at the timeout, and anything it leaves running once it has
exited), never through a shell. The call returns when the script exits, whoever still holds
its stdout and stderr; only their last 2,000 bytes are kept. That is process
isolation, not a sandbox: the script can read and write whatever your user can.

:func:`write_metric_script` goes the other way: it writes a standalone, Harbor-ready
``metric.py`` (stdlib only, PEP 723 header) for a built-in metric or for a plain-Python
function over the reward rows.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from metrickit._core.frame import (
    Policy,
    category_codes,
    counted_trials,
    group_indices,
    reward_arrays,
)
from metrickit._core.proc import TailReader, end_group, join_readers
from metrickit._core.values import NULL, STATUSES
from metrickit.compute.metrics import Metric
from metrickit.errors import (
    MetricError,
    MetricScriptExit,
    MetricScriptOutputError,
    MetricScriptTimeout,
)
from metrickit.io.rewards import read_rewards
from metrickit.scoring.contract import DEFAULT_TIMEOUT, MAX_TIMEOUT, check_timeout

__all__ = [
    "MAX_TIMEOUT",
    "ScriptResult",
    "frame_to_rows",
    "run_metric_script",
    "script_metric",
    "write_metric_script",
    "write_rewards_jsonl",
]

_TAIL = 2000
_PEP723 = re.compile(r"^# /// script\s*$", re.MULTILINE)


def frame_to_rows(frame: Any) -> list[dict[str, int | float] | None]:
    """The reward dicts Harbor would hold for a reward frame (None for null rows).

    Missing keys are left out, JSON integers come back as ints, booleans as floats (as
    Harbor's models hold them).
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    keys, values, is_int, present = reward_arrays(frame)
    n = len(nf)
    if "_status" in nf.columns:
        null_rows = (category_codes(nf.get_column("_status"), STATUSES) == NULL).tolist()
    else:
        null_rows = [False] * n
    columns = [
        (k, values[k].tolist(), (is_int[k] & present[k]).tolist(), present[k].tolist())
        for k in keys
    ]
    rows: list[dict[str, int | float] | None] = []
    for i in range(n):
        if null_rows[i]:
            rows.append(None)
            continue
        row: dict[str, int | float] = {}
        for key, vals, ints, pres in columns:
            if pres[i]:
                row[key] = int(vals[i]) if ints[i] else vals[i]
        rows.append(row)
    return rows


def write_rewards_jsonl(rows: Sequence[Mapping[str, Any] | None], path: Path) -> None:
    """One ``json.dumps`` per row, ``null`` for None: the file Harbor hands a metric script."""
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) if row is not None else "null")
            fh.write("\n")


def find_uv() -> str | None:
    """``uv`` on PATH, or installed beside this Python (a venv's bin/ need not be on PATH)."""
    found = shutil.which("uv")
    if found:
        return found
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.exists() else None


def _command(script: Path, in_path: Path, out_path: Path, python: str | None) -> list[str]:
    uv = find_uv()
    head = script.read_text(encoding="utf-8", errors="replace")
    if python is None and uv and _PEP723.search(head):
        return [uv, "run", "--quiet", str(script), "-i", str(in_path), "-o", str(out_path)]
    return [python or sys.executable, str(script), "-i", str(in_path), "-o", str(out_path)]


def _tail(data: bytes) -> str:
    text = data[-_TAIL:].decode("utf-8", errors="replace")
    return text.strip()


def _run_once(
    script: Path, rows: Sequence[Mapping[str, Any] | None], timeout: float, python: str | None
) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="metrickit-script-") as tmp:
        in_path = Path(tmp) / "rewards.jsonl"
        out_path = Path(tmp) / "metrics.json"
        write_rewards_jsonl(rows, in_path)
        cmd = _command(script.resolve(), in_path, out_path, python)
        proc = subprocess.Popen(
            cmd,
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdout is not None and proc.stderr is not None
        # Drained in bounded memory; the script's exit, not the pipes' end, decides when it
        # is done (a background process it left may hold them open).
        readers = [TailReader(proc.stdout, 0), TailReader(proc.stderr, _TAIL)]
        exited = end_group(proc, timeout)
        join_readers(readers)
        stderr = readers[1].tail()
        if not exited:
            raise MetricScriptTimeout(
                f"metric script {script} ran past its {timeout:g} s timeout and was killed",
                _tail(stderr),
            )
        if proc.returncode != 0:
            how = (
                f"was killed by signal {-proc.returncode}"
                if proc.returncode < 0
                else f"exited with status {proc.returncode}"
            )
            raise MetricScriptExit(f"metric script {script} {how}", _tail(stderr))
        if not out_path.exists():
            raise MetricScriptOutputError(
                f"metric script {script} exited 0 but wrote no output file; it must write a "
                "JSON object to the path given with -o/--output-path (does it ignore -o?)",
                _tail(stderr),
            )
        raw = out_path.read_bytes()
    try:
        # strict: a byte that is not UTF-8 must not become U+FFFD in a metric's name
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MetricScriptOutputError(
            f"metric script {script} wrote output that is not UTF-8 (byte "
            f"{raw[exc.start]:#04x} at offset {exc.start}); expected a JSON object of named "
            "numbers in UTF-8",
            _tail(stderr),
        ) from None
    try:
        result = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MetricScriptOutputError(
            f"metric script {script} wrote output that is not JSON ({exc.msg} at line "
            f"{exc.lineno} column {exc.colno}): {text[:120]!r}; expected a JSON object of "
            "named numbers",
            _tail(stderr),
        ) from None
    except (RecursionError, ValueError) as exc:  # absurd nesting; an int of > 4300 digits
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise MetricScriptOutputError(
            f"metric script {script} wrote output that cannot be read ({reason}); expected "
            "a JSON object of named numbers",
            _tail(stderr),
        ) from None
    if not isinstance(result, dict):
        raise MetricScriptOutputError(
            f"metric script {script} wrote {type(result).__name__} {str(result)[:80]!r}; "
            'expected a JSON object of named numbers like {"mean": 0.81}',
            _tail(stderr),
        )
    out: dict[str, float] = {}
    for key, value in result.items():
        try:
            key.encode("utf-8")
        except UnicodeEncodeError:
            raise MetricScriptOutputError(
                f"metric script {script} wrote the key {key!r}, a lone UTF-16 surrogate escape "
                "that is not valid Unicode; expected metric names in UTF-8 text",
                _tail(stderr),
            ) from None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not math.isfinite(value))
        ):
            raise MetricScriptOutputError(
                f"metric script {script} wrote {key!r}: {value!r} "
                f"({type(value).__name__}); expected a finite number for every key",
                _tail(stderr),
            )
        out[key] = value
    return out


class ScriptResult(dict[Any, Any]):
    """What :func:`run_metric_script` returns: the script's metrics (a plain dict to
    compare and serialise), plus ``notes``: the trials that were not handed to the script
    and why (running trials, and under ``policy="0.26"`` trials without a valid reward)."""

    notes: list[str]

    def __init__(self, values: Mapping[Any, Any], notes: Sequence[str] = ()) -> None:
        super().__init__(values)
        self.notes = list(notes)


def run_metric_script(
    path: str | os.PathLike[str],
    rewards: Any,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    by: str | Sequence[str] | None = None,
    policy: Policy = "0.25",
    python: str | None = None,
) -> ScriptResult:
    """Run a Harbor custom ``metric.py`` on rewards, as Harbor does.

    Parameters
    ----------
    path
        The script. It must accept ``-i/--input-path`` and ``-o/--output-path``.
    rewards
        A reward frame, a trial table, a path to a reward file, JSONL text, or a list of
        dicts/None.
    timeout
        Seconds before the script (its whole process group) is killed; at most 600.
    by
        Run the script once per group of this column (or columns) and return
        ``{group: metrics}``: the per-candidate or per-task breakdown Harbor cannot give.
    policy
        Which trials the script is handed (:func:`metrickit._core.frame.counted_trials`):
        ``"0.25"`` (default) every finished trial, one without a reward as ``null``;
        ``"0.26"`` only trials with a valid reward. A running trial is never handed over
        (it has no result: Harbor runs metrics over finished trials).
    python
        Interpreter to use instead of ``uv run``/the current one.

    Returns
    -------
    ScriptResult
        The metrics the script wrote (``{group: metrics}`` with ``by``), a dict with
        ``.notes`` saying which trials were left out and why.

    Raises
    ------
    MetricScriptTimeout, MetricScriptExit, MetricScriptOutputError
        Each with the tail of the script's stderr.
    """
    import narwhals as nw

    script = Path(path)
    if not script.is_file():
        raise MetricError(f"{script}: no such metric script")
    timeout = check_timeout(timeout, error=MetricError)
    if isinstance(rewards, list) and all(r is None or isinstance(r, Mapping) for r in rewards):
        frame = read_rewards(rewards)  # validates what it is given
    else:
        try:
            nw.from_native(rewards, eager_only=True)
            frame = rewards
        except TypeError:
            frame = read_rewards(rewards)
    counted = counted_trials(frame, policy=policy)
    frame = counted.frame
    if by is None:
        return ScriptResult(_run_once(script, frame_to_rows(frame), timeout, python),
                            counted.notes())
    nf = nw.from_native(frame, eager_only=True)
    return ScriptResult({
        label: _run_once(script, frame_to_rows(nf[idx].to_native()), timeout, python)
        for label, idx in group_indices(frame, by).items()
    }, counted.notes())


def script_metric(
    path: str | os.PathLike[str], *, name: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> Metric:
    """A :class:`~metrickit.compute.metrics.Metric` that runs a Harbor ``metric.py``.

    Use it in :func:`~metrickit.compare_metrics` beside built-in metrics. It has no
    confidence interval (running the script thousands of times to bootstrap it would be
    slow and is not done).
    """
    script = Path(path)
    label = name or script.stem

    def run(nf: Any) -> dict[str, float]:
        return run_metric_script(script, nf.to_native(), timeout=timeout)

    return Metric(label, function=run, resample=False, description=f"Harbor metric script {script}")


# ---------------------------------------------------------------------------
# Writing metric.py files
# ---------------------------------------------------------------------------

_HEADER = '''\
# /// script
# dependencies = []
# ///
{docstring}

import argparse
import json
import math
from pathlib import Path


def read_rewards(path):
    rows = []
    for line in Path(path).read_text().splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows


def harbor_sum(values):
    # Python >= 3.12's builtin sum, written out so every Python computes the same bits.
    it = iter(values)
    i_result = 0
    overflowed = False  # past a C long, CPython adds the rest plainly
    for item in it:
        if isinstance(item, int):
            i_result += item
            overflowed = overflowed or not -(2**63) <= i_result <= 2**63 - 1
            continue
        if overflowed:
            result = i_result + item
            for x in it:
                result = result + x
            return result
        f_result = i_result + item
        c = 0.0
        for x in it:
            if isinstance(x, float):
                t = f_result + x
                if abs(f_result) >= abs(x):
                    c += (f_result - t) + x
                else:
                    c += (x - t) + f_result
                f_result = t
            else:
                f_result += float(x)
        if c and math.isfinite(c):
            f_result += c
        return f_result
    return i_result


def as_float(v):
    return float(v) if isinstance(v, bool) else v
'''

_FOOTER = """

def main(input_path, output_path):
    rewards = [
        None if r is None else {{k: as_float(v) for k, v in r.items()}}
        for r in read_rewards(input_path)
    ]
    output_path.write_text(json.dumps(compute(rewards)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description={doc!r})
    parser.add_argument("-i", "--input-path", type=Path, required=True)
    parser.add_argument("-o", "--output-path", type=Path, required=True)
    args = parser.parse_args()
    main(args.input_path, args.output_path)
"""

_BODIES: dict[str, str] = {
    "harbor": """

AGG = {{
    "mean": lambda v: harbor_sum(v) / len(v) if v else 0,
    "sum": harbor_sum,
    "min": min,
    "max": max,
}}


def compute(rewards):
    # harbor/metrics/base.py::aggregate_reward_dicts
    agg = AGG[{kind!r}]
    keys = sorted({{k for r in rewards if r is not None for k in r}})
    if len(keys) <= 1:
        return {{{kind!r}: agg([0 if r is None else next(iter(r.values()), 0) for r in rewards])}}
    return {{k: agg([0 if r is None else r.get(k, 0) for r in rewards]) for k in keys}}
""",
    "pass_rate": """

def compute(rewards):
    keys = {keys!r} or sorted({{k for r in rewards if r is not None for k in r}})
    passed = 0
    for r in rewards:
        if r is not None and keys and all(r.get(k, 0) >= {threshold!r} for k in keys):
            passed += 1
    return {{{name!r}: passed / len(rewards) if rewards else 0.0}}
""",
    "weighted": """

WEIGHTS = {weights!r}


def compute(rewards):
    total = float(sum(WEIGHTS.values()))
    values = [
        sum((w / total) * (0 if r is None else r.get(k, 0)) for k, w in WEIGHTS.items())
        for r in rewards
    ]
    return {{{name!r}: math.fsum(values) / len(values) if values else 0.0}}
""",
    "quantile": """

def compute(rewards):
    key = {key!r}
    values = sorted(float(0 if r is None else (r.get(key, 0) if key else next(iter(r.values()), 0)))
                    for r in rewards)
    # numpy's default (linear) quantile, including its lerp rounding
    pos = {q!r} * (len(values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    t = pos - lo
    a, b = values[lo], values[hi]
    diff = b - a
    value = b - diff * (1 - t) if t >= 0.5 else a + diff * t
    return {{{name!r}: value}}
""",
}


def _finite(name: str, value: Any) -> float:
    """``value`` as a float when it is a finite real number (not a bool), else MetricError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:  # numpy scalars and the like
            import numpy as np

            ok = isinstance(value, np.integer | np.floating)
        except ImportError:  # pragma: no cover
            ok = False
        if not ok:
            raise MetricError(f"{name}={value!r} ({type(value).__name__}); expected a finite "
                              "number")
    try:
        number = float(value)
    except OverflowError:
        raise MetricError(f"{name}={value!r} is too large for a float; expected a finite "
                          "number") from None
    if not math.isfinite(number):
        raise MetricError(f"{name}={value!r}; expected a finite number")
    return number


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise MetricError(f"{name}={value!r} ({type(value).__name__}); expected a string")
    return value


def _docstring(text: str) -> str:
    """A module docstring literal holding ``text``, whatever it contains."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"""{text}\n\n{_WRITTEN_BY}\n"""'
    return repr(f"{text}\n\n{_WRITTEN_BY}\n")


_WRITTEN_BY = (
    "Written by `metrickit new-metric`. Harbor runs it as `uv run metric.py -i REWARDS -o OUT`."
)


FUNCTION_SIGNATURE = "compute(rewards: list[dict | None]) -> dict[str, float]"
"""What ``write_metric_script(kind="function")`` and ``new-metric --kind function`` take."""

FUNCTION_SAMPLE: list[dict[str, Any] | None] = [
    {"correctness": 1.0, "style": 0.5}, {"correctness": 1}, {"style": 1}, {}, None,
]
"""Reward rows a function metric is tried on when no sample is given: a full row, then
Harbor's missing-dimensions example (a key missing, an empty dict, ``null``)."""

_FUNCTION_COMMENT = (
    f"# {FUNCTION_SIGNATURE}\n"
    "# rewards: one dict per trial (reward key -> number), None for a trial without a reward.\n"
    "# Returns named finite numbers, e.g. {\"pass_rate\": 0.8}; Harbor stores them as metrics.\n"
)


def _sample_rows(sample: Any) -> list[dict[str, Any] | None]:
    """Reward rows to try a function metric on: a list as given, or a reward JSONL file read
    the way the written script reads it (blank lines skipped)."""
    if sample is None:
        return [None if r is None else dict(r) for r in FUNCTION_SAMPLE]
    if isinstance(sample, str | os.PathLike):
        try:
            lines = Path(sample).read_text(encoding="utf-8").splitlines()
            rows = [json.loads(line) for line in lines if line.strip()]
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise MetricError(f"sample {sample}: cannot read it as reward JSONL ({exc})") from None
    elif isinstance(sample, Sequence):
        rows = list(sample)
    else:
        raise MetricError(f"sample={type(sample).__name__}; expected a list of reward dicts/None "
                          "or a reward JSONL file")
    if not rows or not all(r is None or isinstance(r, Mapping) for r in rows):
        raise MetricError("sample: expected at least one reward row, each a dict or None "
                          f"(got {rows[:3]!r})")
    return [None if r is None else {k: float(v) if isinstance(v, bool) else v
                                    for k, v in r.items()} for r in rows]


def _function_result_problem(value: Any) -> str | None:
    """Why ``value`` is not a ``dict[str, float]`` of finite numbers (None when it is)."""
    if not isinstance(value, dict):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return (f"it returned the bare number {value!r}; return a dict of named numbers, "
                    f"e.g. {{'my_metric': {value!r}}}")
        return (f"it returned {type(value).__name__} {value!r:.80}; expected a dict of named "
                "numbers")
    if not value:
        return "it returned an empty dict; expected at least one named number"
    for key, number in value.items():
        if not isinstance(key, str):
            return (f"key {key!r} is a {type(key).__name__}; metric names must be strings "
                    "(JSON would turn it into a string silently)")
        if isinstance(number, bool) or not isinstance(number, int | float):
            return (f"{key!r}: {number!r:.80} is a {type(number).__name__}; expected a number "
                    "(int or float)")
        if not math.isfinite(number):
            return f"{key!r}: {number!r} is not finite; expected a finite number"
    return None


def _check_function(function: Callable[[list[Any]], Any], text: str, sample: Any) -> None:
    """Run a function metric on sample rows in this process, then run the script ``text``
    as Harbor would (a fresh interpreter with the standard library only); MetricError
    unless both return a ``dict[str, float]`` of finite numbers."""
    rows = _sample_rows(sample)
    shown = json.dumps(rows)[:200]
    name = getattr(function, "__name__", "compute")
    try:
        value = function([None if r is None else dict(r) for r in rows])
    except Exception as exc:
        raise MetricError(
            f"{name}(rewards) raised {type(exc).__name__}: {exc} on the sample rows {shown}. "
            "Harbor passes one dict per trial, and a dict may lack a key, be {} or be None "
            "(null); handle those, or try it on your own rows (sample=, or --sample "
            "REWARDS.jsonl)"
        ) from exc
    problem = _function_result_problem(value)
    if problem:
        raise MetricError(
            f"{name} must be {FUNCTION_SIGNATURE}; on the sample rows {shown} {problem}"
        )
    with tempfile.TemporaryDirectory(prefix="metrickit-new-metric-") as tmp:
        script, in_path, out_path = (Path(tmp) / n for n in
                                     ("metric.py", "rewards.jsonl", "metrics.json"))
        script.write_text(text, encoding="utf-8")
        write_rewards_jsonl(rows, in_path)
        # -I -S: no site-packages and no user paths, like `uv run` with `dependencies = []`
        cmd = [sys.executable, "-I", "-S", str(script), "-i", str(in_path), "-o", str(out_path)]
        try:
            proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True,
                                  stdin=subprocess.DEVNULL, timeout=DEFAULT_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise MetricError(f"the written metric.py ran past {DEFAULT_TIMEOUT:g} s on the "
                              f"sample rows {shown}; nothing written") from None
        if proc.returncode != 0:
            raise MetricError(
                f"the metric.py written from {name} fails on the sample rows {shown} when "
                "run on its own, as Harbor runs it (only the function's source is copied: "
                "imports and helpers it uses must be inside the function, and only the "
                f"standard library is there):\n{proc.stderr.strip()[-_TAIL:]}"
            )
        try:
            written = json.loads(out_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MetricError(f"the metric.py written from {name} wrote no readable JSON on "
                              f"the sample rows ({exc})") from None
        problem = _function_result_problem(written)
        if problem:
            raise MetricError(f"the metric.py written from {name} does not write named numbers "
                              f"on the sample rows: {problem}")


def write_metric_script(
    path: str | os.PathLike[str],
    *,
    kind: str = "mean",
    name: str | None = None,
    threshold: float = 1.0,
    keys: Sequence[str] = (),
    weights: Mapping[str, float] | None = None,
    q: float = 0.5,
    key: str | None = None,
    function: Callable[[list[Any]], Any] | None = None,
    overwrite: bool = True,
    sample: Any = None,
) -> Path:
    """Write a standalone Harbor ``metric.py`` computing a built-in or your own metric.

    ``kind``: ``"mean"``/``"sum"``/``"min"``/``"max"`` (Harbor's own, bit for bit),
    ``"pass_rate"`` (``threshold``, optional ``keys``), ``"weighted"`` (``weights``),
    ``"quantile"`` (``q``, ``key``), or ``"function"``: ``function`` is a plain-Python
    function with the signature :data:`FUNCTION_SIGNATURE`,
    ``compute(rewards: list[dict | None]) -> dict[str, float]`` (one reward dict per trial,
    None for a trial without one; it returns named finite numbers such as
    ``{"pass_rate": 0.8}``), whose source is copied in. Before anything is written the
    function is run on ``sample`` (reward rows: a list of dicts/None or a reward JSONL
    file; default :data:`FUNCTION_SAMPLE`, Harbor's missing-dimensions example plus a full
    row), in this process and then as the written script would run under Harbor (standard
    library only), and refused when it raises or returns anything but ``dict[str, float]``.

    Every argument is checked before anything is written, as the in-process metrics check
    them: ``threshold`` finite, weights finite, >= 0 and not all 0, ``0 <= q <= 1``, names
    and keys strings (written into the script as string literals, never as code).
    ``overwrite=False`` refuses an existing file (``metrickit new-metric`` without
    ``--force``).

    Raises
    ------
    MetricError
        An argument the metric cannot use, a function that fails on the sample rows or
        returns something else than ``dict[str, float]``, or an existing file with
        ``overwrite=False``; nothing is written.
    """
    out = Path(path)
    label = (_text("name", name) if name is not None else "") or _text("kind", kind)
    if kind in ("mean", "sum", "min", "max"):
        body = _BODIES["harbor"].format(kind=kind)
    elif kind == "pass_rate":
        if isinstance(keys, str):
            raise MetricError(f"keys={keys!r} is one string; expected a list of reward keys")
        body = _BODIES["pass_rate"].format(
            keys=[_text("keys item", k) for k in keys],
            threshold=_finite("threshold", threshold), name=label,
        )
    elif kind == "weighted":
        if not weights:
            raise MetricError(
                "kind='weighted' needs weights, e.g. {'correctness': 0.7, 'style': 0.3}"
            )
        checked = {_text("weights key", k): _finite(f"weights[{k!r}]", w)
                   for k, w in weights.items()}
        total = sum(checked.values())  # as the script sums them
        if any(w < 0 for w in checked.values()) or not 0 < total < math.inf:
            raise MetricError(f"weights {checked!r} must be >= 0 and not all 0 (and sum to a "
                              "finite number)")
        body = _BODIES["weighted"].format(weights=checked, name=label)
    elif kind == "quantile":
        number = _finite("q", q)
        if not 0.0 <= number <= 1.0:
            raise MetricError(f"quantile q={q!r}; expected 0 <= q <= 1")
        body = _BODIES["quantile"].format(
            key=None if key is None else _text("key", key), q=number, name=label
        )
    elif kind == "function":
        if function is None:
            raise MetricError("kind='function' needs function=compute(rewards) -> dict")
        fname = getattr(function, "__name__", "")
        if not isinstance(fname, str) or not fname.isidentifier():
            raise MetricError(f"function {function!r} has no usable name; expected a plain "
                              "def compute(rewards) -> dict (not a lambda)")
        try:
            source = textwrap.dedent(inspect.getsource(function))
        except (OSError, TypeError) as exc:
            raise MetricError(f"the source of {fname} cannot be read ({exc}); expected a "
                              "function defined in a .py file") from None
        body = (
            "\n\n" + _FUNCTION_COMMENT + source
            + (f"\n\ncompute = {fname}\n" if fname != "compute" else "")
        )
    else:
        raise MetricError(
            f"kind={kind!r}; expected mean, sum, min, max, pass_rate, weighted, quantile "
            "or function"
        )
    doc = f"Harbor metric {label!r} ({kind})"
    text = _HEADER.format(docstring=_docstring(doc)) + body + _FOOTER.format(doc=doc)
    if kind == "function":
        assert function is not None
        _check_function(function, text, sample)
    try:
        with open(out, "w" if overwrite else "x", encoding="utf-8") as fh:
            fh.write(text)
    except FileExistsError:
        raise MetricError(f"{out} exists; not overwritten (pass --force to "
                          "metrickit new-metric, or overwrite=True)") from None
    return out
