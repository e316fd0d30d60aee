"""What a trial table's rows are: groups, tasks (the sampling unit), the value column."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from metrickit.errors import MetrickitError, StatsError


def as_pandas(frame: Any) -> Any:
    import narwhals as nw
    import pandas as pd

    if isinstance(frame, pd.DataFrame):
        return frame
    nf = nw.from_native(frame, eager_only=True)
    return pd.DataFrame({c: nf.get_column(c).to_list() for c in nf.columns})


def require_by(columns: Sequence[str], by: str | Sequence[str], where: str) -> list[str]:
    """The ``by`` column(s) as a list; StatsError naming ``by=`` and the columns there are
    when one is missing (with a hint when it is ``candidate``, which every metrickit trial
    reader fills but a table of your own may lack)."""
    by_cols = [by] if isinstance(by, str) else list(by)
    absent = [c for c in by_cols if c not in columns]
    if absent:
        hint = (
            " (metrickit's trial readers fill it; for a table of your own pass by= naming "
            "the column that tells the candidates apart)" if "candidate" in absent else ""
        )
        raise StatsError(
            f"{where}: by={by!r} is not a column of the table{hint}; columns are {list(columns)}"
        )
    return by_cols


def value_column(df: Any, value: str | None) -> str:
    from metrickit._core.frame import reward_keys

    if value is not None:
        if value not in df.columns:
            raise StatsError(f"value={value!r} is not a column; columns are {list(df.columns)}")
        return value
    keys = reward_keys(df)
    # Keys that only other rows had (zero-filled here) are not candidates.
    present = [k for k in keys if "_kind_" + k not in df.columns
               or (df["_kind_" + k].astype(str) != "missing").any()]
    keys = present or keys
    if len(keys) == 1:
        return keys[0]
    raise StatsError(
        f"the table has {len(keys)} reward columns {keys}; pass value= to choose one"
        if keys
        else "the table has no reward column; pass value= naming a numeric column"
    )



def group_codes(labels: Any, by: str) -> tuple[np.ndarray, Any]:
    """Integer codes and sorted group names of a label column; a missing label is an error
    (a row would otherwise vanish from every mean and plot)."""
    import pandas as pd

    dtype = getattr(labels, "dtype", None)
    # only an object (or bool, or categorical) column can hold a bool beside other labels
    types = pd.api.types
    may_hold_bools = dtype is None or not (
        (types.is_string_dtype(dtype) and not types.is_object_dtype(dtype))
        or (types.is_numeric_dtype(dtype) and not types.is_bool_dtype(dtype))
        or types.is_datetime64_any_dtype(dtype))
    values = pd.Series(labels, dtype=object)
    if may_hold_bools and values.map(lambda v: isinstance(v, bool | np.bool_)).any():
        # True == 1 in Python, so a plain factorize would merge candidates True and 1.
        codes, keys = pd.factorize(
            values.map(lambda v: ("bool", bool(v)) if isinstance(v, bool | np.bool_) else v),
            sort=False,
        )
        order = np.argsort([str(k) for k in keys], kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        first = [values.iloc[int(np.argmax(codes == i))] for i in range(len(keys))]
        codes = np.where(codes < 0, -1, rank[np.maximum(codes, 0)])
        groups = pd.Index([first[i] for i in order], dtype=object)
    else:
        codes, groups = pd.factorize(values, sort=True)
    if (codes < 0).any():
        row = int(np.argmax(codes < 0))
        raise MetrickitError(
            f"column {by!r} has no value at row {row} ({int((codes < 0).sum())} row(s) in all); "
            "every case needs a group label: fill or drop those rows explicitly"
        )
    return codes, groups


# Columns that name the task (the sampling unit) in the tables metrickit reads.
TASK_COLUMNS = ("task_name", "task", "case_id", "sample_id", "doc_id")


def task_codes(
    frame: Any, cluster: str | None = "auto"
) -> tuple[npt.NDArray[np.intp] | None, str | None]:
    """Integer codes of the task column (``"auto"``: the first of ``TASK_COLUMNS`` the frame
    has), or ``(None, None)`` when there is none or ``cluster`` is None."""
    import narwhals as nw
    import pandas as pd

    if cluster is None:
        return None, None
    nf = nw.from_native(frame, eager_only=True)
    if cluster == "auto":
        cluster = next((c for c in TASK_COLUMNS if c in nf.columns), None)
        if cluster is None:
            return None, None
    elif cluster not in nf.columns:
        raise StatsError(f"cluster={cluster!r} is not a column; columns are {list(nf.columns)}")
    # the codes of task_labels' (source, task) labels, from the two columns' codes: no text
    # is built (rows without a source are a namespace of their own, as there)
    labels = pd.Series(nf.get_column(cluster).to_list(), dtype=object)
    null = labels.isna().to_numpy(dtype=bool)  # None, NaN, pd.NA
    if null.any():
        raise StatsError(
            f"{int(null.sum())} row(s) have no {cluster!r} (the first at row "
            f"{int(np.argmax(null))}): a trial without a task label cannot be clustered by "
            "task; label or drop those rows, or pass cluster=None to treat every trial as "
            "independent"
        )
    codes = pd.factorize(labels)[0].astype(np.int64)
    if cluster == "task_name" and "source" in nf.columns:
        sources = pd.factorize(pd.Series(nf.get_column("source").to_list(), dtype=object))[0]
        if np.unique(sources).size > 1:  # several namespaces (a null source is one)
            codes = pd.factorize((sources.astype(np.int64) + 1) * (codes.max() + 1) + codes)[0]
    return codes.astype(np.intp), cluster


def task_labels(frame: Any, task: str) -> Any:
    """The task of each row as a pandas Series of labels.

    A task is ``(source, task_name)``: ``task_name`` ids are only unique within their
    ``source`` (sample ``0`` of two lm-eval tasks, a task id two Inspect tasks share). So
    when the rows hold several sources the label is ``source/task_name``; rows without a
    source are a namespace of their own, labelled by the task name alone (never
    ``nan/...``, and never merged with each other or with a task of a named source).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"task_name": ["x", "x", "y"], "source": ["s", None, None]})
    >>> task_labels(df, "task_name").tolist()
    ['s/x', 'x', 'y']
    """
    import narwhals as nw
    import pandas as pd

    nf = nw.from_native(frame, eager_only=True)
    labels = pd.Series(nf.get_column(task).to_list(), dtype=object)
    if task == "task_name" and "source" in nf.columns:
        sources = pd.Series(nf.get_column("source").to_list(), dtype=object)
        null = sources.isna()
        if sources[~null].nunique() + bool(null.any()) > 1:
            text = labels.astype(str)
            labels = text.where(null, sources.astype(str) + "/" + text).astype(object)
    return labels



def like(original: Any, out: Any) -> Any:
    """``out`` (pandas) in the backend of ``original``."""
    module = type(original).__module__
    if module.startswith("polars"):
        import polars as pl

        return pl.DataFrame({c: out[c].tolist() for c in out.columns})
    return out
