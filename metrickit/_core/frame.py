"""Operations on reward frames and trial tables that every computation shares: the reward
columns as arrays, groups of rows, the trials that count, lazy-frame tests."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from metrickit._core.values import INT, INVALID, KIND_PREFIX, MISSING, STATUSES
from metrickit.errors import AggregationError, HarborJobError


def reward_keys(frame: Any) -> list[str]:
    """The reward key columns of a frame, in column order.

    For a frame from :func:`read_rewards` these are the columns that have a
    ``_kind_<key>`` companion. For any other frame, every numeric column whose name does
    not start with ``_``.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=False)
    names = list(nf.columns)
    marked = [c for c in names if KIND_PREFIX + c in names]
    if marked:
        return marked
    schema = nf.collect_schema() if hasattr(nf, "collect_schema") else nf.schema
    return [c for c, dt in schema.items() if not c.startswith("_") and dt.is_numeric()]



def kind_column(key: str) -> str:
    """Name of the column that records how ``key`` was filled: ``_kind_<key>``."""
    return KIND_PREFIX + key



def filled_mask(frame: Any) -> Any:
    """A frame of booleans, one column per reward key: True where the 0 was filled in.

    Same backend as ``frame``.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    keys = reward_keys(frame)
    return nf.select(
        [(nw.col(kind_column(k)).cast(nw.String) == "missing").alias(k) for k in keys]
    ).to_native()



def is_frame(obj: Any) -> bool:
    """A DataFrame or LazyFrame of any library narwhals knows (iterating one gives its
    column names, which would be read as paths)."""
    import narwhals as nw

    try:
        nw.from_native(obj)
    except TypeError:
        return False
    return True


def reward_arrays(
    frame: Any,
) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Keys that occur, and per key: values, is-int mask, present mask (numpy arrays).

    Works for frames from :func:`read_rewards` (either backend) and for plain frames of
    numeric reward columns (integer dtype = ints, float = floats, null = missing).
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    columns = list(nf.columns)
    if "_status" in columns:
        invalid = category_codes(nf.get_column("_status"), STATUSES) == INVALID
        if invalid.any():
            lines = (
                nf.get_column("_line").to_numpy()[invalid][:5].tolist()
                if "_line" in columns
                else []
            )
            raise AggregationError(
                f"the frame has {int(invalid.sum())} invalid row(s) (lines {lines}...) from "
                "read_rewards(..., errors='report'); fix the input or filter them out "
                "explicitly (frame[frame['_status'] != 'invalid']) before aggregating"
            )
    keys = reward_keys(frame)
    values: dict[str, np.ndarray] = {}
    is_int: dict[str, np.ndarray] = {}
    present: dict[str, np.ndarray] = {}
    schema = nf.schema
    for key in keys:
        column = nf.get_column(key)
        kind_name = KIND_PREFIX + key
        if kind_name in columns:
            codes = _kind_codes(nf.get_column(kind_name))
            present[key] = codes != MISSING
            is_int[key] = codes <= INT  # MISSING (0) and INT (1): Harbor holds an int
            values[key] = column.to_numpy().astype(np.float64, copy=False)
            if not present[key].all() and np.isnan(values[key]).any():
                # NA: the key is absent from a whole evaluation of a trial table. Harbor's
                # arithmetic over rows that mix evaluations fills it with an int 0.
                values[key] = np.where(present[key], values[key], 0.0)
        else:
            nulls = column.is_null().to_numpy()
            present[key] = ~nulls
            if schema[key].is_integer():
                is_int[key] = np.ones(len(column), dtype=np.bool_)
            else:
                is_int[key] = nulls.copy()
            values[key] = column.fill_null(0).to_numpy().astype(np.float64, copy=False)
            if not np.all(np.isfinite(values[key])):
                bad = int(np.argmin(np.isfinite(values[key])))
                raise AggregationError(
                    f"column {key!r} has a non-finite value {values[key][bad]!r} at row {bad}; "
                    "expected finite numbers (Harbor rejects NaN and infinity)"
                )
    keys = [k for k in keys if present[k].any()]
    return keys, values, is_int, present



def category_codes(series: Any, categories: Sequence[str]) -> npt.NDArray[np.uint8]:
    """Codes of a categorical column against ``categories`` (their positions), fast.

    Handles pandas Categorical and polars Enum/Categorical without turning each cell into
    a string; falls back to strings for any other column type.
    """
    native = series.to_native() if hasattr(series, "to_native") else series
    wanted = {c: i for i, c in enumerate(categories)}
    if hasattr(native, "cat") and hasattr(native.cat, "codes"):  # pandas categorical
        present = [str(c) for c in native.cat.categories]
        codes = native.cat.codes.to_numpy()
        if present == list(categories)[: len(present)] and codes.dtype == np.int8:
            return codes.view(np.uint8)  # already our codes; NaN's -1 reads as 255
        lookup = np.array([wanted.get(c, 255) for c in present] + [255])
        return lookup[codes].astype(np.uint8)  # code -1 (NaN) indexes the trailing 255
    pl = sys.modules.get("polars")  # a polars Series exists only once polars is imported
    if pl is not None and isinstance(native, pl.Series) and isinstance(native.dtype, pl.Enum):
        cats = list(native.dtype.categories)
        if cats == list(categories)[: len(cats)] and len(cats) < 255 and not native.has_nulls():
            return native.to_physical().to_numpy().astype(np.uint8)  # already our codes
        lookup = np.array([wanted.get(c, 255) for c in cats] + [255])
        physical = native.to_physical().fill_null(len(cats)).to_numpy()
        return lookup[physical].astype(np.uint8)
    values = [str(v) for v in (native.to_list() if hasattr(native, "to_list") else native)]
    return np.array([wanted.get(v, 255) for v in values], dtype=np.uint8)



def _categories(series: Any) -> list[str]:
    """The categories a categorical column can hold, else its distinct values."""
    native = series.to_native() if hasattr(series, "to_native") else series
    if hasattr(native, "cat") and hasattr(native.cat, "categories"):  # pandas
        return [str(c) for c in native.cat.categories]
    pl = sys.modules.get("polars")
    if pl is not None and isinstance(native, pl.Series) and isinstance(native.dtype, pl.Enum):
        return list(native.dtype.categories)
    values = native.unique() if hasattr(native, "unique") else native
    return [str(v) for v in (values.to_list() if hasattr(values, "to_list") else values)]



def _kind_codes(series: Any) -> npt.NDArray[np.uint8]:
    return category_codes(series, ("missing", "int", "float", "bool"))



def finished_trials(frame: Any) -> Any:
    """``frame`` without the rows of trials that are still running: the rows
    :func:`counted_trials` counts under Harbor 0.25's policy (a thin alias of it)."""
    return counted_trials(frame).frame



def group_indices(frame: Any, by: str | Sequence[str]) -> dict[Any, np.ndarray]:
    """Row indices of each group, groups in order of first appearance.

    A single column gives scalar labels, several give tuples. Nulls form their own group.
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    by_cols = [by] if isinstance(by, str) else list(by)
    missing = [c for c in by_cols if c not in nf.columns]
    if missing:
        raise AggregationError(f"by={missing[0]!r} is not a column; columns are {list(nf.columns)}")
    columns = [nf.get_column(c).to_list() for c in by_cols]
    labels = columns[0] if len(by_cols) == 1 else list(zip(*columns, strict=True))
    codes, uniques = pd.factorize(pd.Series(labels, dtype=object), use_na_sentinel=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(uniques) + 1))
    return {uniques[i]: order[bounds[i] : bounds[i + 1]] for i in range(len(uniques))}


def native_frame(frame: Any) -> Any:
    """The native frame inside a narwhals LazyFrame (anything else as it is)."""
    import narwhals as nw

    return frame.to_native() if isinstance(frame, nw.LazyFrame) else frame



def is_dask(obj: Any) -> bool:
    """A Dask DataFrame (without importing dask when it is not in use)."""
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(obj, dd.DataFrame)



def is_lazy(obj: Any) -> bool:
    """A polars LazyFrame, a Dask DataFrame, or a narwhals LazyFrame around one (without
    importing polars when it is not in use: an object cannot be a LazyFrame then)."""
    import narwhals as nw

    if isinstance(obj, nw.LazyFrame):
        obj = obj.to_native()
    pl = sys.modules.get("polars")
    return (pl is not None and isinstance(obj, pl.LazyFrame)) or is_dask(obj)



def materialize(frame: Any) -> Any:
    """An eager frame with the same rows (polars: streaming engine; Dask: ``compute``)."""

    frame = native_frame(frame)
    if is_dask(frame):
        return frame.compute().reset_index(drop=True)
    return frame.collect(engine="streaming")


Policy = Literal["0.25", "0.26"]



POLICIES = ("0.25", "0.26")
# ``_status`` codes of a trial table (the reward statuses, then ``running``).
_TRIAL_STATUSES = (*STATUSES, "running")
_RUNNING = len(STATUSES)


@dataclass(frozen=True)
class Counted:
    """The trials that count, and what was left out and why (:func:`counted_trials`).

    Attributes
    ----------
    frame
        The native frame of the rows that count (the input itself when every row does).
    n_running, n_left_out
        Running trials (never counted) and, under ``policy="0.26"``, finished trials left
        out for want of a valid reward.
    policy
        The policy applied.
    keep, running
        Boolean arrays over the input's rows (None when every row counts): the rows kept,
        and the running rows among those left out.
    """

    frame: Any
    n_running: int
    n_left_out: int
    policy: str
    keep: Any = field(default=None, repr=False, compare=False)
    running: Any = field(default=None, repr=False, compare=False)

    def notes(self) -> list[str]:
        """The sentences every output shows about trials that do not count."""
        out = []
        if self.n_running:
            out.append(f"{self.n_running:,} running trial(s) not counted (no result yet)")
        if self.n_left_out:
            out.append(
                f"{self.n_left_out:,} finished trial(s) without a valid reward left out "
                f"(policy {self.policy}: Harbor 0.26 leaves them out)"
            )
        return out


def counted_trials(trials: Any, *, policy: Policy = "0.25") -> Counted:
    """The one rule for which trials count, used by every analysis.

    A running trial never counts (it has no result yet). A finished trial without a valid
    reward counts as 0 under ``policy="0.25"`` (Harbor 0.25's mean: its reward columns are
    zero-filled) and is left out under ``"0.26"``. A reward key that a trial's whole
    evaluation never has is NA in that trial's rows, never 0: each analysis leaves such
    rows out of that key (and says so; :func:`na_rows`). Rows of ``errors="report"``
    (``_status == "invalid"``) are refused: they hold no trial. A frame without ``_status``
    (a plain table) counts whole.

    Parameters
    ----------
    trials
        A trial table or reward frame (pandas or polars, eager).
    policy
        ``"0.25"`` (default) or ``"0.26"``.

    Returns
    -------
    Counted
        ``.frame`` (the native frame of the rows that count) and ``.notes()``.

    Raises
    ------
    ValueError
        An unknown ``policy``.
    AggregationError
        The frame has invalid rows.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"_status": ["ok", "null", "running"],
    ...                   "reward_valid": [True, False, False], "reward": [1.0, 0.0, None]})
    >>> c = counted_trials(t)
    >>> len(c.frame), c.notes()
    (2, ['1 running trial(s) not counted (no result yet)'])
    >>> len(counted_trials(t, policy="0.26").frame)
    1
    """
    import narwhals as nw

    if policy not in POLICIES:
        raise ValueError(
            f"policy={policy!r}; expected '0.25' (a trial without a valid reward counts as 0) "
            "or '0.26' (it is left out)"
        )
    nf = nw.from_native(trials, eager_only=True)
    if "_status" not in nf.columns:
        return Counted(trials, 0, 0, policy)
    status = nf.get_column("_status")
    categories = _categories(status)
    with_valid = policy == "0.26" and "reward_valid" in nf.columns
    if "running" not in categories and "invalid" not in categories and not with_valid:
        return Counted(trials, 0, 0, policy)  # nothing to look at: no pass over the rows
    # Category codes, not strings: casting a million categoricals costs ~0.1 s.
    codes = category_codes(status, _TRIAL_STATUSES)
    invalid = codes == INVALID
    if invalid.any():
        lines = (
            f" (lines {nf.get_column('_line').to_numpy()[invalid][:5].tolist()}...)"
            if "_line" in nf.columns else ""
        )
        raise AggregationError(
            f"the table has {int(invalid.sum()):,} invalid row(s){lines} from errors='report' "
            "(they hold no trial or reward): drop them explicitly "
            "(trials[trials['_status'] != 'invalid']) before computing statistics"
        )
    running = codes == _RUNNING
    keep = ~running
    left_out = np.zeros(len(keep), dtype=bool)
    if with_valid:
        valid = nf.get_column("reward_valid").fill_null(False).to_numpy().astype(bool)
        left_out = keep & ~valid
        keep = keep & valid
    if keep.all():
        return Counted(trials, 0, 0, policy)
    mask = nw.new_series("keep", keep, nw.Boolean, backend=nw.get_native_namespace(nf))
    return Counted(nf.filter(mask).to_native(), int(running.sum()), int(left_out.sum()),
                   policy, keep, running)


def running_rows(trials: Any) -> npt.NDArray[np.bool_]:
    """A boolean array: True for the rows of trials that are still running."""
    import narwhals as nw

    nf = nw.from_native(trials, eager_only=True)
    if "_status" not in nf.columns:
        return np.zeros(len(nf), dtype=bool)
    status = nf.get_column("_status")
    if "running" not in _categories(status):
        return np.zeros(len(nf), dtype=bool)
    return np.asarray(category_codes(status, _TRIAL_STATUSES) == _RUNNING)


def ungrouped_running(trials: Any, by: str | Sequence[str]) -> npt.NDArray[np.bool_]:
    """Running trials whose group is not known yet: a null ``by`` value, or (in a trial
    table) a null ``eval``.

    Harbor creates a trial folder before it writes the trial's ``config.json``; until then
    the trial is running with no recorded configuration (its ``candidate`` is only the
    run's name). It never counts, so it forms no group of its own.
    """
    import narwhals as nw

    nf = nw.from_native(trials, eager_only=True)
    running = running_rows(trials)
    if not running.any():
        return running
    by_cols = [by] if isinstance(by, str) else list(by)
    cols = [c for c in by_cols if c in nf.columns] + (["eval"] if "eval" in nf.columns else [])
    unknown = np.zeros(len(nf), dtype=bool)
    for col in dict.fromkeys(cols):
        unknown |= nf.get_column(col).is_null().to_numpy().astype(bool)
    return running & unknown


def na_rows(frame: Any, keys: Sequence[str] | None = None) -> dict[str, npt.NDArray[np.bool_]]:
    """The NA cells of each reward key that has any (a key absent from a trial's whole
    evaluation: NaN in pandas, null in polars, ``_kind_<key> == "missing"``).

    Only frames with ``_kind_<key>`` companions have NA cells; elsewhere a null is a
    missing value that Harbor fills with 0. ``keys`` default: the frame's reward keys.
    """
    import narwhals as nw

    nf = nw.from_native(frame, eager_only=True)
    out: dict[str, npt.NDArray[np.bool_]] = {}
    for key in reward_keys(frame) if keys is None else keys:
        if key not in nf.columns or KIND_PREFIX + key not in nf.columns:
            continue
        column = nf.get_column(key)
        mask = column.is_null().to_numpy().astype(bool)
        if column.dtype.is_float():
            mask |= np.isnan(column.to_numpy().astype(np.float64, copy=False))
        if mask.any():
            out[key] = mask
    return out


def rows_for_policy(trials: Any, policy: Policy) -> Any:
    """The rows Harbor's job metrics see under ``policy``, as a native frame."""
    import narwhals as nw

    if policy not in ("0.25", "0.26"):
        raise ValueError(
            f"policy={policy!r}; expected '0.25' (a trial without reward counts as 0) or "
            "'0.26' (it is left out)"
        )
    nf = nw.from_native(trials, eager_only=True)
    for col in ("_status", "reward_valid", "eval"):
        if col not in nf.columns:
            raise HarborJobError(
                f"the frame has no {col!r} column; expected a trial table from read_harbor_job"
            )
    try:
        return counted_trials(trials, policy=policy).frame
    except AggregationError as exc:
        raise HarborJobError(str(exc).replace("statistics", "job metrics")) from None
