"""Which reader reads a path: one table of formats, :func:`detect` and :func:`load`.

Every entry point that takes a path (:func:`metrickit.load`, ``metrickit summarize``,
``metrickit report``, :func:`metrickit.examples.load`) asks this module, so a path means the
same thing everywhere. The format is told from the **top-level layout** of a path only: a
file's suffix and first bytes; a folder's own files and those of its immediate children.
Nothing globs recursively, so an agent's artefact deep inside a Harbor trial folder (a
``results_foo.json``) cannot make a job look like lm-evaluation-harness output.

========================  ==============================================================
format                    what it looks like
========================  ==============================================================
``harbor``                a Harbor job folder (a job ``config.json``/``result.json``/
                          ``job.log``, or child folders that are trial folders), or a
                          folder of job folders
``terminal-bench``        a Terminal-Bench 1 run folder (``results.json`` and
                          ``run_metadata.json``), or a folder of runs
``lm-eval``               lm-evaluation-harness output: a folder holding
                          ``results_<date>.json`` directly, or one level down in model
                          folders (``output_path/<model>/``); or a results file
``inspect``               an Inspect AI ``.eval`` log (a zip), a ``.json`` log (top-level
                          ``eval`` and ``version``/``status``), or a folder of logs
``trial-table``           a ``.csv``, ``.csv.gz``, ``.parquet``, ``.json`` or ``.jsonl``
                          table, one row per trial: saved from a metrickit trial table
                          (``_status`` and ``_kind_<key>`` columns), or a tidy table with
                          ``task_name`` and the value column
``rewards``               Harbor reward JSONL (``.jsonl``, ``.jsonl.gz``), or a folder of
                          such files: a **reward frame**, not a trial table
========================  ==============================================================

A folder that is none of these itself but whose children are (a folder of Terminal-Bench
runs and lm-eval outputs, a folder of folders of jobs) is read as the union of its
children, each by its own reader; entries in such a folder that look like data but fit no
format are named in a :class:`~metrickit.errors.MetrickitWarning` rather than dropped
silently. A path that fits no format is refused with a
:class:`~metrickit.errors.TrialSourceError` that lists every format and why the path is not
it, one line each.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import warnings
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from metrickit._core.schema import check_backend
from metrickit.errors import MetrickitWarning, TrialSourceError

__all__ = ["FORMATS", "MIXED", "Format", "Source", "detect", "load", "read_sources", "sources"]

Backend = Literal["pandas", "polars"]

HARBOR = "harbor"
TERMINAL_BENCH = "terminal-bench"
LM_EVAL = "lm-eval"
INSPECT = "inspect"
TRIAL_TABLE = "trial-table"
REWARDS = "rewards"
#: What :func:`detect` answers for a folder whose children are of several formats.
MIXED = "mixed"

_KIND = "_kind_"
_JOB_KEYS = frozenset({"stats", "n_total_trials", "jobs_dir", "job_name", "agents"})
_TRIAL_KEYS = frozenset({"trial_name", "task_name", "task"})
_TRIAL_FILES = ("result.json", "config.json", "trial.log")
_LM_RESULTS = re.compile(r"^results_.+\.json$")
_TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".json", ".jsonl", ".jsonl.gz")
_DATA_SUFFIXES = (*_TABLE_SUFFIXES, ".eval")
#: JSON files up to this size are parsed whole to tell their keys; larger ones by their head
_PARSE_WHOLE = 4 * 2**20
_HEAD = 256 * 2**10


@dataclass(frozen=True)
class _Options:
    backend: Backend
    value: str | Sequence[str] | None
    candidate: str | None
    progress: bool | None


Reader = Callable[[list[Path], _Options], list[Any]]


@dataclass(frozen=True)
class Format:
    """One format metrickit reads: its name, what it is called and looks like, the public
    reader that reads it, and whether it gives a trial table (else a reward frame)."""

    name: str
    title: str
    looks_like: str
    reader: str
    trials: bool = True
    read: Reader = field(default=lambda units, options: [], repr=False, compare=False)


class Source(NamedTuple):
    """One piece of input: the format and the path its reader is given (a job folder, a
    run folder, a log, a results file, a table file, a reward file)."""

    format: str
    path: Path


# -- looking at a path -----------------------------------------------------------------------


def _suffix(path: Path) -> str:
    """``.csv.gz``/``.jsonl.gz`` for gzipped files, else the last suffix (lower case)."""
    suffixes = [s.lower() for s in path.suffixes[-2:]]
    if len(suffixes) == 2 and suffixes[1] == ".gz":
        return "".join(suffixes)
    return suffixes[-1] if suffixes else ""


def _open(path: Path) -> io.BufferedIOBase:
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rb")
    return open(path, "rb")


def _head(path: Path, size: int = _HEAD) -> bytes:
    try:
        with _open(path) as f:
            return f.read(size)
    except (OSError, EOFError):
        return b""


def _scan_keys(text: str) -> tuple[str, list[str]]:
    """The shape of JSON text, possibly cut short: ``("object", top-level keys)``,
    ``("list", keys of its first element)`` or ``("other", [])``; never parses values."""
    i, n = 0, len(text)
    while i < n and text[i] in " \t\r\n\ufeff":
        i += 1
    if i >= n or text[i] not in "{[":
        return "other", []
    kind = "object" if text[i] == "{" else "list"
    target = 1 if kind == "object" else 2
    depth, expect_key = 0, False
    keys: list[str] = []
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                break  # cut short inside a string
            if depth == target and expect_key:
                try:
                    keys.append(json.loads(text[i : j + 1]))
                except ValueError:
                    break
                expect_key = False
            i = j + 1
            continue
        if c in "{[":
            depth += 1
            if depth == target and c == "{":
                expect_key = True
            elif depth == target and c == "[":  # a list of lists: no keys
                return kind, []
        elif c in "}]":
            depth -= 1
            if depth < target:
                break
        elif c == "," and depth == target:
            expect_key = True
        i += 1
    return kind, keys


def _json_shape(path: Path) -> tuple[str, list[str]]:
    """``(kind, keys)`` of a JSON file (see :func:`_scan_keys`): parsed whole when small."""
    try:
        size = path.stat().st_size
    except OSError:
        return "other", []
    if size <= _PARSE_WHOLE and _suffix(path) == ".json":
        try:
            obj = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError):
            pass  # truncated or corrupt: tell by what the head holds
        else:
            if isinstance(obj, dict):
                return "object", [str(k) for k in obj]
            if isinstance(obj, list):
                first = obj[0] if obj else None
                return "list", [str(k) for k in first] if isinstance(first, dict) else []
            return "other", []
    return _scan_keys(_head(path).decode("utf-8", "replace"))


def _first_line(path: Path) -> bytes:
    """The first non-blank line of a (gzipped) text file, at most 1 MB of it."""
    try:
        with _open(path) as f:
            for _ in range(1000):
                line = f.readline(2**20)
                if not line:
                    return b""
                if line.strip():
                    return line.strip()
    except (OSError, EOFError):
        pass
    return b""


def _listing(names: Sequence[str], limit: int = 8) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _harbor_kind(folder: Path) -> str | None:
    """``"job"``, ``"trial"`` or None, from a folder's own files (as Harbor writes them)."""
    for name in ("result.json", "config.json"):
        file = folder / name
        if file.is_file():
            kind, keys = _json_shape(file)
            if kind == "object":
                if _TRIAL_KEYS & set(keys):
                    return "trial"
                if _JOB_KEYS & set(keys):
                    return "job"
    if (folder / "job.log").is_file():
        return "job"
    if (folder / "trial.log").is_file():
        return "trial"
    return None


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(
            (p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")),
            key=lambda p: p.name,
        )
    except OSError:
        return []


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted((p for p in folder.iterdir() if not p.name.startswith(".")),
                      key=lambda p: p.name)
    except OSError:
        return []


def _table_columns(path: Path) -> tuple[str, list[str]] | str:
    """``(what, columns)`` of a table file, or why it is not a table."""
    suffix = _suffix(path)
    if suffix in (".csv", ".csv.gz"):
        line = _first_line(path)
        if not line:
            return "an empty CSV file (no header line)"
        header = next(csv.reader([line.decode("utf-8", "replace")]), [])
        return "a CSV table", header
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as pq

            names = pq.ParquetFile(path).schema_arrow.names
        except Exception as exc:  # a file pyarrow cannot open: say so
            return f"not a readable parquet file ({type(exc).__name__}: {exc})"
        return "a parquet table", [n for n in names if not n.startswith("__index_level_")]
    if suffix == ".json":
        kind, keys = _json_shape(path)
        if kind == "list":
            return "a JSON list of records", keys
        if kind == "object":
            return "a JSON object", keys
        return "JSON that is neither a list of records nor an object"
    if suffix in (".jsonl", ".jsonl.gz"):
        kind, keys = _scan_keys(_first_line(path).decode("utf-8", "replace"))
        if kind != "object":
            return "JSON lines whose first line is not an object"
        return "JSON lines", keys
    return f"not a table file ({suffix or 'no suffix'}; expected {', '.join(_TABLE_SUFFIXES)})"


def _is_saved_trials(columns: Sequence[str]) -> bool:
    return "_status" in columns and any(c.startswith(_KIND) for c in columns)


def _is_table_jsonl(columns: Sequence[str]) -> bool:
    """A JSON-lines file whose first object names a trial-table column is a table: a reward
    line holds only reward keys (numbers), never ``task_name`` or ``_status``."""
    return "task_name" in columns or "_status" in columns


class _Fit(NamedTuple):
    format: str
    units: list[Path]


@dataclass
class _Misfit:
    """Why a path is none of the formats (one reason per format); ``final``: do not look
    inside it either (a Harbor trial folder)."""

    reasons: dict[str, str]
    final: bool = False


def _examine_file(path: Path) -> _Fit | _Misfit:
    suffix = _suffix(path)
    name = path.name
    why: dict[str, str] = {}
    kind, keys = "other", list[str]()
    if suffix == ".json":
        kind, keys = _json_shape(path)
    shown = f"its top-level keys: {_listing(keys)}" if kind == "object" else (
        "a JSON list" if kind == "list" else "not a JSON object")
    # Harbor: folders only; a job's own file gets a pointer to its folder
    if name in ("result.json", "config.json") and kind == "object" and (
        (_JOB_KEYS | _TRIAL_KEYS) & set(keys)
    ):
        what = "trial" if _TRIAL_KEYS & set(keys) else "job"
        folder = path.parent if what == "job" else path.parent.parent
        why[HARBOR] = f"a Harbor {what}'s {name}: pass the job folder ({folder})"
    else:
        why[HARBOR] = "a file; a Harbor job is a folder (config.json, result.json, trial folders)"
    # Terminal-Bench: folders only
    if name == "results.json" and kind == "object" and {"results", "accuracy"} <= set(keys):
        why[TERMINAL_BENCH] = f"a Terminal-Bench results.json: pass its run folder ({path.parent})"
    else:
        why[TERMINAL_BENCH] = "a file; a run is a folder with results.json and run_metadata.json"
    # lm-eval: a results file
    if _LM_RESULTS.match(name):
        if kind == "object" and "results" in keys:
            return _Fit(LM_EVAL, [path])
        why[LM_EVAL] = f"named like lm-eval's results_<date>.json but has no 'results' ({shown})"
    else:
        why[LM_EVAL] = "not an lm-eval results_<date>.json file"
    # Inspect AI
    if suffix == ".eval":
        if zipfile.is_zipfile(path):
            return _Fit(INSPECT, [path])
        why[INSPECT] = "a .eval file that is not a zip archive, as Inspect writes its logs"
    elif suffix == ".json":
        if kind == "object" and "eval" in keys and ({"version", "status"} & set(keys)):
            return _Fit(INSPECT, [path])
        why[INSPECT] = (f"a .json without top-level 'eval' and 'version'/'status' keys ({shown})")
    else:
        why[INSPECT] = f"not a .eval or .json log ({suffix or 'no suffix'})"
    # reward JSONL, or a table in JSON lines
    table = _table_columns(path) if suffix in _TABLE_SUFFIXES else None
    if suffix in (".jsonl", ".jsonl.gz"):
        if isinstance(table, tuple) and _is_table_jsonl(table[1]):
            why[REWARDS] = (f"its first line has the trial-table column "
                            f"{'task_name' if 'task_name' in table[1] else '_status'}: a table")
        else:
            return _Fit(REWARDS, [path])
    else:
        why[REWARDS] = f"not a .jsonl or .jsonl.gz file ({suffix or 'no suffix'})"
    # a trial table
    if table is None:
        why[TRIAL_TABLE] = (f"not a table file ({suffix or 'no suffix'}; expected "
                            f"{', '.join(_TABLE_SUFFIXES)})")
    elif isinstance(table, str):
        why[TRIAL_TABLE] = table
    else:
        what, columns = table
        if _is_saved_trials(columns) or "task_name" in columns:
            return _Fit(TRIAL_TABLE, [path])
        why[TRIAL_TABLE] = (
            f"{what} with columns {_listing(columns)}: neither a saved trial table (_status "
            "and _kind_<key> columns) nor one with task_name; read it yourself and map its "
            "columns with mk.trials_from_frame(df, task=..., reward=..., candidate=...)"
        )
    return _Misfit(why)


def _examine_folder(path: Path) -> _Fit | _Misfit:
    """A folder that is one unit of a format itself (a job, a run, an lm-eval model folder)."""
    kind = _harbor_kind(path)
    if kind == "trial":
        reason = f"a single Harbor trial folder: pass the job folder that holds it ({path.parent})"
        return _Misfit({f.name: reason for f in FORMATS.values()}, final=True)
    if kind == "job":
        return _Fit(HARBOR, [path])
    children = _subdirs(path)
    kinds: list[str | None] = []
    for child in children:
        kinds.append(_harbor_kind(child))
        if kinds[-1] == "trial":
            return _Fit(HARBOR, [path])  # a job that has not written its own files yet
    if (path / "results.json").is_file() and (path / "run_metadata.json").is_file():
        return _Fit(TERMINAL_BENCH, [path])
    results = [
        f for f in sorted(path.glob("results_*.json"))
        if f.is_file() and _LM_RESULTS.match(f.name) and "results" in _json_shape(f)[1]
    ]
    if results:
        return _Fit(LM_EVAL, results)
    # trial files that do not parse (a truncated result.json): a job by its layout, so that
    # its reader names the bad file
    if "job" not in kinds and any(
        kind is None and any((c / name).is_file() for name in _TRIAL_FILES)
        for c, kind in zip(children, kinds, strict=True)
    ):
        return _Fit(HARBOR, [path])
    half_tb = ("run_metadata.json but no results.json" if (path / "run_metadata.json").is_file()
               else "no results.json with run_metadata.json")
    return _Misfit({
        HARBOR: "no Harbor job found: no job config.json, result.json or job.log here, and "
                "no folder in it is a Harbor job or trial folder",
        TERMINAL_BENCH: f"{half_tb} here, and no folder in it is a run",
        LM_EVAL: "no results_<date>.json (with a 'results' object) here or in a model "
                 "folder in it",
        INSPECT: "not a log file, nor does it hold Inspect AI logs (.eval, or .json with "
                 "top-level 'eval' and 'version'/'status') here or in a folder in it",
        TRIAL_TABLE: f"a folder; a trial table is a file ({', '.join(_TABLE_SUFFIXES)})",
        REWARDS: "no reward .jsonl/.jsonl.gz file here or in a folder in it",
    })


def _examine(path: Path) -> _Fit | _Misfit:
    return _examine_folder(path) if path.is_dir() else _examine_file(path)


#: formats whose files a folder is read for (a table in a folder is read only by its name)
_FOLDER_FILES = (INSPECT, REWARDS, LM_EVAL)


def _looks_like_data(path: Path) -> bool:
    """A file with a data suffix, or a folder holding one or a folder."""
    if path.is_dir():
        return any(e.is_dir() or _suffix(e) in _DATA_SUFFIXES for e in _entries(path))
    return _suffix(path) in _DATA_SUFFIXES


_DEEPER = "what it holds is deeper than a folder is searched: pass it by its name"


def _reward_line(path: Path) -> bool:
    """The first line of a JSON-lines file is a reward line (null, or an object of numbers
    and booleans): a folder's ``.jsonl`` files are read as rewards only then (a case table
    beside them is not). A file given by name is read as rewards whatever it holds, so that
    :func:`metrickit.read_rewards` names the line and value it refuses."""
    try:
        obj = json.loads(_first_line(path))
    except ValueError:
        return False
    return obj is None or (isinstance(obj, dict) and all(
        isinstance(v, int | float) for v in obj.values()))


def _members(folder: Path, depth: int) -> tuple[list[_Fit], list[tuple[Path, str]]]:
    """The units among a folder's entries (and, at ``depth`` 0, among the entries of its
    child folders that are no unit themselves); the entries that look like data but fit no
    format, with why. ``depth`` 2 looks at the entries alone (for the message only)."""
    fits: list[_Fit] = []
    skipped: list[tuple[Path, str]] = []
    for entry in _entries(folder):
        found = _examine(entry)
        if isinstance(found, _Fit):
            if found.format == REWARDS and not _reward_line(entry):
                skipped.append((entry, "JSON lines whose first line is neither null nor an "
                                       "object of numbers: not rewards"))
            elif entry.is_dir() or found.format in _FOLDER_FILES:
                fits.append(found)
            else:
                skipped.append((entry, f"a {FORMATS[found.format].title} inside a folder: "
                                       "pass it by its name"))
            continue
        inner_skipped: list[tuple[Path, str]] = []
        if entry.is_dir() and depth == 0 and not found.final:
            inner, inner_skipped = _members(entry, 1)
            if inner:
                fits += inner
                skipped += inner_skipped
                continue
        if found.final:
            skipped.append((entry, "a Harbor trial folder outside its job"))
        elif entry.is_dir() and (
            any(why == _DEEPER for _, why in inner_skipped)
            or (depth == 1 and _members(entry, 2)[0])
        ):
            skipped.append((entry, _DEEPER))
        elif _looks_like_data(entry):
            skipped.append((entry, "fits no format" if entry.is_dir()
                            else found.reasons[TRIAL_TABLE]))
    return fits, skipped


def _refusal(path: Path, misfit: _Misfit, skipped: Sequence[tuple[Path, str]] = ()) -> str:
    lines = [f"{path}: not a source metrickit reads; it is not"]
    for name, fmt in FORMATS.items():
        lines.append(f"  - {fmt.title} ({fmt.reader}): {misfit.reasons[name]}")
    for entry, why in list(skipped)[:5]:
        lines.append(f"  (in it: {entry.name}: {why})")
    return "\n".join(lines)


def _plan(path: Path) -> tuple[list[_Fit], list[tuple[Path, str]]]:
    if not path.exists():
        raise TrialSourceError(f"{path}: no such file or folder")
    found = _examine(path)
    if isinstance(found, _Fit):
        return [found], []
    if found.final or not path.is_dir():
        raise TrialSourceError(_refusal(path, found))
    fits, skipped = _members(path, 0)
    if not fits:
        raise TrialSourceError(_refusal(path, found, skipped))
    return fits, skipped


def _relative(entry: Path, root: Path) -> str:
    try:
        return str(entry.relative_to(root))
    except ValueError:
        return str(entry)


def detect(path: str | os.PathLike[str]) -> str:
    """The format of a path, from its top-level layout alone.

    Parameters
    ----------
    path
        A file or folder.

    Returns
    -------
    str
        A name of :data:`FORMATS` (``"harbor"``, ``"terminal-bench"``, ``"lm-eval"``,
        ``"inspect"``, ``"trial-table"``, ``"rewards"``), or :data:`MIXED` for a folder
        whose children are of several formats.

    Raises
    ------
    TrialSourceError
        No such path, or it fits no format: the message lists every format and why the path
        is not it.

    Examples
    --------
    >>> import metrickit as mk
    >>> from metrickit.io.registry import detect
    >>> detect(mk.examples.path("harbor_jobs")), detect(mk.examples.path("lm_eval_output"))
    ('harbor', 'lm-eval')
    >>> detect(mk.examples.path("multi_dim"))
    'rewards'
    """
    fits, _ = _plan(Path(path))
    formats = list(dict.fromkeys(f.format for f in fits))
    return formats[0] if len(formats) == 1 else MIXED


def sources(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    stacklevel: int = 2,
) -> list[Source]:
    """Every piece of input the paths hold, each with its format, in the order given.

    A piece reached twice (given twice, or as itself and inside a folder given too) is
    refused: its trials would count twice. Entries of a folder that look like data but fit
    no format are named in a :class:`~metrickit.errors.MetrickitWarning`.

    ``stacklevel`` is the warning's, as :func:`warnings.warn` takes it (a caller that wraps
    this function adds one).

    Raises
    ------
    TrialSourceError
        No path, a path that fits no format (see :func:`detect`), a piece reached twice.
    """
    paths = ([Path(path_or_paths)] if isinstance(path_or_paths, str | os.PathLike)
             else [Path(p) for p in path_or_paths])
    if not paths:
        raise TrialSourceError("no path given; pass a file or folder (or a list of them)")
    out: list[Source] = []
    seen: dict[Path, Path] = {}
    for path in paths:
        fits, skipped = _plan(path)
        if skipped:
            warnings.warn(
                f"{path}: left out {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} "
                "that fit no format: "
                + "; ".join(f"{_relative(entry, path)} ({why})" for entry, why in skipped[:10])
                + ("; ..." if len(skipped) > 10 else ""),
                MetrickitWarning, stacklevel=stacklevel,
            )
        for fit in fits:
            for unit in fit.units:
                real = unit.resolve()
                if real in seen:
                    how = "" if seen[real] == unit else f" (as {seen[real]} and {unit})"
                    raise TrialSourceError(
                        f"{unit}: reached twice{how}, so each of its trials would be counted "
                        "twice: pass each once (a folder already includes everything in it)"
                    )
                seen[real] = unit
                out.append(Source(fit.format, unit))
    return out


# -- reading ---------------------------------------------------------------------------------


def _read_harbor(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.harbor import read_harbor_job

    return [read_harbor_job(units, backend=o.backend, progress=o.progress)]


def _read_terminal_bench(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.terminal_bench import read_terminal_bench

    return [read_terminal_bench(units, backend=o.backend)]


def _read_lm_eval(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.lm_eval_samples import read_lm_eval_samples

    return [read_lm_eval_samples(units, backend=o.backend)]


def _read_inspect(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.inspect_logs import read_inspect_log

    return [read_inspect_log(units, backend=o.backend)]


def _read_rewards(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.rewards import read_rewards

    source: Any = str(units[0]) if len(units) == 1 else [str(u) for u in units]
    return [read_rewards(source, backend=o.backend)]


def _read_tables(units: list[Path], o: _Options) -> list[Any]:
    from metrickit.io.trials import reading

    frames = []
    for unit in units:
        with reading(unit):
            frames.append(_read_table(unit, o))
    return frames


def _raw_table(path: Path, *, text: bool, keep_text: Sequence[str] = ()) -> Any:
    """A table file as pandas: every column as text (``text``) or as pandas infers it
    (``keep_text`` columns as text); only an empty CSV cell is missing, so a trial's
    ``_status`` ``"null"`` stays text."""
    import pandas as pd

    suffix = _suffix(path)
    try:
        if suffix in (".csv", ".csv.gz"):
            dtype: Any = str if text else dict.fromkeys(keep_text, str)
            return pd.read_csv(path, dtype=dtype, keep_default_na=False, na_values=[""])
        if suffix == ".parquet":
            return pd.read_parquet(path)
        lines = suffix in (".jsonl", ".jsonl.gz")
        return pd.read_json(path, lines=lines, dtype=False)
    except (ValueError, OSError) as exc:
        raise TrialSourceError(f"{path}: cannot be read as a table ({exc})") from None


#: trials_from_frame's arguments, and the trial-table column a tidy table names each by
_TIDY_COLUMNS = {
    "run": "run", "agent": "agent", "model": "model", "agent_version": "agent_version",
    "dataset": "dataset", "dataset_version": "dataset_version", "source": "source",
    "attempt": "attempt", "group": "task_group", "agent_kwargs": "agent_kwargs",
    "latency_ms": "total_ms", "cost_usd": "cost_usd", "input_tokens": "n_input_tokens",
    "output_tokens": "n_output_tokens", "error": "exception_message",
    "exception_type": "exception_type", "started_at": "started_at",
    "finished_at": "finished_at", "trial_dir": "trial_dir",
}


def _read_table(path: Path, o: _Options) -> Any:
    """A saved trial table restored, or a tidy table through ``trials_from_frame``."""
    found = _table_columns(path)
    columns = found[1] if isinstance(found, tuple) else []
    if _is_saved_trials(columns):
        return _restore(_raw_table(path, text=True), path, o.backend)
    from metrickit.io.tidy import trials_from_frame

    candidate = o.candidate if o.candidate in columns else None
    frame = _raw_table(path, text=False,
                       keep_text=[c for c in ("task_name", candidate) if c is not None])
    present = set(frame.columns)
    # a column named as the trial table names it fills that part (run, model, tokens, ...)
    mapped = {arg: column for arg, column in _TIDY_COLUMNS.items()
              if column in present and column != candidate}
    try:
        trials = trials_from_frame(
            frame, task="task_name", reward=o.value or "reward", candidate=candidate,
            backend=o.backend, **mapped,
        )
    except TrialSourceError as exc:
        hint = "" if o.value else " (name the value column: value= / --value)"
        raise TrialSourceError(f"{path}: {exc}{hint}") from None
    if candidate is not None and candidate not in trials.columns:
        # the candidates, under the name the table gives them (report --by)
        if o.backend == "polars":
            import polars as pl

            trials = trials.with_columns(pl.col("eval").alias(candidate))
        else:
            trials[candidate] = trials["eval"]
    return trials


def _bad(path: Path, column: str, series: Any, bad: Any, expected: str) -> TrialSourceError:
    import numpy as np

    at = int(np.flatnonzero(np.asarray(bad))[0])
    value = series.iloc[at]
    return TrialSourceError(
        f"{path}: column {column!r}, row {at}: {value!r} is not {expected}; this saved trial "
        "table was changed since metrickit wrote it, or is not one"
    )


def _as_dtype(series: Any, dtype: Any, path: Path, column: str) -> Any:
    """A column of a saved trial table (text from CSV, typed from parquet/JSON) as the
    trial table's dtype, refusing a value that dtype cannot hold."""
    import numpy as np
    import pandas as pd

    null = series.isna().to_numpy()
    if isinstance(dtype, pd.CategoricalDtype):
        text = series.astype(object)
        allowed = set(dtype.categories)
        bad = null | ~text.isin(allowed).to_numpy()
        if bad.any():
            raise _bad(path, column, series, bad, f"one of {sorted(allowed)}")
        return pd.Categorical(text, dtype=dtype)
    if dtype == np.dtype(bool):
        if series.dtype == bool:
            return series.to_numpy()
        words = {"true": True, "false": False, "1": True, "0": False}
        text = series.astype(object).map(lambda v: words.get(str(v).strip().lower()))
        bad = text.isna().to_numpy()
        if bad.any():
            raise _bad(path, column, series, bad, "True or False")
        return text.astype(bool).to_numpy()
    if isinstance(dtype, pd.DatetimeTZDtype):
        numeric = pd.api.types.is_numeric_dtype(series.dtype)
        stamps = (pd.to_datetime(series, unit="ms", utc=True, errors="coerce") if numeric
                  else pd.to_datetime(series, utc=True, format="ISO8601", errors="coerce"))
        bad = stamps.isna().to_numpy() & ~null
        if bad.any():
            raise _bad(path, column, series, bad, "a timestamp")
        return stamps.astype(dtype)
    if pd.api.types.is_numeric_dtype(dtype):
        numbers = pd.to_numeric(series, errors="coerce")
        bad = numbers.isna().to_numpy() & ~null
        integer = pd.api.types.is_integer_dtype(dtype)
        if integer:
            values = numbers.to_numpy(dtype=float, na_value=np.nan)
            bad |= ~np.isnan(values) & (values != np.round(values))
            if dtype == np.dtype(np.int64):
                bad |= null
        if bad.any():
            raise _bad(path, column, series, bad, "a whole number" if integer else "a number")
        if integer:
            return pd.array(numbers, dtype="Int64").astype(dtype)
        return numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.astype(object).where(~null, None).astype(dtype)


def _guess(series: Any) -> Any:
    """A column metrickit does not define, read as text: numbers when all are, else text."""
    import pandas as pd

    if not pd.api.types.is_string_dtype(series.dtype) and series.dtype != object:
        return series
    try:
        return pd.to_numeric(series)
    except (ValueError, TypeError):
        return series.astype("string")


def _restore(raw: Any, path: Path, backend: Backend) -> Any:
    """A trial table saved by metrickit (CSV, parquet, JSON) with the dtypes of the trial
    table again, and its candidates computed anew."""
    import pandas as pd

    from metrickit._core.identity import KWARG_PREFIX
    from metrickit.io.trials import build_trials

    template = build_trials([], [], "pandas")
    dtypes = dict(template.dtypes)
    kind_dtype = template[_KIND + "reward"].dtype
    keys = {c[len(_KIND):] for c in raw.columns if c.startswith(_KIND)}
    data: dict[str, Any] = {}
    for column in raw.columns:
        series = raw[column]
        if column in keys:
            target: Any = dtypes["reward"]
        elif column.startswith(_KIND):
            target = kind_dtype
        elif column in dtypes:
            target = dtypes[column]
        elif column.startswith(KWARG_PREFIX):
            target = dtypes["task_name"]  # text
        else:
            data[column] = _guess(series)
            continue
        data[column] = _as_dtype(series, target, path, column)
    frame = pd.DataFrame(data, index=pd.RangeIndex(len(raw)))
    if backend == "polars":
        frame = _to_polars(frame, keys)
    from metrickit._core.identity import with_candidates

    return with_candidates(frame)


def _to_polars(frame: Any, keys: set[str]) -> Any:
    import polars as pl

    from metrickit.io.trials import build_trials

    schema = build_trials([], [], "polars").schema
    out = pl.from_pandas(frame)
    casts = []
    for column in out.columns:
        target = (schema["reward"] if column in keys
                  else schema[_KIND + "reward"] if column.startswith(_KIND)
                  else schema.get(column))
        if target is not None and out.schema[column] != target:
            expr = pl.col(column)
            if isinstance(target, pl.Enum):
                expr = expr.cast(pl.String)
            casts.append(expr.cast(target))
    return out.with_columns(casts) if casts else out


def read_sources(
    found: Sequence[Source],
    *,
    backend: Backend = "pandas",
    value: str | Sequence[str] | None = None,
    candidate: str | None = None,
    progress: bool | None = None,
) -> Any:
    """Read the pieces :func:`sources` found: each format's pieces by its reader in one
    call, the tables stacked with :func:`metrickit.concat_trials` and their candidates
    computed across all of them (see :func:`load` for the arguments).

    Raises
    ------
    TrialSourceError
        Reward files mixed with trial sources, or what a reader raises.
    """
    check_backend(backend)
    found = list(found)
    if not found:
        raise TrialSourceError("nothing to read; pass a file or folder")
    rewards = [s for s in found if not FORMATS[s.format].trials]
    trials = [s for s in found if FORMATS[s.format].trials]
    if rewards and trials:
        raise TrialSourceError(
            f"{rewards[0].path} is reward JSONL (a reward frame: one row per line, no tasks or "
            f"candidates) and {trials[0].path} a {FORMATS[trials[0].format].title} (a trial "
            "table): load them separately (mk.load or mk.read_rewards for the reward files)"
        )
    options = _Options(backend, value, candidate, progress)
    by_format: dict[str, list[Path]] = {}
    for s in found:
        by_format.setdefault(s.format, []).append(s.path)
    frames: list[Any] = []
    from metrickit.io.trials import reading

    for name, units in by_format.items():
        # every reader guards itself; this names the format and the paths of anything that
        # still escapes one (a reward file, a reader added later)
        with reading(f"{FORMATS[name].reader}({_listing([str(u) for u in units], 3)})",
                     error=TrialSourceError):
            frames += FORMATS[name].read(units, options)
    if len(frames) == 1:
        return frames[0]
    from metrickit.io.tidy import concat_trials

    return concat_trials(frames)  # which computes the candidates across the tables


def load(
    path_or_paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    backend: Backend = "pandas",
    value: str | Sequence[str] | None = None,
    candidate: str | None = None,
    progress: bool | None = None,
) -> Any:
    """Read runs of any format metrickit knows into one trial table.

    Each path is told apart by its top-level layout (see :mod:`metrickit.io.registry`):
    Harbor job folders (or a folder of them), Terminal-Bench 1 runs, lm-evaluation-harness
    output, Inspect AI logs, trial tables saved as CSV/parquet/JSON (or tidy tables with
    ``task_name``), and Harbor reward JSONL. A folder of several formats is read child by
    child.

    Parameters
    ----------
    path_or_paths
        A file or folder, or a list of them.
    backend
        ``"pandas"`` (default) or ``"polars"``.
    value
        Tidy tables only: the reward column(s) (default ``reward``). The other formats read
        every reward column they have.
    candidate
        Tidy tables only: the column that names the candidates, when the table has it
        (it becomes ``eval``, and stays a column under its own name).
    progress
        Harbor jobs: show a progress bar (None: from 200 trials on).

    Returns
    -------
    DataFrame
        The trial table of every path, stacked with :func:`metrickit.concat_trials` (a
        reward key a source lacks is NA there, never 0) and with ``candidate`` computed
        across all of them. Reward JSONL gives a **reward frame** instead
        (:func:`metrickit.read_rewards`: one row per line, no tasks or candidates).

    Raises
    ------
    TrialSourceError
        A path that fits no format (the message lists every format and why it is not it),
        a piece reached twice (a job folder given twice, or as itself and inside its
        parent), reward files mixed with trial sources.
    MetrickitError
        What the reader of a format raises on bad input (a corrupt trial ``result.json``
        is a :class:`~metrickit.errors.HarborJobError`, ...).

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.load(mk.examples.path("harbor_jobs"), progress=False)
    >>> len(trials), trials["job"].nunique()
    (1004, 3)
    >>> both = mk.load([mk.examples.path("harbor_jobs") / "2025-06-02__10-00-00",
    ...                 mk.examples.path("terminal_bench_run")])
    >>> len(both), sorted(both["candidate"].unique())
    (30, ['terminus · claude-sonnet-4-20250514', 'terminus-2 · claude-sonnet-4-5'])
    """
    return read_sources(sources(path_or_paths, stacklevel=3), backend=backend, value=value,
                        candidate=candidate, progress=progress)


#: The formats metrickit reads, by name: what each looks like and the reader that reads it.
FORMATS: dict[str, Format] = {
    HARBOR: Format(
        HARBOR, "Harbor job", "a job folder (config.json/result.json/job.log, one folder per "
        "trial) or a folder of job folders", "read_harbor_job", read=_read_harbor),
    TERMINAL_BENCH: Format(
        TERMINAL_BENCH, "Terminal-Bench run", "a run folder with results.json and "
        "run_metadata.json, or a folder of runs", "read_terminal_bench",
        read=_read_terminal_bench),
    LM_EVAL: Format(
        LM_EVAL, "lm-evaluation-harness output", "a folder with results_<date>.json and "
        "samples_<task>_<date>.jsonl, directly or in model folders; or a results file",
        "read_lm_eval_samples", read=_read_lm_eval),
    INSPECT: Format(
        INSPECT, "Inspect AI log", "a .eval log, a .json log (top-level eval and "
        "version/status), or a folder of logs", "read_inspect_log", read=_read_inspect),
    TRIAL_TABLE: Format(
        TRIAL_TABLE, "trial table", "a .csv/.csv.gz/.parquet/.json/.jsonl table: saved from "
        "a trial table (_status, _kind_<key>), or tidy with task_name and the value column",
        "trials_from_frame", read=_read_tables),
    REWARDS: Format(
        REWARDS, "reward JSONL", "a .jsonl/.jsonl.gz file of reward objects or nulls, one a "
        "line, or a folder of them (a reward frame, not a trial table)", "read_rewards",
        trials=False, read=_read_rewards),
}
