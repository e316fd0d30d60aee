"""The frame schema, declared once: how parsed reward columns and trial records become a
pandas or polars DataFrame. Every reader (files, scans, Dask partitions, Harbor job folders,
other evaluation formats) builds its frames here, so the backends cannot drift."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit._core.values import KIND_PREFIX, KINDS, META_COLUMNS, STATUSES, is_utf8
from metrickit.errors import HarborJobError, RewardFileError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

Backend = Literal["pandas", "polars"]

#: How to get polars, an optional extra: the fast JSONL read and ``backend="polars"``.
POLARS_INSTALL = "pip install 'metrickit[polars]'"


def polars_installed() -> bool:
    """Whether polars is installed (the optional extra ``metrickit[polars]``), without
    importing it: a reader asks before its first block, and a file polars would not read
    (blank lines, say) costs no import."""
    if sys.modules.get("polars") is not None:
        return True
    try:
        return importlib.util.find_spec("polars") is not None
    except (ImportError, ValueError):  # an import hook that refuses it, a broken entry
        return False


_WITHOUT_POLARS = "use backend='pandas', the default, which gives the same content"


def import_polars(what: str = "backend='polars'", instead: str = _WITHOUT_POLARS) -> ModuleType:
    """The polars module, or an :class:`ImportError` saying that ``what`` needs it, naming
    the install command and what to do ``instead`` without polars."""
    try:
        import polars
    except ImportError as exc:
        missing = isinstance(exc, ModuleNotFoundError) and exc.name == "polars"
        why = "is not installed" if missing else f"cannot be imported ({exc})"
        raise ModuleNotFoundError(
            f"{what} needs polars, which {why}; install it with {POLARS_INSTALL} (or "
            f"`conda install polars`), or {instead}",
            name="polars",
        ) from None
    return polars


def check_backend(backend: object, *, more: Sequence[str] = ()) -> None:
    """Refuse a ``backend=`` that is not ``"pandas"``, ``"polars"`` (or one of ``more``),
    and ``"polars"`` when polars is not installed, before any work is done."""
    accepted = ("pandas", "polars", *more)
    if backend not in accepted:
        listed = ", ".join(repr(a) for a in accepted[:-1])
        raise ValueError(f"backend={backend!r}; expected {listed} or {accepted[-1]!r}")
    if backend == "polars":
        import_polars()


#: The frame readers refuse input whose frame would hold more zero-filled cells (rows x
#: keys minus the cells in the data) than this, when they also outnumber the cells in the
#: data :data:`MAX_FILL_RATIO` to one: many distinct keys on few rows, a frame far larger
#: than its file. A long file with a rare key (48 million rows, one key on the last rows
#: only) is not refused: its frame grows with the file. ``metrickit.aggregate(path)`` and
#: ``metrickit aggregate`` answer either way, in memory that grows with the data.
MAX_FILLED_CELLS = 20_000_000
MAX_FILL_RATIO = 16



@dataclass
class Parsed:
    """Column arrays of one source, before they become a DataFrame."""

    source: str
    lines: npt.NDArray[np.int64]
    status: npt.NDArray[np.uint8]
    values: dict[str, npt.NDArray[np.float64]] = field(default_factory=dict)
    kinds: dict[str, npt.NDArray[np.uint8]] = field(default_factory=dict)
    #: how many ``\n`` the parsed bytes held: the line offset of the block after it
    newlines: int = 0

    @property
    def n(self) -> int:
        return len(self.lines)



def merge_parts(parts: list[Parsed]) -> tuple[list[str], dict[str, Any]]:
    """One array per column from the parsed parts, *consuming* them.

    The output columns are allocated once (``np.zeros``: a key a part lacks is already its
    filled 0) and each part is copied into its rows, then dropped: so the data is copied
    once, and the merge needs at most one part's worth of memory on top of the parts (a
    part's columns may be views of one block-wide matrix, freed together).
    """
    keys = sorted({k for p in parts for k in p.values})
    sizes = [p.n for p in parts]
    n = sum(sizes)
    unique_sources = list(dict.fromkeys(p.source for p in parts))
    source_codes = np.empty(n, dtype=np.int8 if len(unique_sources) < 128 else np.int32)
    at = 0
    for p, size in zip(parts, sizes, strict=True):
        source_codes[at : at + size] = unique_sources.index(p.source)
        at += size
    if len(parts) == 1:  # nothing to copy
        (p,) = parts
        lines, status = p.lines, p.status
        values = {key: p.values[key] for key in keys}
        kinds = {key: p.kinds[key] for key in keys}
        _drop(p)
    else:
        lines = np.empty(n, dtype=np.int64)
        status = np.empty(n, dtype=np.uint8)
        # One matrix per dtype, a column a view: one large allocation is backed by huge
        # pages, many column-sized ones fault their memory in page by page (~5x slower).
        value_matrix = np.zeros((n, len(keys)), dtype=np.float64, order="F")
        kind_matrix = np.zeros((n, len(keys)), dtype=np.uint8, order="F")
        values = {key: value_matrix[:, j] for j, key in enumerate(keys)}
        kinds = {key: kind_matrix[:, j] for j, key in enumerate(keys)}
        at = 0
        for p, size in zip(parts, sizes, strict=True):
            rows = slice(at, at + size)
            lines[rows] = p.lines
            status[rows] = p.status
            for key, column in p.values.items():
                values[key][rows] = column
            for key, codes in p.kinds.items():
                kinds[key][rows] = codes
            _drop(p)
            at += size
    return keys, {
        "sources": unique_sources,
        "source_codes": source_codes,
        "lines": lines,
        "status": status,
        "values": values,
        "kinds": kinds,
    }



def _drop(part: Parsed) -> None:
    """Free a part's arrays (merged into the output)."""
    part.lines, part.status = np.zeros(0, np.int64), np.zeros(0, np.uint8)
    part.values, part.kinds = {}, {}



def check_filled(source: str, rows: int, keys: int, cells: int, where: str = "") -> None:
    """Refuse a frame of more than :data:`MAX_FILLED_CELLS` zero-filled cells that also
    outnumber its ``cells`` from the data :data:`MAX_FILL_RATIO` to one (``where``: the
    part of ``source`` they come from, when not all of it)."""
    filled = rows * keys - cells
    if filled > MAX_FILLED_CELLS and filled > MAX_FILL_RATIO * cells:
        raise RewardFileError(
            f"{source}: {where}{rows:,} rows x {keys:,} reward keys would make a frame of "
            f"{rows * keys:,} cells, {filled:,} of them zero-filled for {cells:,} cells in the "
            f"data (the frame readers stop at {MAX_FILLED_CELLS:,} zero-filled cells that "
            f"outnumber the data's {MAX_FILL_RATIO} to one: "
            "metrickit._core.schema.MAX_FILLED_CELLS and MAX_FILL_RATIO); use "
            "metrickit.aggregate(path) or `metrickit aggregate`, which aggregate key by key "
            "in memory that grows with the data"
        )



def check_names(keys: list[str], parts: Sequence[Parsed] = ()) -> None:
    reserved = set(META_COLUMNS) | {KIND_PREFIX + k for k in keys}
    clash = [k for k in keys if k in reserved]
    if clash:
        where = ""  # the first line with the key, when the parts are at hand
        for part in parts:
            kinds = part.kinds.get(clash[0])
            if kinds is not None and kinds.any():
                where = f"{part.source}:{int(part.lines[np.flatnonzero(kinds)[0]])}: "
                break
        raise RewardFileError(
            f"{where}reward key {clash[0]!r} clashes with a metadata column metrickit adds "
            f"({', '.join(META_COLUMNS)}, {KIND_PREFIX}<key>), so no frame can hold it; "
            "metrickit.aggregate(path) and `metrickit aggregate` build no metadata columns "
            "and give Harbor's answer, or rename the key"
        )



def to_frame(parts: list[Parsed], *, backend: Backend = "pandas") -> Any:
    """Turn parsed sources into one DataFrame of the chosen backend."""
    names = sorted({k for p in parts for k in p.values})
    check_names(names, parts)
    if len(parts) > 1:
        cells = sum(int(np.count_nonzero(kinds)) for p in parts for kinds in p.kinds.values())
        source = parts[0].source if len({p.source for p in parts}) == 1 else "the input"
        check_filled(source, sum(p.n for p in parts), len(names), cells)
    keys, cols = merge_parts(parts)
    return reward_frame(keys, cols, backend)


def reward_frame(keys: list[str], cols: dict[str, Any], backend: Backend = "pandas") -> Any:
    """The reward frame of column arrays: ``sources`` (names) and ``source_codes``,
    ``lines``, ``status`` codes, and per key ``values`` and ``kinds`` codes."""
    if backend == "polars":
        return _to_polars(keys, cols)
    return _to_pandas(keys, cols)


def piece_columns(parsed: Parsed, keys: list[str], sources: list[str]) -> dict[str, Any]:
    """The column arrays of one parsed piece of a file that is read piece by piece (a scan,
    a Dask partition): its own keys widened to the file's ``keys`` (a key absent from the
    piece is a filled 0, ``missing``), its source coded among all ``sources``."""
    n = parsed.n
    zeros = np.zeros(n, dtype=np.float64)
    missing = np.zeros(n, dtype=np.uint8)
    code = sources.index(parsed.source) if parsed.source in sources else 0
    return {
        "sources": sources,
        "source_codes": np.full(n, code, dtype=np.int32),
        "lines": parsed.lines.astype(np.int64, copy=False),
        "status": parsed.status,
        "values": {key: parsed.values.get(key, zeros) for key in keys},
        "kinds": {key: parsed.kinds.get(key, missing) for key in keys},
    }


def polars_reward_schema(keys: list[str], sources: Sequence[str]) -> dict[str, Any]:
    """The polars schema of a reward frame with these keys and source names."""
    import polars as pl

    schema: dict[str, Any] = {
        "_source": pl.Enum(list(sources)),
        "_line": pl.Int64,
        "_status": pl.Enum(list(STATUSES)),
    }
    schema.update({key: pl.Float64 for key in keys})
    schema.update({KIND_PREFIX + key: pl.Enum(list(KINDS)) for key in keys})
    return schema



def string_dtype(values: Iterable[Any], default: Any = None) -> Any:
    """``default`` (a pandas dtype), or the Python-backed string dtype when a value is not
    UTF-8 text.

    A path that is not UTF-8 (legal on Linux: ``os.fsdecode`` keeps its bytes as lone
    surrogates) cannot be stored in Arrow, which holds pandas' default strings; the
    Python-backed string dtype keeps it exactly as ``os.fsdecode`` gives it.
    """
    import pandas as pd

    # One check of all the distinct text at once: a lone surrogate stays one when joined.
    try:
        distinct: Iterable[Any] = set(values)
    except TypeError:  # a value that cannot be hashed
        distinct = values
    joined = "".join([value for value in distinct if isinstance(value, str)])
    if joined.isascii() or is_utf8(joined):
        return default
    return pd.StringDtype("python")


def pandas_strings(values: list[Any]) -> Any:
    """A pandas string array of text and None (see :func:`string_dtype`)."""
    import pandas as pd

    if values.count(None) == len(values):  # a column the source does not have
        return pd.Series(None, index=range(len(values)), dtype="string").array
    return pd.array(values, dtype=string_dtype(values, "string"))



def printable(name: str) -> str:
    """``name`` with the bytes of a non-UTF-8 path shown as ``\\xe9`` escapes (printable)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace") if not is_utf8(name) else name



def not_utf8_label(names: Iterable[str], backend: str = "polars") -> str | None:
    """The message refusing a source label (path) that is not UTF-8, or None if all are."""
    for name in names:
        if not name.isascii() and not is_utf8(name):
            return (
                f"{printable(name)}: the path is not UTF-8 (bytes {os.fsencode(name)!r}); "
                f"{backend} holds UTF-8 text only, so it cannot label rows with this path. Use "
                "backend='pandas' (which keeps the path as os.fsdecode gives it), aggregate "
                "it with metrickit.aggregate (no label needed), or rename the file"
            )
    return None



def _to_pandas(keys: list[str], cols: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    data: dict[str, Any] = {
        "_source": pd.Categorical.from_codes(
            cols["source_codes"],
            categories=pd.Index(cols["sources"], dtype=string_dtype(cols["sources"])),
        )
        if cols["sources"]
        else pd.Categorical([], categories=[]),
        "_line": cols["lines"],
        "_status": pd.Categorical.from_codes(cols["status"], categories=pd.Index(list(STATUSES))),
    }
    for key in keys:
        data[key] = cols["values"][key]
    # one dtype for every kind column: building the categories anew per column costs
    # ~0.3 ms each, which a file of 200 keys would pay 200 times
    kind_dtype = pd.CategoricalDtype(pd.Index(list(KINDS)))
    for key in keys:
        data[KIND_PREFIX + key] = pd.Categorical.from_codes(cols["kinds"][key], dtype=kind_dtype)
    return pd.DataFrame(data, copy=False)



def polars_enum(codes: npt.NDArray[Any], categories: Sequence[str]) -> pl.Series:
    import polars as pl

    # gather on the categories themselves: the codes become the Enum's physical values
    return pl.Series(list(categories), dtype=pl.Enum(categories)).gather(
        codes.astype(np.uint32, copy=False)
    )



def _to_polars(keys: list[str], cols: dict[str, Any]) -> pl.DataFrame:
    import polars as pl

    refused = not_utf8_label(cols["sources"])
    if refused:
        raise RewardFileError(refused)
    if not cols["sources"]:  # no input at all (so no keys either): nothing to gather
        return pl.DataFrame(schema=polars_reward_schema([], []))
    # The numpy columns as they are (codes included), then one select that turns every
    # code column into its Enum by a gather on the categories: polars runs them in
    # parallel, ~4x faster than one Series at a time.
    raw: dict[str, Any] = {
        "_source": cols["source_codes"],
        "_line": cols["lines"],
        "_status": cols["status"],
    }
    enums: dict[str, Sequence[str]] = {"_source": cols["sources"], "_status": STATUSES}
    for key in keys:
        raw[key] = cols["values"][key]
    for key in keys:
        raw[KIND_PREFIX + key] = cols["kinds"][key]
        enums[KIND_PREFIX + key] = KINDS

    # one Series of categories per Enum, not one per column (~50 us each, 200 keys: 10 ms)
    categories = {
        tuple(names): pl.lit(pl.Series(list(names), dtype=pl.Enum(names)))
        for names in {tuple(names) for names in enums.values()}
    }

    def column(index: int, name: str) -> pl.Expr:
        # by position: pl.col("^a$") would be a regex, and a reward key may look like one
        if name not in enums:
            return pl.nth(index)
        return categories[tuple(enums[name])].gather(pl.nth(index)).alias(name)

    # a dict keeps an empty-string key as a column name (a list of Series renames it)
    return pl.DataFrame(raw).select([column(i, name) for i, name in enumerate(raw)])


#: the reward statuses plus ``running`` (a trial without a result yet)
TRIAL_STATUSES = (*STATUSES, "running")



def trials_pandas(
    columns: dict[str, list[Any]],
    status: np.ndarray,
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
) -> Any:
    import pandas as pd

    data: dict[str, Any] = {}
    for name in LEADING_COLUMNS:
        if name == "_status":
            data[name] = pd.Categorical.from_codes(
                status.astype(np.int8), categories=pd.Index(list(TRIAL_STATUSES))
            )
        elif name in ("has_reward", "reward_valid"):
            data[name] = np.asarray(columns[name], dtype=bool)
        elif name == "attempt":
            data[name] = np.asarray(columns[name], dtype=np.int64)
        else:
            data[name] = pandas_strings(columns[name])
    for key in keys:
        data[key] = values[key]
    for key in keys:
        data[KIND_PREFIX + key] = pd.Categorical.from_codes(
            kinds[key], categories=pd.Index(list(KINDS))
        )
    for name in TRAILING_COLUMNS:
        col = columns[name]
        if name in _INT_COLUMNS:
            data[name] = pd.array(col, dtype="Int64")
        elif name in _FLOAT_COLUMNS:
            data[name] = np.array(col, dtype=np.float64)  # None becomes NaN
        elif name in _TIME_COLUMNS:
            data[name] = pd.to_datetime(pd.Series(col, dtype=object), utc=True).astype(
                "datetime64[us, UTC]"
            )
        elif name == "n_steps":
            data[name] = np.asarray(col, dtype=np.int64)
        else:
            data[name] = pandas_strings(col)
    for name in extra_columns(columns):
        data[name] = pandas_strings(list(columns[name]))
    return pd.DataFrame(data)



def trials_polars(
    columns: dict[str, list[Any]],
    status: np.ndarray,
    keys: list[str],
    values: dict[str, np.ndarray],
    kinds: dict[str, np.ndarray],
) -> Any:
    import polars as pl

    series: dict[str, pl.Series] = {}
    for name in LEADING_COLUMNS:
        if name == "_status":
            series[name] = pl.Series(
                name, [TRIAL_STATUSES[s] for s in status], dtype=pl.Enum(TRIAL_STATUSES)
            )
        elif name in ("has_reward", "reward_valid"):
            series[name] = pl.Series(name, columns[name], dtype=pl.Boolean)
        elif name == "attempt":
            series[name] = pl.Series(name, columns[name], dtype=pl.Int64)
        else:
            series[name] = _polars_strings(name, columns[name], columns["trial_dir"])
    for key in keys:  # NaN (a key absent from a whole evaluation) is null in polars
        series[key] = pl.Series(key, values[key], dtype=pl.Float64, nan_to_null=True)
    for key in keys:
        series[KIND_PREFIX + key] = pl.Series(
            KIND_PREFIX + key, [KINDS[k] for k in kinds[key]], dtype=pl.Enum(KINDS)
        )
    for name in TRAILING_COLUMNS:
        col = columns[name]
        if name in _INT_COLUMNS or name == "n_steps":
            series[name] = pl.Series(name, col, dtype=pl.Int64)
        elif name in _FLOAT_COLUMNS:
            series[name] = pl.Series(name, col, dtype=pl.Float64)
        elif name in _TIME_COLUMNS:
            series[name] = pl.Series(name, col, dtype=pl.Datetime("us", "UTC"))
        else:
            series[name] = _polars_strings(name, col, columns["trial_dir"])
    for name in extra_columns(columns):
        series[name] = pl.Series(name, list(columns[name]), dtype=pl.String)
    return pl.DataFrame(series)


def extra_columns(columns: dict[str, Any]) -> list[str]:
    """The ``kwarg_<name>`` text columns of a trial table (one per agent kwarg), sorted."""
    return sorted(c for c in columns if c.startswith("kwarg_"))



def _polars_strings(name: str, col: list[Any], folders: list[Any]) -> Any:
    """A polars String column; a folder name that is not UTF-8 is refused, naming the trial."""
    import polars as pl

    from metrickit._core.schema import not_utf8_label, printable

    for value, folder in zip(col, folders, strict=True):
        if isinstance(value, str) and not_utf8_label([value]):
            raise HarborJobError(
                f"{printable(str(folder))}: the trial folder's path is not UTF-8 (bytes "
                f"{os.fsencode(str(folder))!r}); polars holds UTF-8 text only, so the "
                f"{name!r} column cannot hold it. Use backend='pandas' (which keeps the path "
                "as os.fsdecode gives it) or rename the folder"
            )
    return pl.Series(name, col, dtype=pl.String)


#: Who ran what. ``run``: the run a trial came from; ``candidate``: the label of its
#: recorded configuration (``metrickit._core.identity``); ``job``: Harbor's job name (the
#: run's own name elsewhere); ``eval``: Harbor's ``agent__model__dataset`` key; ``agent``
#: to ``dataset_version``: the configuration (``dataset``: what it was evaluated on);
#: ``harness_version``: the evaluation tool's version; ``source``: where the task ids come
#: from (a task is ``(source, task_name)``; usually the dataset, an lm-eval subtask);
#: ``task_group``: a category of tasks where the source records one.
LEADING_COLUMNS = (
    "run", "candidate", "job", "eval", "agent", "agent_version", "model", "model_provider",
    "variant", "agent_kwargs", "dataset", "dataset_version", "harness_version", "source",
    "task_group",
    "task_name", "trial_name", "attempt", "_status", "has_reward", "reward_valid",
)



TRAILING_COLUMNS = (
    "exception_type", "exception_message", "step_exception_type",
    "n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd", "n_steps",
    "started_at", "finished_at", "environment_setup_ms", "agent_setup_ms",
    "agent_execution_ms", "verifier_ms", "total_ms", "trial_dir", "format",
)



_INT_COLUMNS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens")



_FLOAT_COLUMNS = (
    "cost_usd", "environment_setup_ms", "agent_setup_ms", "agent_execution_ms",
    "verifier_ms", "total_ms",
)



_TIME_COLUMNS = ("started_at", "finished_at")


def eval_key(agent: str, model: str | None, source: str | None) -> str:
    """Harbor's evaluation key (``JobStats.format_agent_evals_key``).

    Examples
    --------
    >>> eval_key("claude-code", "claude-sonnet-4-5", "terminal-bench")
    'claude-code__claude-sonnet-4-5__terminal-bench'
    >>> eval_key("oracle", None, None)
    'oracle__adhoc'
    """
    dataset = source or "adhoc"
    return f"{agent}__{model}__{dataset}" if model else f"{agent}__{dataset}"


def trial_dtypes(frame: Any) -> Any:
    """A trial table whose columns hold plain values (text, numbers, bools, timestamps: a
    table saved to CSV or a database and read back) with the trial-table dtypes restored:
    ``_status`` and ``_kind_<key>`` categories (pandas) or Enums (polars), nullable integer
    token counts, UTC timestamps, text columns as strings. Columns the schema does not
    know are left as they are; the column order is kept."""
    module = type(frame).__module__
    if module.startswith("polars"):
        return _polars_dtypes(frame)
    return _pandas_dtypes(frame)


def _role(name: str, columns: Sequence[str]) -> str:
    if name == "_status":
        return "status"
    if name.startswith(KIND_PREFIX):
        return "kind"
    if KIND_PREFIX + name in columns:
        return "reward"
    if name in ("has_reward", "reward_valid"):
        return "bool"
    if name in ("attempt", "n_steps"):
        return "int"
    if name in _INT_COLUMNS:
        return "nullable-int"
    if name in _FLOAT_COLUMNS:
        return "float"
    if name in _TIME_COLUMNS:
        return "time"
    if name in LEADING_COLUMNS or name in TRAILING_COLUMNS or name.startswith("kwarg_"):
        return "text"
    return "other"


def _pandas_dtypes(frame: Any) -> Any:
    import pandas as pd

    columns = list(frame.columns)
    out: dict[str, Any] = {}
    status_dtype = pd.CategoricalDtype(list(TRIAL_STATUSES))
    kind_dtype = pd.CategoricalDtype(list(KINDS))
    for name in columns:
        col = frame[name]
        role = _role(name, columns)
        dtype = col.dtype
        if role in ("status", "kind"):
            target = status_dtype if role == "status" else kind_dtype
            out[name] = col if dtype == target else pd.Categorical(
                col.astype(object), dtype=target)
        elif role in ("reward", "float"):
            out[name] = col if dtype == np.float64 else pd.to_numeric(col).astype("float64")
        elif role == "bool":
            out[name] = col if dtype == np.dtype(bool) else col.astype(bool)
        elif role == "int":
            out[name] = col if dtype == np.int64 else col.astype("int64")
        elif role == "nullable-int":
            out[name] = col if str(dtype) == "Int64" else col.astype("Int64")
        elif role == "time":
            out[name] = col if str(dtype) == "datetime64[us, UTC]" else pd.to_datetime(
                col, utc=True).astype("datetime64[us, UTC]")
        elif role == "text":
            if isinstance(dtype, pd.StringDtype) and dtype.na_value is pd.NA:
                out[name] = col
            else:
                values = [None if v is None or v is pd.NA or (isinstance(v, float) and v != v)
                          else str(v) for v in col.tolist()]
                out[name] = pandas_strings(values)
        else:
            out[name] = col
    return pd.DataFrame(out, index=range(len(frame)))


def _polars_dtypes(frame: Any) -> Any:
    import polars as pl

    columns = list(frame.columns)
    casts = []
    for name in columns:
        role = _role(name, columns)
        col = pl.col(name)
        if role == "status":
            casts.append(col.cast(pl.String).cast(pl.Enum(list(TRIAL_STATUSES))))
        elif role == "kind":
            casts.append(col.cast(pl.String).cast(pl.Enum(list(KINDS))))
        elif role in ("reward", "float"):
            casts.append(col.cast(pl.Float64).fill_nan(None))
        elif role == "bool":
            casts.append(col.cast(pl.Boolean))
        elif role in ("int", "nullable-int"):
            casts.append(col.cast(pl.Int64))
        elif role == "time":
            casts.append(col.cast(pl.Datetime("us", "UTC")))
        elif role == "text":
            casts.append(col.cast(pl.String))
        else:
            casts.append(col)
    return frame.select(casts)


def canonical_order(columns: Sequence[str]) -> list[str]:
    """Trial-table columns in the schema's order: :data:`LEADING_COLUMNS`, the reward keys
    (sorted), their ``_kind_`` companions, :data:`TRAILING_COLUMNS`, the ``kwarg_<name>``
    columns (sorted), then any other column in the order given."""
    have = set(columns)
    keys = sorted(c for c in columns if KIND_PREFIX + c in have)
    known = [*LEADING_COLUMNS, *keys, *(KIND_PREFIX + k for k in keys), *TRAILING_COLUMNS,
             *sorted(c for c in columns if c.startswith("kwarg_"))]
    ordered = [c for c in known if c in have]
    return ordered + [c for c in columns if c not in set(ordered)]
