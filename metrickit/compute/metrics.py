"""Metrics as named column operations, and metric definitions side by side.

A :class:`Metric` turns a reward frame into a number or a dict of named numbers. Most
metrics are *per-row values + a reduction*: a narwhals expression (or column) gives one
value per row and a vectorised reducer (mean, sum, quantile, ...) turns them into the
metric. Written that way, one definition runs unchanged on pandas, polars (and other
narwhals-supported) frames, and its uncertainty comes cheaply: the reducer is applied to
a whole matrix of bootstrap resamples at once.

>>> import metrickit as mk
>>> import narwhals as nw
>>> df = mk.read_rewards([{"reward": 1}, {"reward": 0.5}, None, {"reward": 0}])
>>> lenient = mk.metric("lenient", nw.col("reward") >= 0.5)
>>> lenient(df)
0.5
>>> mk.pass_rate(1.0)(df)
0.25
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from metrickit._core.display import result_html, result_repr, short_column, short_names
from metrickit._core.frame import (
    Policy,
    counted_trials,
    group_indices,
    na_rows,
    reward_arrays,
)
from metrickit._core.harbor_math import HARBOR_METRICS
from metrickit._core.values import KIND_PREFIX
from metrickit.compute.aggregate import aggregate
from metrickit.compute.intervals import Interval
from metrickit.errors import MetricError

# While a lazy frame streams batch by batch, the reward keys are those that occur in the
# whole frame, not those that happen to occur in one batch.
_FIXED_KEYS: ContextVar[list[str] | None] = ContextVar("metrickit_fixed_keys", default=None)

__all__ = [
    "Comparison",
    "Metric",
    "StatedInterval",
    "compare_metrics",
    "filled_count",
    "harbor_metric",
    "metric",
    "pass_rate",
    "quantile",
    "weighted",
]

Array = npt.NDArray[np.float64]
# A reducer maps values along ``axis`` (the last by default) to one number per leading
# index: (n,) -> () and (resamples, n) -> (resamples,). The ``axis`` keyword is what lets
# metrickit.compute.stats.bootstrap_ci evaluate all resamples in one call.
Reducer = Callable[..., Any]


def _nw(frame: Any, *, lazy_ok: bool = False) -> Any:
    import narwhals as nw

    from metrickit._core.frame import is_lazy, materialize

    if isinstance(frame, nw.DataFrame):
        return frame
    if is_lazy(frame):
        # Harbor's exact metrics stream a lazy/Dask frame (lazy_ok); per-row values
        # need the rows in memory, so those metrics see the materialised frame.
        if lazy_ok:
            return frame if isinstance(frame, nw.LazyFrame) else nw.from_native(frame)
        frame = materialize(frame)
    return nw.from_native(frame, eager_only=True)


def _mean(x: Array, axis: int = -1) -> Any:
    return np.mean(x, axis=axis) if x.shape[axis] else np.zeros(x.shape[:-1])


def _sum(x: Array, axis: int = -1) -> Any:
    return np.sum(x, axis=axis)


def _min(x: Array, axis: int = -1) -> Any:
    return np.min(x, axis=axis)


def _max(x: Array, axis: int = -1) -> Any:
    return np.max(x, axis=axis)


def _median(x: Array, axis: int = -1) -> Any:
    return np.median(x, axis=axis)


REDUCERS: dict[str, Reducer] = {
    "mean": _mean,
    "sum": _sum,
    "min": _min,
    "max": _max,
    "median": _median,
}
# Reducers a lazy frame can feed batch by batch.
_STREAMED = (_mean, _sum, _min, _max)


def _check_result(name: str, result: Any) -> float | dict[str, float]:
    """A metric's result must be a finite number or a dict of them."""

    def number(value: Any) -> float | None:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            # numpy scalars are numbers.Real; 0-d arrays are not
            if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
                value = value.item()
            else:
                return None
        value = float(value)
        return value if math.isfinite(value) else None

    if isinstance(result, Mapping):
        out: dict[str, float] = {}
        for key, value in result.items():
            checked = number(value)
            if checked is None or not isinstance(key, str):
                raise MetricError(
                    f"metric {name!r} returned {{{key!r}: {value!r}}} inside its dict; "
                    "expected string keys and finite numbers"
                )
            out[key] = checked
        return out
    checked = number(result)
    if checked is None:
        raise MetricError(
            f"metric {name!r} returned {result!r} ({type(result).__name__}); "
            "expected a finite number or a dict of named finite numbers"
        )
    return checked


@dataclass(frozen=True)
class StatedInterval:
    """A metric's own value and interval for :func:`compare_metrics` (see
    :attr:`Metric.stated`).

    Attributes
    ----------
    interval
        ``estimate`` is the value shown; ``low``/``high``/``method``/``note`` the interval.
    harbor_value
        The metric over trials (Harbor's way), or NaN where it has none.
    notes
        Lines for :attr:`Comparison.notes` (what the user must know about this value).
    """

    interval: Interval
    harbor_value: float = math.nan
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Metric:
    """A named metric over a reward frame.

    Either ``values`` (per-row numbers for each output, from a narwhals frame) plus a
    vectorised ``reduce``, or a free ``function`` of the (narwhals) frame. The first kind
    gets vectorised bootstrap intervals; the second is resampled row-wise (slower).

    ``higher_is_better`` decides ranks in :func:`compare_metrics`; ``resample=False``
    keeps a costly free function (a metric script) out of the row bootstrap.
    ``skip_na=True`` (the built-in metrics that read reward keys) says a NaN per-row value
    is NA, not a number: the reward key it reads is absent from that trial's evaluation,
    so the row is left out of that output (never counted as 0 or as a failure).

    ``q`` marks a quantile metric (:func:`quantile`; ``reduce`` is its quantile): in
    :func:`compare_metrics` its value and interval are those of the ``q`` quantile of the
    task means (:func:`metrickit.compute.intervals.quantile_ci`). ``stated`` lets a metric
    state its own value and interval: called with one group's counted trials (a narwhals
    DataFrame) and the confidence, it returns a :class:`StatedInterval`, which
    :func:`compare_metrics` shows as it is (value, bounds, method, note, ``harbor_value``)
    and whose ``notes`` it adds to :attr:`Comparison.notes`.

    On a trial table only the trials that count are read
    (:func:`metrickit._core.frame.counted_trials`, Harbor 0.25's policy: running trials
    never count).
    """

    #: ``compute`` reads a lazy frame batch by batch (``aggregate`` passes it unchanged).
    streams: ClassVar[bool] = True
    name: str
    values: Callable[[Any], dict[str, Array]] | None = None
    reduce: Reducer = _mean
    function: Callable[[Any], Any] | None = None
    higher_is_better: bool = True
    description: str = ""
    resample: bool = True
    exact: Callable[[Any], Any] | None = field(default=None, repr=False)
    skip_na: bool = False
    q: float | None = None
    stated: Callable[[Any, float], StatedInterval] | None = field(default=None, repr=False)

    def per_row(self, frame: Any) -> dict[str, Array]:
        """Per-row values of each output (only for value/reduce metrics)."""
        if self.values is None:
            raise MetricError(f"metric {self.name!r} is a free function; it has no per-row values")
        try:
            out = self.values(_nw(frame))
        except MetricError:
            raise
        except Exception as exc:
            raise MetricError(f"metric {self.name!r} raised {type(exc).__name__}: {exc}") from exc
        return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}

    def compute(self, frame: Any) -> float | dict[str, float]:
        """The metric's value on ``frame``: a number, or a dict of named numbers.

        A lazy frame (``scan_rewards``, a polars LazyFrame, a Dask DataFrame) streams:
        Harbor's metrics exactly, per-row metrics reduced by mean/sum/min/max batch by
        batch (equal to the eager value to ~1e-15 relative: the sum's order differs);
        other metrics see the collected frame.
        """
        import narwhals as nw

        from metrickit._core.frame import is_lazy

        streamed = (
            is_lazy(frame)
            and self.exact is None
            and self.values is not None
            and self.reduce in _STREAMED
        )
        nf = None if streamed else _nw(frame, lazy_ok=self.exact is not None)
        if isinstance(nf, nw.DataFrame):
            nf = nw.from_native(counted_trials(nf.to_native()).frame, eager_only=True)
        try:
            result: Any
            if streamed:
                result = _stream_values(self, frame)
            elif self.exact is not None:
                result = self.exact(nf)
            elif self.function is not None:
                result = self.function(nf)
            else:
                rows = self.per_row(nf)
                result = {k: self.reduce(self._measured(k, v)) for k, v in rows.items()}
            # One output is one number, labelled with the metric's own name.
            if isinstance(result, Mapping) and len(result) == 1:
                result = next(iter(result.values()))
        except MetricError:
            raise
        except Exception as exc:
            raise MetricError(f"metric {self.name!r} raised {type(exc).__name__}: {exc}") from exc
        return _check_result(self.name, result)

    def __call__(self, frame: Any) -> float | dict[str, float]:
        return self.compute(frame)

    def _measured(self, output: str, values: Array) -> Array:
        """``values`` without their NA rows (``skip_na``); MetricError when none is left."""
        if not self.skip_na or values.ndim != 1:
            return values
        keep = ~np.isnan(values)
        if keep.all():
            return values
        if not keep.any() and values.size:
            raise MetricError(
                f"metric {self.name!r}: {output!r} is missing (NA) in every row: no trial here "
                "has the reward key it reads (their evaluation has no such key)"
            )
        return values[keep]

    def _measured_or_none(self, values: Array) -> Array:
        """``values`` without their NA rows (``skip_na``), possibly none (a batch)."""
        return values[~np.isnan(values)] if self.skip_na and values.ndim == 1 else values


class _Running:
    """mean/sum/min/max of one output, fed batch by batch."""

    def __init__(self) -> None:
        self.sums: list[float] = []
        self.n = 0
        self.low = math.inf
        self.high = -math.inf

    def add(self, values: Array) -> None:
        if values.size:
            self.sums.append(float(np.sum(values)))  # pairwise within the batch
            # np.minimum/maximum keep a NaN, as numpy's min/max of all rows would
            self.low = float(np.minimum(self.low, values.min()))
            self.high = float(np.maximum(self.high, values.max()))
            self.n += values.size

    def result(self, reduce: Reducer) -> float:
        if reduce is _min or reduce is _max:
            if not self.n:
                raise ValueError("zero-size array to reduction operation (no rows)")
            return self.low if reduce is _min else self.high
        total = math.fsum(self.sums)  # the batch sums, added without further rounding
        if reduce is _sum:
            return total
        return total / self.n if self.n else 0.0


def _stream_values(metric: Metric, frame: Any) -> dict[str, float]:
    """A per-row metric reduced batch by batch: only one batch of rows in memory."""
    from metrickit.compute.stream import eager_batches, empty_like, occurring_keys

    states: dict[str, _Running] = {}
    rows = 0
    token = _FIXED_KEYS.set(occurring_keys(frame))
    try:
        for batch in eager_batches(frame):
            batch = counted_trials(batch).frame  # running trials never count
            rows += len(batch)
            for name, values in metric.per_row(batch).items():
                states.setdefault(name, _Running()).add(metric._measured_or_none(values))
        if not states:  # no batch at all: the per-row names come from an empty frame
            states = {name: _Running() for name in metric.per_row(empty_like(frame))}
    finally:
        _FIXED_KEYS.reset(token)
    for name, state in states.items():
        if metric.skip_na and rows and not state.n:
            metric._measured(name, np.full(1, np.nan))  # raises: NA in every row
    return {name: state.result(metric.reduce) for name, state in states.items()}


def _expr_values(name: str, expr: Any) -> Callable[[Any], dict[str, Array]]:
    import narwhals as nw

    def values(nf: Any) -> dict[str, Array]:
        if isinstance(expr, str) and KIND_PREFIX + expr in nf.columns:
            # a reward key: NaN where its evaluation never has it (left out, not a 0)
            return {name: _key_values(name, nf, expr, na_rows(nf.to_native(), [expr]))}
        if isinstance(expr, str):
            column = nf.get_column(expr)
        else:
            column = nf.select(expr.alias(name) if hasattr(expr, "alias") else expr).get_column(
                name
            )
        if column.null_count():
            raise MetricError(
                f"metric {name!r} produced {column.null_count()} null value(s); fill them "
                "explicitly (e.g. .fill_null(0)) so nothing is dropped silently"
            )
        return {name: column.cast(nw.Float64).to_numpy()}

    return values


def metric(
    name: str,
    definition: Any,
    *,
    agg: str | Reducer = "mean",
    higher_is_better: bool = True,
) -> Metric:
    """Define a metric in a line.

    Parameters
    ----------
    name
        Label shown in tables and plots.
    definition
        A narwhals expression giving one value per row (``nw.col("reward") >= 0.5``), a
        column name, or a function of the narwhals DataFrame returning a number or a dict
        of numbers (``lambda df: df["reward"].mean()``).
    agg
        How per-row values become the metric: ``"mean"`` (default), ``"sum"``, ``"min"``,
        ``"max"``, ``"median"``, or a vectorised callable reducing along the last axis.
        Ignored for functions.

    Examples
    --------
    >>> import metrickit as mk, narwhals as nw
    >>> df = mk.read_rewards([{"a": 1, "b": 0.5}, {"a": 0, "b": 1}])
    >>> mk.metric("both", (nw.col("a") > 0) & (nw.col("b") > 0))(df)
    0.5
    >>> mk.metric("spread", lambda df: df["b"].max() - df["b"].min())(df)
    0.5
    """
    import narwhals as nw

    if isinstance(definition, nw.Expr | str):
        reducer = REDUCERS[agg] if isinstance(agg, str) else agg
        return Metric(
            name,
            values=_expr_values(name, definition),
            reduce=reducer,
            higher_is_better=higher_is_better,
            # a reward key named as a column: its NA rows are left out, as the built-ins do
            skip_na=isinstance(definition, str),
        )
    if callable(definition):
        return Metric(name, function=definition, higher_is_better=higher_is_better)
    raise MetricError(
        f"metric {name!r}: cannot use {definition!r} as a definition; expected a narwhals "
        "expression, a column name, or a function of the frame"
    )


def _keys_or(nf: Any, key: str | None) -> list[str]:
    keys, *_ = reward_arrays(nf.to_native())  # also refuses invalid rows
    keys = _FIXED_KEYS.get() or keys
    if key is not None:
        if key not in nf.columns:
            raise MetricError(f"reward key {key!r} is not a column; reward keys are {keys}")
        return [key]
    return keys


def _key_values(
    metric: str, nf: Any, key: str, na: Mapping[str, npt.NDArray[np.bool_]]
) -> Array:
    """The values of ``key`` as floats, NaN exactly where the key is NA (absent from the
    trial's evaluation); any other missing value is refused (fill it explicitly)."""
    values = nf.get_column(key).to_numpy().astype(np.float64)
    other = np.isnan(values) & ~na[key] if key in na else np.isnan(values)
    if other.any():
        raise MetricError(
            f"metric {metric!r}: column {key!r} has {int(other.sum())} missing value(s) at rows "
            f"{np.flatnonzero(other)[:5].tolist()}; fill them explicitly (e.g. .fill_null(0)) "
            "so nothing is dropped silently"
        )
    return values


def harbor_metric(name: str = "mean") -> Metric:
    """Harbor's own ``mean``/``sum``/``min``/``max``, exactly as :func:`aggregate` computes them.

    Intervals use the zero-filled per-row values of each output key.
    """
    if name not in HARBOR_METRICS:
        raise MetricError(f"unknown Harbor metric {name!r}; expected one of {list(HARBOR_METRICS)}")

    def values(nf: Any) -> dict[str, Array]:
        keys, vals, _, _ = reward_arrays(nf.to_native())
        for k, na in na_rows(nf.to_native(), keys).items():  # NA: not a 0
            vals[k] = np.where(na, np.nan, vals[k])
        if len(keys) <= 1:
            return {name: vals[keys[0]] if keys else np.zeros(len(nf))}
        return {k: vals[k] for k in keys}

    def exact(nf: Any) -> Any:
        result = aggregate(nf.to_native(), name)
        return result[name] if list(result) == [name] else result

    return Metric(
        name,
        values=values,
        reduce=REDUCERS[name],
        exact=exact,
        description=f"Harbor {name} (null rows and missing keys count as 0)",
        skip_na=True,
    )


def pass_rate(threshold: float = 1.0, *, key: str | None = None, name: str | None = None) -> Metric:
    """Share of rows whose reward is at least ``threshold`` (a null row fails).

    With several reward keys and no ``key``, a row passes when *every* key it has passes.
    A key absent from a trial's whole evaluation is NA there, not a failure: such a row is
    left out of a ``key=`` pass rate (NA where every row lacks the key), and a row without
    any of the keys is left out of the all-keys one.

    Examples
    --------
    >>> import pandas as pd
    >>> import metrickit as mk
    >>> df = pd.DataFrame({"id": ["q1", "q2", "q1", "q2"], "run": ["a", "a", "b", "b"],
    ...                    "correct": [1, 0, None, None], "reward": [1, 0, 1, 1]})
    >>> t = mk.trials_from_frame(df, task="id", candidate="run", reward=["correct", "reward"])
    >>> mk.pass_rate(key="correct")(t[t["eval"] == "a"])
    0.5
    >>> table = mk.compare_metrics(t, [mk.pass_rate(key="correct")], by="eval").table
    >>> table[["group", "value", "n"]]
      group  value  n
    0     a    0.5  2
    1     b    NaN  0
    """

    label = name or f"pass_rate@{threshold:g}" + (f"[{key}]" if key else "")

    def values(nf: Any) -> dict[str, Array]:
        keys = _keys_or(nf, key)
        if not keys:
            return {label: np.zeros(len(nf))}
        na = na_rows(nf.to_native(), keys)
        none = np.zeros(len(nf), dtype=bool)
        ok = np.ones(len(nf), dtype=bool)
        measured = np.zeros(len(nf), dtype=bool)
        for k in keys:
            missing = na.get(k, none)
            with np.errstate(invalid="ignore"):
                ok &= (nf.get_column(k).to_numpy() >= threshold) | missing
            measured |= ~missing
        return {label: np.where(measured, ok.astype(np.float64), np.nan)}

    return Metric(label, values=values, description=f"share of rows with reward >= {threshold:g}",
                  skip_na=True)


def weighted(weights: Mapping[str, float], *, name: str = "weighted") -> Metric:
    """Mean over rows of a weighted combination of reward keys (weights scaled to sum 1)."""
    total = float(sum(weights.values()))
    if total <= 0 or any(w < 0 for w in weights.values()):
        raise MetricError(f"weights {dict(weights)!r} must be >= 0 and not all 0")

    def values(nf: Any) -> dict[str, Array]:
        missing = [k for k in weights if k not in nf.columns]
        if missing:
            raise MetricError(f"metric {name!r}: key {missing[0]!r} is not a column of the frame")
        na = na_rows(nf.to_native(), list(weights))
        combo = np.zeros(len(nf))
        for k, w in weights.items():
            combo = combo + (w / total) * _key_values(name, nf, k, na)
        return {name: combo}  # NaN where a key is NA: the row is left out

    return Metric(name, values=values, description=f"weighted mean of {dict(weights)}",
                  skip_na=True)


def quantile(q: float, *, key: str | None = None, name: str | None = None) -> Metric:
    """The ``q`` quantile (numpy's linear interpolation) of each reward key.

    Called on a frame: the quantile over its trials. In :func:`compare_metrics`: the
    quantile over tasks of each task's mean (the one estimand), with the exact
    order-statistic interval (:func:`metrickit.compute.intervals.quantile_ci`);
    ``harbor_value`` is the quantile over trials.
    """
    if not 0.0 <= q <= 1.0:
        raise MetricError(f"quantile q={q!r}; expected 0 <= q <= 1")
    label = name or f"q{q:g}"

    def values(nf: Any) -> dict[str, Array]:
        keys = _keys_or(nf, key)
        na = na_rows(nf.to_native(), keys)
        if len(keys) == 1:
            return {label: _key_values(label, nf, keys[0], na)}
        return {f"{label}[{k}]": _key_values(label, nf, k, na) for k in keys}

    return Metric(
        label,
        values=values,
        reduce=lambda x, axis=-1: np.quantile(x, q, axis=axis),
        description=f"{q:g} quantile",
        skip_na=True,
        q=q,
    )


def filled_count(*, key: str | None = None, name: str = "filled") -> Metric:
    """How many reward values were missing (null rows, missing keys) and filled with 0."""

    def values(nf: Any) -> dict[str, Array]:
        keys, _, _, present = reward_arrays(nf.to_native())
        keys = _FIXED_KEYS.get() or keys
        if key is not None:
            keys = [key]
        if not keys:
            return {name: np.ones(len(nf))}  # every row of a key-less frame is a fill
        na = na_rows(nf.to_native(), [k for k in keys if k in present])
        filled = np.zeros(len(nf))
        for k in keys:
            # an NA cell is not a fill: Harbor never fills a key the evaluation lacks
            filled += (~present[k] & ~na[k] if k in na else ~present[k]) if k in present else 1
        return {name: filled}

    return Metric(
        name,
        values=values,
        reduce=_sum,
        higher_is_better=False,
        description="number of filled (missing) reward values",
    )


# ---------------------------------------------------------------------------
# compare_metrics
# ---------------------------------------------------------------------------


def as_metric(item: Any, name: str | None = None) -> Metric:
    """Coerce what a user passes into a :class:`Metric`."""
    if isinstance(item, Metric):
        return item if name is None or name == item.name else replace(item, name=name)
    if isinstance(item, str) and item in HARBOR_METRICS:
        return as_metric(harbor_metric(item), name)
    if hasattr(item, "compute") and hasattr(item, "name"):
        return Metric(str(item.name), function=lambda nf: item.compute(nf.to_native()))
    if name is not None:
        return metric(name, item)
    raise MetricError(
        f"cannot use {item!r} as a metric; pass a Metric, a Harbor name "
        f"({list(HARBOR_METRICS)}), or name=definition pairs in a dict"
    )


def _normalise(metrics: Any) -> list[Metric]:
    if isinstance(metrics, Mapping):
        return [as_metric(v, name=k) for k, v in metrics.items()]
    if isinstance(metrics, Metric | str) or not isinstance(metrics, Iterable):
        metrics = [metrics]
    return [as_metric(m) for m in metrics]


@dataclass
class Comparison:
    """Metric definitions side by side, with how sure each ranking is.

    ``table``: one row per (group, metric output) with ``value`` (for means: the mean
    over tasks of each task's mean, the estimand of every interval and rank here),
    ``harbor_value`` (the metric over trials: Harbor's metric), ``ci_low``, ``ci_high``,
    ``ci_method``, ``n`` (rows), ``n_tasks``, ``rank`` (1 = best under that metric),
    ``rank_low``/``rank_high`` (the 95 % interval of the rank over draws of the groups'
    means from their task-clustered joint sampling distribution: :class:`metrickit.compute.ranking.
    MeanDraws`), ``p_best`` (the empirical-Bayes probability of being best) and
    ``best_group`` (the 95 % confidence set for the best:
    :func:`metrickit.compute.ranking.best_group`, a step-down permutation test over tasks
    when the groups ran the same tasks).
    ``agreement``: Kendall's tau between the group rankings of each pair of metrics.
    ``pairwise``: every pair of groups under each mean-type metric, compared on the tasks
    both ran (:func:`metrickit.compute.ranking.pairwise_tests`: ``n_tasks`` paired,
    ``n_only_a``/``n_only_b`` left out), with Holm-adjusted p-values (``p_holm``) over the
    pairs of that metric. A group whose value is NA (the key it reads is absent from its
    evaluation) has no rank and is in no pair.
    ``notes``: what was left out (running trials, NA rows, unpaired tasks), what has no
    interval or rank interval, and why.
    """

    table: Any
    agreement: Any
    by: Any
    pairwise: Any = None
    notes: list[str] = field(default_factory=list)

    def _display(self) -> tuple[str, Any, list[str]]:
        """Headline (per metric, the best group or the tied ones), the table under short
        group names, the notes (and what the rank agreement is, or why there is none)."""
        groups = list(dict.fromkeys(self.table["group"]))
        short = dict(zip(groups, short_names(groups), strict=True))
        headline = "; ".join(f"{k}: {self._best_text(k, short)}" for k in self.best())
        headline = headline or "no metric"
        notes = list(self.notes)
        if self.agreement is None or not len(self.agreement):
            notes.append("rank agreement (Kendall's tau): none (one metric, or fewer than "
                         "two ranked groups)")
        else:
            notes += [f"rank agreement {row.metric_a} vs {row.metric_b}: Kendall's tau "
                      f"{row.kendall_tau:.3f}" for row in self.agreement.itertuples()]
        return headline, short_column(self.table, "group"), notes

    def _repr_html_(self) -> str:
        return result_html(*self._display(), title="Comparison")

    def __repr__(self) -> str:
        return result_repr("Comparison", *self._display())

    def pivot(self, column: str = "value") -> Any:
        """Groups as rows, metrics as columns."""
        return self.table.pivot(index="group", columns="metric", values=column)

    def best(self) -> dict[str, list[Any]]:
        """Per metric, the best group, or every group tied for best (leader first)."""
        out: dict[str, list[Any]] = {}
        for label, part in self.table.groupby("metric", sort=False):
            members = part[part["best_group"]].sort_values(["rank", "p_best"],
                                                            ascending=[True, False])
            out[str(label)] = list(members["group"])
        return out

    def _best_text(self, metric: str, names: Mapping[Any, str] | None = None) -> str:
        members = [names.get(m, m) if names else m for m in self.best()[metric]]
        if not members:
            return "no rank interval"
        if len(members) == 1:
            return f"{members[0]} (best at 95 %)"
        return "tied: " + ", ".join(map(str, members))


CI_METHODS = ("auto", "analytic", "wilson", "bootstrap", "bca", "none")


def _no_interval_reason(metric: Metric) -> str | None:
    if metric.reduce is _max or metric.reduce is _min:
        which = "max" if metric.reduce is _max else "min"
        return f"none ({which}: no honest interval for an extreme value)"
    return None


def _quantile_of(metric: Metric) -> float | None:
    """The quantile a metric reports (``q``; 0.5 for a median), or None."""
    return 0.5 if metric.reduce is _median else metric.q


def _with_note(iv: Interval) -> str:
    return iv.method + (f" ({iv.note})" if iv.note else "")


def _interval(
    metric: Metric,
    rows: Array,
    clusters: npt.NDArray[np.intp] | None,
    *,
    confidence: float,
    ci: str,
    n_resamples: int,
    seed: int,
) -> tuple[float, float, str, float | None]:
    """``(low, high, method, estimate)`` of one output; ``estimate`` is the value the
    interval is for where it is not the metric's own reduction (a quantile over task
    means), else None."""
    from metrickit.compute import intervals, stats

    reason = _no_interval_reason(metric)
    if reason is not None:
        return math.nan, math.nan, reason, None
    n = rows.shape[-1]
    q = _quantile_of(metric)
    if q is not None and ci not in ("bootstrap", "bca"):
        iv = intervals.quantile_ci(rows, q, clusters=clusters, confidence=confidence)
        return iv.low, iv.high, _with_note(iv), iv.estimate
    if metric.reduce is _sum and ci not in ("bootstrap", "bca"):
        iv = intervals.sum_ci(rows, clusters=clusters, confidence=confidence, seed=seed)
        return iv.low, iv.high, _with_note(iv), None
    if metric.reduce is _mean:
        if ci == "auto":
            iv = stats.mean_ci(rows, confidence=confidence, clusters=clusters)
            return iv.low, iv.high, _with_note(iv), None
        binary = bool(np.all((rows == 0) | (rows == 1)))
        method = "analytic" if ci == "wilson" and not binary else ci
        if n < 2 and method != "wilson":
            return math.nan, math.nan, "none (one value)", None
        iv = stats.mean_ci(
            rows, method=method, confidence=confidence, n_resamples=n_resamples, seed=seed,
            clusters=clusters,
        )
        return iv.low, iv.high, _with_note(iv), None
    if n < 2:
        return math.nan, math.nan, "none (one value)", None
    if q is not None:
        # An explicit bootstrap of a quantile resamples the task means: the same estimand.
        if clusters is not None:
            counts = np.bincount(clusters)
            rows = np.bincount(clusters, weights=rows)[counts > 0] / counts[counts > 0]
        iv = stats.bootstrap_ci(rows, metric.reduce, confidence=confidence,
                                n_resamples=n_resamples, seed=seed,
                                method="bca" if ci == "bca" else "percentile")
        method = ("bca" if ci == "bca" else "bootstrap") + (
            " over tasks" if clusters is not None and rows.size < n else "")
        return iv.low, iv.high, method, iv.estimate
    if clusters is not None and len(np.unique(clusters)) < n:
        low, high = _cluster_bootstrap(
            rows, clusters, metric.reduce, confidence=confidence, n_resamples=n_resamples,
            seed=seed,
        )
        return low, high, "bootstrap over tasks", None
    method = "bca" if ci == "bca" else "bootstrap"
    iv = stats.bootstrap_ci(
        rows,
        metric.reduce,
        confidence=confidence,
        n_resamples=n_resamples,
        method="bca" if method == "bca" else "percentile",
        seed=seed,
    )
    return iv.low, iv.high, method, None


def _cluster_bootstrap(
    x: Array,
    clusters: npt.NDArray[np.intp],
    reduce: Reducer,
    *,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """Percentile bootstrap that resamples whole clusters (tasks) with their rows."""
    order = np.argsort(clusters, kind="stable")
    _, first, sizes = np.unique(clusters[order], return_index=True, return_counts=True)
    g = sizes.size
    rng = np.random.default_rng(seed)
    draws = np.empty(n_resamples)
    for i in range(n_resamples):
        pick = rng.integers(0, g, g)
        lengths = sizes[pick]
        starts = np.repeat(first[pick] - np.cumsum(lengths) + lengths, lengths)
        idx = order[starts + np.arange(lengths.sum())]
        draws[i] = float(reduce(x[idx]))
    alpha = (1 - confidence) / 2
    return float(np.quantile(draws, alpha)), float(np.quantile(draws, 1 - alpha))


def _free_interval(
    metric: Metric, nf: Any, *, confidence: float, n_resamples: int, seed: int
) -> dict[str, tuple[float, float]]:
    """Row-resampling bootstrap for free-function metrics (one call per resample)."""
    n = len(nf)
    if n < 2 or n_resamples <= 0:
        return {}
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(n_resamples):
        idx = rng.integers(0, n, n)
        value = metric.compute(nf[idx])
        items = value.items() if isinstance(value, dict) else [(metric.name, value)]
        for k, v in items:
            draws.setdefault(k, []).append(v)
    alpha = (1 - confidence) / 2
    return {
        k: (float(np.quantile(v, alpha)), float(np.quantile(v, 1 - alpha)))
        for k, v in draws.items()
    }


def _label(metric: Metric, out_name: str, n_outputs: int) -> str:
    if n_outputs == 1:
        return metric.name
    return out_name if "[" in out_name else f"{metric.name}[{out_name}]"


def compare_metrics(
    frame: Any,
    metrics: Any,
    *,
    by: str | Sequence[str] | None = "candidate",
    policy: Policy = "0.25",
    confidence: float = 0.95,
    ci: str = "auto",
    cluster: str | None = "auto",
    n_resamples: int = 2000,
    rank_resamples: int = 1000,
    free_resamples: int = 200,
    seed: int = 0,
) -> Comparison:
    """Several metric definitions over the same rewards, with uncertainty, ranks and ties.

    Parameters
    ----------
    frame
        A reward or trial frame (pandas, polars, ...).
    metrics
        Metrics: :class:`Metric` objects, Harbor names (``"mean"``), script metrics
        (:func:`metrickit.scoring.metric_scripts.script_metric`), or a dict ``{name: definition}``.
    by
        Column(s) whose groups are compared: ``"candidate"`` (default: one recorded
        configuration, what every trial reader fills), ``"eval"``, ``"agent"``,
        ``"_source"``, ...; ``None`` for the whole frame as one group. A frame without a
        ``candidate`` column (a reward frame from :func:`metrickit.read_rewards`, a table of
        your own) is one group under the default, and ``notes`` says so; any other ``by``
        that is not a column is refused.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0 (Harbor 0.25),
        ``"0.26"`` it is left out. Running trials never count; ``notes`` says how many
        were left out.
    ci
        ``"auto"`` (default): for means, :func:`metrickit.mean_ci`'s default (Wilson for
        0/1 values, t cut to the value range otherwise, clustered by task where tasks
        repeat); for medians and quantiles (:func:`quantile`) the exact order-statistic
        interval of the quantile over task means
        (:func:`metrickit.compute.intervals.quantile_ci`), which is also their ``value``;
        for sums the interval over task sums (:func:`metrickit.compute.intervals.sum_ci`);
        none for ``max``/``min``, which have no honest interval; a metric with its own
        interval (:attr:`Metric.stated`, e.g. :func:`metrickit.macro_mean`) states it.
        ``"analytic"``, ``"wilson"``, ``"bootstrap"``, ``"bca"`` force that method for
        means (still clustered by task where tasks repeat); ``"bootstrap"``/``"bca"``
        bootstrap the task means of a quantile and the tasks of a sum; ``"none"`` skips
        intervals. Free-function
        metrics are bootstrapped over rows with ``free_resamples`` calls; script metrics
        get no interval.
    cluster
        The task column (the sampling unit); ``"auto"`` takes ``task_name``, ``task``,
        ``case_id``, ``sample_id`` or ``doc_id`` when the frame has one. ``None`` treats
        rows as independent.
    rank_resamples
        Draws behind ``rank_low``/``rank_high``/``p_best`` (mean-type metrics).

    Returns
    -------
    Comparison
        ``.table`` (tidy, pandas), ``.best()``, ``.pairwise``, ``.agreement``, ``.notes``.
        A reward key absent from a trial's evaluation is NA there: the built-in metrics
        leave such rows out (``n`` counts the rows used), and a group none of whose rows
        has the key gets the value NA, no rank, and a note (never 0, never ranked last).
        ``pairwise`` compares two groups on the tasks both ran (see
        :func:`metrickit.compute.ranking.pairwise_tests`).

    Raises
    ------
    StatsError
        An unknown ``ci``; a ``by`` or ``cluster`` column that is not there.
    """
    import narwhals as nw
    import pandas as pd

    from metrickit.compute.ranking import MeanDraws
    from metrickit.compute.stats import StatsError, require_by, task_codes

    if ci not in CI_METHODS:
        raise StatsError(f"ci={ci!r}; expected one of {', '.join(map(repr, CI_METHODS))}")
    nf = _nw(frame)
    counted = counted_trials(nf.to_native(), policy=policy)
    notes: list[str] = counted.notes()
    nf = nw.from_native(counted.frame, eager_only=True)
    if by == "candidate" and "candidate" not in nf.columns:
        by = None
        notes.append("the frame has no 'candidate' column: the whole frame is one group "
                     "(pass by= to compare groups)")
    elif by is not None:
        require_by(list(nf.columns), by, "compare_metrics")
    items = _normalise(metrics)
    native = nf.to_native()
    units, _ = task_codes(native, cluster)
    groups = group_indices(native, by) if by is not None else {"all": np.arange(len(nf))}
    group_labels = list(groups)
    row_group = np.empty(len(nf), dtype=np.intp)
    for i, idx in enumerate(groups.values()):
        row_group[idx] = i
    notes += _na_notes(native, groups)
    records: list[dict[str, Any]] = []
    stated_notes: list[str] = []
    higher: dict[str, bool] = {}
    per_row_all: dict[str, Array] = {}
    for label, idx in groups.items():
        sub = nf[idx]
        sub_units = units[idx] if units is not None else None
        for m in items:
            for record in _group_records(
                m, sub, sub_units, ci=ci, confidence=confidence, n_resamples=n_resamples,
                free_resamples=free_resamples, seed=seed, notes=stated_notes,
            ):
                higher[record["metric"]] = m.higher_is_better
                records.append({"group": label, **record})
    notes += list(dict.fromkeys(stated_notes))
    for record in records:
        if not math.isfinite(record["value"]):
            notes.append(
                f"{record['group']!r}: {record['metric']} is missing (NA): no trial there has "
                "the reward key it reads (its evaluation has no such key); no value, no rank"
            )
    # Per-row values over the whole frame, for the rank resampling (mean-type metrics).
    for m in items:
        if m.values is None or m.reduce is not _mean:
            notes.append(
                f"metric {m.name!r}: no rank interval (rank intervals are for means)"
            )
            continue
        rows_all = m.per_row(nf)
        for out_name, rows in rows_all.items():
            if np.shape(rows)[-1] != len(nf):  # an expression that aggregates
                notes.append(f"metric {m.name!r}: no rank interval (it gives one value, not "
                             "one per row)")
                continue
            per_row_all[_label(m, out_name, len(rows_all))] = rows
    table = pd.DataFrame.from_records(
        records,
        columns=["group", "metric", "value", "ci_low", "ci_high", "ci_method", "n", "n_tasks",
                 "harbor_value"],
    )
    table["rank"] = pd.array([pd.NA] * len(table), dtype="Int64")
    for column in ("rank_low", "rank_high"):
        table[column] = pd.array([pd.NA] * len(table), dtype="Int64")
    table["p_best"] = np.nan
    table["best_group"] = False
    resampler = (
        MeanDraws(row_group, len(groups), units, n_draws=rank_resamples, seed=seed)
        if per_row_all
        else None
    )
    pair_tables = []
    for label_key, part in table.groupby("metric", sort=False):
        key = str(label_key)
        ranks = part["value"].rank(ascending=not higher[key], method="min")
        table.loc[part.index, "rank"] = ranks.astype("Int64")
        if resampler is None or key not in per_row_all or len(part) != len(groups):
            continue
        pairs = _rank_one(table, part, group_labels, resampler, per_row_all[key],
                          higher_is_better=higher[key], confidence=confidence)
        pair_tables.append(pairs.assign(metric=key))
    if len(groups) > 2 and pair_tables:
        notes.append(
            "pairwise p-values are Holm-adjusted over the pairs of each metric (p_holm)"
        )
    pairwise = (
        pd.concat(pair_tables, ignore_index=True)[["metric", *pair_tables[0].columns[:-1]]]
        if pair_tables
        else None
    )
    if pairwise is not None:
        notes += _pairing_notes(pairwise)
    agreement = _agreement(table, higher)
    return Comparison(table=table, agreement=agreement, by=by, pairwise=pairwise, notes=notes)


def _group_records(
    m: Metric,
    sub: Any,
    sub_units: npt.NDArray[np.intp] | None,
    *,
    ci: str,
    confidence: float,
    n_resamples: int,
    free_resamples: int,
    seed: int,
    notes: list[str],
) -> list[dict[str, Any]]:
    """One group's table rows for metric ``m``: value, interval, ``n`` and ``n_tasks``;
    a metric's own notes (:attr:`Metric.stated`) go to ``notes``."""
    n_rows = len(sub)
    every_task = len(np.unique(sub_units)) if sub_units is not None else n_rows
    if m.stated is not None:
        stated = m.stated(sub, confidence)
        iv = stated.interval
        notes.extend(stated.notes)
        return [{
            "metric": m.name, "value": iv.estimate,
            "ci_low": iv.low if ci != "none" else math.nan,
            "ci_high": iv.high if ci != "none" else math.nan,
            "ci_method": _with_note(iv) if ci != "none" else "none",
            "n": iv.n, "n_tasks": iv.n_clusters if iv.n_clusters is not None else every_task,
            "harbor_value": stated.harbor_value,
        }]
    per_row: dict[str, Array] | None = None
    if m.values is not None and (ci != "none" or (m.skip_na and m.exact is None)):
        per_row = m.per_row(sub)
        if len(per_row) == 1:
            per_row = {m.name: next(iter(per_row.values()))}
    values: dict[str, float]
    if m.skip_na and m.exact is None and per_row is not None:
        # NA rows (the key is absent from the trial's evaluation) are left out; no row
        # left: the value is NA.
        values = {}
        for out_name, rows in per_row.items():
            kept = rows[~np.isnan(rows)] if rows.ndim == 1 else rows
            checked = _check_result(m.name, m.reduce(kept)) if kept.size else math.nan
            values[out_name] = checked if isinstance(checked, float) else math.nan
    else:
        value = m.compute(sub)
        values = value if isinstance(value, dict) else {m.name: value}
    bounds: dict[str, tuple[float, float, str]] = {}
    sizes: dict[str, tuple[int, int]] = {}
    estimates: dict[str, float] = {}
    if ci != "none" and per_row is not None:
        for out_name, rows in per_row.items():
            if np.shape(rows)[-1] != n_rows:  # an expression that aggregates
                bounds[out_name] = (math.nan, math.nan, (
                    "none (the metric gives one value, not one per row: give the "
                    "per-row expression, e.g. nw.col('reward'), to get the mean "
                    "with an interval)"))
                continue
            keep = ~np.isnan(rows) if m.skip_na else np.ones(n_rows, dtype=bool)
            units = sub_units[keep] if sub_units is not None else None
            sizes[out_name] = (int(keep.sum()),
                               len(np.unique(units)) if units is not None else int(keep.sum()))
            if not keep.any():
                bounds[out_name] = (math.nan, math.nan, "none (missing: NA)")
                continue
            lo, hi, method, estimate = _interval(
                m, rows[keep], units, confidence=confidence, ci=ci,
                n_resamples=n_resamples, seed=seed,
            )
            bounds[out_name] = (lo, hi, method)
            if estimate is not None:
                estimates[out_name] = estimate
    elif ci != "none" and m.function is not None and m.resample:
        for k, (lo, hi) in _free_interval(
            m, sub, confidence=confidence, n_resamples=free_resamples, seed=seed
        ).items():
            bounds[k] = (lo, hi, "bootstrap-rows")
    if ci == "none" and per_row is not None and _quantile_of(m) is not None:
        from metrickit.compute.intervals import quantile_ci

        for out_name, rows in per_row.items():
            keep = ~np.isnan(rows)
            if np.shape(rows)[-1] == n_rows and keep.any():
                units = sub_units[keep] if sub_units is not None else None
                estimates[out_name] = quantile_ci(rows[keep], _quantile_of(m) or 0.5,
                                                  clusters=units).estimate
    if m.skip_na and per_row is not None:
        for out_name, rows in per_row.items():
            if out_name not in sizes and np.shape(rows)[-1] == n_rows:
                keep = ~np.isnan(rows)
                units = sub_units[keep] if sub_units is not None else None
                sizes[out_name] = (int(keep.sum()), len(np.unique(units))
                                   if units is not None else int(keep.sum()))
    out = []
    for out_name, v in values.items():
        lo, hi, method = bounds.get(out_name, (math.nan, math.nan, "none"))
        n, n_tasks = sizes.get(out_name, (n_rows, every_task))
        harbor = v
        if out_name in estimates:  # the quantile over task means (Harbor's: over trials)
            v = estimates[out_name]
        got = per_row.get(out_name) if per_row is not None else None
        if (m.reduce is _mean and got is not None and sub_units is not None
                and np.shape(got)[-1] == n_rows and math.isfinite(v)):
            # one estimand: the mean over tasks of each task's mean (Harbor's: ``harbor``)
            keep = np.isfinite(got)
            units = sub_units[keep]
            counts = np.bincount(units)
            task_means = np.bincount(units, weights=got[keep])[counts > 0] / counts[counts > 0]
            v = float(task_means.mean())
            if math.isfinite(lo) and not lo <= harbor <= hi:
                method += (" (Harbor's metric, the mean over trials, lies outside the "
                           "interval: tasks have unequal attempts)")
        out.append({
            "metric": _label(m, out_name, len(values)), "value": v, "ci_low": lo,
            "ci_high": hi, "ci_method": method, "n": n, "n_tasks": n_tasks,
            "harbor_value": harbor,
        })
    return out


def _na_notes(frame: Any, groups: Mapping[Any, npt.NDArray[np.intp]]) -> list[str]:
    """Per group and reward key: how many trials have the key NA (absent from their
    evaluation), which every built-in metric leaves out of that key."""
    notes = []
    for key, na in na_rows(frame).items():
        for label, idx in groups.items():
            count = int(na[idx].sum())
            if count and count < len(idx):
                notes.append(
                    f"{label!r}: {count} trial(s) have no {key!r} (missing, NA: their "
                    "evaluation has no such key); the metrics leave them out of that key"
                )
    return notes


def _rank_one(
    table: Any,
    part: Any,
    group_labels: list[Any],
    resampler: Any,
    x: Array,
    *,
    higher_is_better: bool,
    confidence: float,
) -> Any:
    """Rank intervals, ``p_best`` and the tied group of one metric, into ``table``; the
    metric's pairwise table. Groups whose value is NA get no rank and are in no pair."""
    from metrickit.compute.ranking import best_group

    estimate = part["value"].to_numpy(dtype=np.float64)
    known = np.isfinite(estimate)
    ri, pairs = best_group(
        group_labels, estimate, resampler, x, higher_is_better=higher_is_better,
        confidence=confidence,
    )
    rank_low = _nullable_ints(ri.rank_low, known)
    rank_high = _nullable_ints(ri.rank_high, known)
    table.loc[part.index, "rank_low"] = rank_low
    table.loc[part.index, "rank_high"] = rank_high
    table.loc[part.index, "p_best"] = np.where(known, ri.p_best, np.nan)
    table.loc[part.index, "best_group"] = ri.best_group & known
    if not known.all():
        gone = {group_labels[i] for i in np.flatnonzero(~known)}
        pairs = pairs[~(pairs["a"].isin(gone) | pairs["b"].isin(gone))].reset_index(drop=True)
    return pairs


def _nullable_ints(values: Any, known: npt.NDArray[np.bool_]) -> Any:
    """Integers as a nullable pandas array, NA where not ``known``."""
    import pandas as pd

    return pd.array([int(v) if k else pd.NA for v, k in zip(values, known, strict=True)],
                    dtype="Int64")


def _pairing_notes(pairwise: Any) -> list[str]:
    """What the pairwise comparisons paired and left out (tasks only one group ran)."""
    uneven = pairwise[(pairwise["n_only_a"] > 0) | (pairwise["n_only_b"] > 0)]
    if not len(uneven):
        return []
    first = uneven.iloc[0]
    return [
        f"pairwise: {len(uneven)} pair(s) of groups did not run the same tasks; each pair is "
        "compared on the tasks both ran (n_tasks), the others left out (n_only_a, n_only_b; "
        f"e.g. {first['a']!r} vs {first['b']!r}: {int(first['n_tasks'])} paired, "
        f"{int(first['n_only_a'])} and {int(first['n_only_b'])} left out)"
    ]


def _agreement(table: Any, higher: Mapping[str, bool]) -> Any:
    """Kendall's tau between the group rankings of each pair of metrics (over the groups
    both metrics have a value for)."""
    import pandas as pd

    labels = list(dict.fromkeys(table["metric"]))
    pairs_tau = []
    wide = table.pivot(index="group", columns="metric", values="value")
    for i, a in enumerate(labels):
        for b in labels[i + 1 :]:
            x = wide[a].to_numpy(dtype=np.float64) * (1 if higher[a] else -1)
            y = wide[b].to_numpy(dtype=np.float64) * (1 if higher[b] else -1)
            both = np.isfinite(x) & np.isfinite(y)
            x, y = x[both], y[both]
            if len(x) >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
                from scipy.stats import kendalltau  # ~0.75 s: only when a pair has a tau

                result = kendalltau(x, y)
                tau, p = float(result.statistic), float(result.pvalue)
            else:
                tau, p = math.nan, math.nan
            pairs_tau.append(
                {"metric_a": a, "metric_b": b, "kendall_tau": tau, "p_value": p, "n_groups": len(x)}
            )
    return pd.DataFrame.from_records(
        pairs_tau, columns=["metric_a", "metric_b", "kendall_tau", "p_value", "n_groups"]
    )
