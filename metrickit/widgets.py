"""Live REWARD_SPEC tuning in Jupyter (ipywidgets).

:func:`tune_spec` shows sliders for the three weights, sliders of readable values (1, 1.2,
1.5, 2, 2.5, 3, 4, 5, 6, 7, 8 per power of ten) for the speed and cost references, an
accuracy-reference toggle and a shape menu; every control has the same width. Every change
recomputes the composite reward of every case with the spec's own vectorised scoring
(:meth:`RewardSpec.score_arrays`, the core of :meth:`RewardSpec.score_frame`), ranks the
candidates, redraws the plots and shows the ``REWARD_SPEC`` literal to paste into a
``metric.py``.

The plotting is :mod:`metrickit.reporting.plots`; this module only wires widgets to it.
"""

from __future__ import annotations

import asyncio
import html
import math
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from metrickit._core.display import short_names
from metrickit._core.frame import Policy
from metrickit.compute.ranking import MeanDraws, WeightedBestSet, best_group, weighted_best_set
from metrickit.compute.stats import group_codes, grouped_intervals, task_codes
from metrickit.errors import MetrickitError
from metrickit.reporting import plots
from metrickit.reporting.numbers import share
from metrickit.reporting.plots import grouped_mean_se
from metrickit.scoring.spec import PARTS, SHAPES, RewardSpec

__all__ = ["SpecTuner", "TrialBrowser", "browse", "tune_spec"]

DEFAULT_SPEC: dict[str, Any] = {
    "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
    "accuracy": {},
    "speed": {"reference": 2000},
    "cost": {"reference": 0.01},
}

# The steps of a reference slider within each power of ten: readable values only, so the
# slider shows exactly the number the REWARD_SPEC literal holds.
_MANTISSAS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0)
_CONTROL_STYLE = {"description_width": "190px"}
_CONTROL_WIDTH = "460px"
# The tuner's layout: the controls keep their width (sliders and readouts whole) and the
# verdict with its table takes what is left of the row, or the whole next row when under
# 480 px are left (a ~900-px output area beside the file browser); nothing is wider than
# the output area.
_CONTROLS_LAYOUT = {"flex": "0 0 auto", "width": "480px", "min_width": "480px"}
_RESULT_LAYOUT = {"flex": "1 1 480px", "min_width": "480px", "max_width": "100%"}
_TABLE_LAYOUT = {"max_width": "100%", "overflow": "auto hidden"}
_TOP_LAYOUT = {"display": "flex", "flex_flow": "row wrap", "align_items": "flex-start",
               "width": "100%", "max_width": "100%"}
_IMAGE_LAYOUT = {"width": "auto", "max_width": "100%", "height": "auto", "margin": "0",
                 "object_fit": "contain"}


def _require_widgets() -> Any:
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "metrickit.widgets needs ipywidgets: pip install 'metrickit[widgets]'"
        ) from exc
    return ipywidgets


def _log_range(values: np.ndarray, reference: float) -> tuple[int, int]:
    """Exponent range (base 10) for a log slider covering the data and the reference."""
    finite = values[np.isfinite(values) & (values > 0)]
    low = min(float(finite.min()) if finite.size else reference, reference) / 10
    high = max(float(finite.max()) if finite.size else reference, reference) * 10
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


def _num(value: float) -> str:
    """A number as the literal and the sliders write it: ``2000``, ``0.25``, ``1.5e-05``."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _round2(value: float) -> float:
    """Two significant digits: the precision of a reference taken from the data."""
    return float(f"{value:.2g}")


def _reference_options(values: np.ndarray, *keep: float) -> list[tuple[str, float]]:
    """Slider options: readable values over the data's range (a decade either side), plus
    the values in ``keep`` (the starting and the data's reference) exactly."""
    low, high = _log_range(values, keep[0])
    grid = {m * 10.0**e for e in range(low, high + 1) for m in _MANTISSAS}
    grid = {float(_num(v)) for v in grid if 10.0**low <= v <= 10.0**high}
    return [(_num(v), v) for v in sorted(grid | {float(k) for k in keep})]


def _human(value: float, unit: str) -> str:
    """``360000`` ms as ``6 min``, ``0.32`` USD as ``$0.32``."""
    from metrickit.reporting.plots import unit_for

    shown = unit_for("x_ms" if unit == "ms" else "x_usd", [value])
    if shown.money:
        return shown.format(value)
    return f"{shown(value)[()]:.3g} {shown.label.split('(')[-1].rstrip(')')}"


def _columns(
    nf: Any, accuracy: str, latency: str | None, cost: str | None
) -> tuple[str, str | None, str | None]:
    """The accuracy, latency and cost columns, ``"auto"`` resolved.

    ``accuracy="auto"``: ``accuracy`` when the frame has it, else the trial table's only
    reward key. ``latency="auto"``: ``latency_ms``, else a trial table's ``total_ms``;
    ``cost="auto"``: ``cost_usd``; either is None (not measured) when absent or empty.
    """
    import narwhals as nw

    from metrickit._core.frame import reward_keys
    from metrickit._core.values import KIND_PREFIX

    columns = list(nf.columns)
    if accuracy == "auto":
        if "accuracy" in columns:
            accuracy = "accuracy"
        else:
            keys = [k for k in reward_keys(nf.to_native())
                    if KIND_PREFIX + k not in columns
                    or (nf.get_column(KIND_PREFIX + k).cast(nw.String) != "missing").any()]
            if len(keys) != 1:
                raise MetrickitError(
                    "tune_spec: the frame has no 'accuracy' column and "
                    + (f"{len(keys)} reward columns {keys}" if keys else "no reward column")
                    + f"; pass accuracy= naming the one to score (columns are {columns})"
                )
            accuracy = keys[0]

    def measured(name: str) -> bool:
        if name not in columns:
            return False
        values = nf.get_column(name).cast(nw.Float64).to_numpy()
        return bool(np.isfinite(values).any())

    if latency == "auto":
        latency = next((c for c in ("latency_ms", "total_ms") if measured(c)), None)
    if cost == "auto":
        cost = "cost_usd" if measured("cost_usd") else None
    return accuracy, latency, cost


class _TunerData:
    """The case table as arrays, once: candidate codes, task codes, the three measured
    columns, per-candidate means and the draws that decide ties."""

    def __init__(
        self, frame: Any, *, by: str, accuracy: str, latency: str | None, cost: str | None,
        cluster: str | None, policy: Policy = "0.25",
    ) -> None:
        import narwhals as nw
        import pandas as pd

        from metrickit._core.frame import counted_trials
        from metrickit.reporting.plots import short_labels

        nf = nw.from_native(frame, eager_only=True)
        if by not in nf.columns:
            hint = (" (metrickit's trial readers fill it; for a table of your own pass by= "
                    "naming the column that tells the candidates apart)"
                    if by == "candidate" else "")
            raise MetrickitError(
                f"tune_spec: by={by!r} is not a column of the frame{hint}; columns are "
                f"{list(nf.columns)}"
            )
        accuracy, latency, cost = _columns(nf, accuracy, latency, cost)
        missing = [c for c in (accuracy, latency, cost) if c and c not in nf.columns]
        if missing:
            raise MetrickitError(
                f"tune_spec: column {missing[0]!r} is not in the frame; columns are "
                f"{list(nf.columns)} (pass by=, accuracy=, latency=, cost=)"
            )
        self.accuracy, self.latency, self.cost_column = accuracy, latency, cost
        # The trials that count (running ones never do) are the cases.
        counted = counted_trials(frame, policy=policy)
        self.left_out = counted.notes()
        frame = counted.frame
        nf = nw.from_native(frame, eager_only=True)
        if len(nf) == 0:
            raise MetrickitError(
                "tune_spec: the frame has no rows" + (
                    f" that count ({'; '.join(self.left_out)})" if self.left_out else "")
                + f"; it needs one row per case with a {by!r} column and the accuracy, "
                "latency and cost columns"
            )
        # A case whose accuracy is missing (NA: the key is absent from its evaluation)
        # cannot be scored; it is left out and the message says so, never scored as 0.
        scored = ~np.isnan(nf.get_column(accuracy).cast(nw.Float64).to_numpy())
        self.note = ""
        if not scored.all():
            all_labels = pd.Series(nf.get_column(by).to_numpy(), dtype=object)
            gone = sorted({str(g) for g in all_labels[~scored]} - {
                str(g) for g in all_labels[scored]})
            if not scored.any():
                raise MetrickitError(
                    f"tune_spec: {accuracy!r} is missing (NA) in every row; no case can be "
                    "scored (pass accuracy= a column the candidates have)"
                )
            self.note = f"{int((~scored).sum())} case(s) without {accuracy!r} left out" + (
                f"; no {accuracy!r} at all for {', '.join(gone)}" if gone else "")
            nf = nf[np.flatnonzero(scored)]
            frame = nf.to_native()
        self.note = "; ".join([*self.left_out, *([self.note] if self.note else [])])
        labels = pd.Series(nf.get_column(by).to_numpy(), dtype=object)
        self.codes, groups = group_codes(labels, by)
        self.groups = [str(g) for g in groups]
        self.short = short_labels(self.groups)
        self.n = np.bincount(self.codes, minlength=len(self.groups)).astype(float)
        # Tasks (cases) are the sampling unit: the reward bars' intervals cluster by them,
        # and ties come from the candidates' task-clustered joint sampling distribution.
        self.units, self.cluster = task_codes(frame, cluster)
        self.draws = MeanDraws(self.codes, len(self.groups), self.units, n_draws=500)

        def column(name: str | None) -> np.ndarray | None:
            return None if name is None else nf.get_column(name).cast(nw.Float64).to_numpy()

        acc = column(accuracy)
        assert acc is not None
        self.acc, self.lat, self.cost = acc, column(latency), column(cost)
        self.means = {
            name: self.group_mean(values)
            for name, values in (("accuracy", self.acc), ("latency_ms", self.lat),
                                 ("cost_usd", self.cost))
            if values is not None
        }

    def group_mean(self, values: np.ndarray) -> np.ndarray:
        return grouped_mean_se(self.codes, values, len(self.groups), se=False)[1]

    def median_mean(self, name: str) -> float | None:
        """The median over candidates of their mean ``name`` (None when nothing measured)."""
        means = self.means.get(name)
        finite = means[np.isfinite(means) & (means > 0)] if means is not None else np.array([])
        return _round2(float(np.median(finite))) if finite.size else None

    def plot_frame(self) -> Any:
        import pandas as pd

        data = {"candidate": np.asarray(self.groups, dtype=object)[self.codes],
                "accuracy": self.acc}
        if self.units is not None:
            data["_task"] = self.units
        if self.lat is not None:
            data["latency_ms"] = self.lat
        if self.cost is not None:
            data["cost_usd"] = self.cost
        return pd.DataFrame(data)


def _starting_spec(
    spec: Mapping[str, Any] | RewardSpec | None, data: _TunerData
) -> tuple[RewardSpec, dict[str, str]]:
    """The spec the sliders start from, and a note for each reference taken from the data.

    Without a spec: :data:`DEFAULT_SPEC`'s weights, and speed and cost references at the
    median of the candidates' mean latency and cost (two significant digits), so the
    speed and cost parts separate the candidates whatever the scale of the data.
    """
    if spec is not None:
        return RewardSpec.from_dict(spec), {}
    start = dict(DEFAULT_SPEC)
    notes = {}
    for part, column, what in (("speed", "latency_ms", "latency"), ("cost", "cost_usd", "cost")):
        median = data.median_mean(column)
        if median is not None:
            start[part] = {"reference": median}
            notes[part] = f"median of the candidates' mean {what}"
    return RewardSpec.from_dict(start), notes


def _literal(spec: Mapping[str, Any], notes: Mapping[str, str], problem: str | None) -> str:
    """The REWARD_SPEC to paste, with the numbers exactly as the sliders show them."""

    def section(part: str) -> str:
        values = spec.get(part, {})
        return "{" + ", ".join(f'"{k}": {_num(v)}' for k, v in values.items()) + "}"

    units = {"speed": "ms", "cost": "USD"}
    lines = []
    if problem:
        lines.append(f"# not valid yet: {problem}")
    weights = ", ".join(f'"{k}": {_num(v)}' for k, v in spec["weights"].items())
    lines += ["REWARD_SPEC = {", f'    "weights": {{{weights}}},',
              f'    "accuracy": {section("accuracy")},']
    for part in ("speed", "cost"):
        note = f"  # {units[part]}" + (f"; {notes[part]}" if part in notes else "")
        lines.append(f'    "{part}": {section(part)},{note}')
    if "shape" in spec:
        lines.append(f'    "shape": "{spec["shape"]}",')
    lines.append("}")
    return "\n".join(lines)


#: an update that takes less than this (ms) runs at once on every slider event: it keeps
#: up with a held key's repeat (about 30 per second), and waiting for the drag to pause
#: would cost more than the update
_FAST_MS = 30.0


def _running_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop running this callback (a Jupyter kernel's), or None (a script)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        # the thread's loop if one was set, never a new one: ``policy.get_event_loop()``
        # would create a loop that nobody closes (a ResourceWarning when it is collected)
        local = getattr(asyncio.get_event_loop_policy(), "_local", None)
        loop = getattr(local, "_loop", None)
        return loop if loop is not None and loop.is_running() else None


#: seconds the texts (verdict, table, literal) wait after the plot in a kernel: the page
#: decodes the new image before it lays out a new table, and a drag renders the texts once
_TEXT_DELAY = 0.05


class _Debouncer:
    """Run ``fn`` at once on the first event of a burst, then once more when the burst stops.

    An event that comes after ``wait`` seconds of quiet runs ``fn`` at once (a key press
    or the start of a drag gets its new plot without waiting). Events that come within
    ``wait`` of the last run are coalesced: ``fn`` runs once, ``wait`` seconds after the
    last of them, with the controls' latest values (a drag does not queue an update per
    event). ``fn`` runs at once on every event when ``wait == 0``, outside a running event
    loop (scripts, tests), or when ``cost()`` (what its last run took, in ms) is below
    ``fast_ms``: then it keeps up with the events and waiting would only add delay.
    """

    def __init__(
        self, fn: Callable[[], None], wait: float, *,
        cost: Callable[[], float] = lambda: math.inf, fast_ms: float = _FAST_MS,
    ) -> None:
        self.fn = fn
        self.wait = wait
        self.cost = cost
        self.fast_ms = fast_ms
        self._handle: asyncio.TimerHandle | None = None
        self._last = -math.inf  # time.monotonic() when the last run ended

    def _run(self) -> None:
        try:
            self.fn()
        finally:
            self._last = time.monotonic()

    def __call__(self) -> None:
        if self.wait <= 0 or self.cost() < self.fast_ms:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            self._run()
            return
        loop = _running_loop()
        if loop is None:
            self._run()
            return
        if self._handle is None and time.monotonic() - self._last >= self.wait:
            self._run()  # the first event after a quiet spell: no waiting
            return
        if self._handle is not None:
            self._handle.cancel()
        self._handle = loop.call_later(self.wait, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._run()


def _label_order(labels: Any) -> np.ndarray:
    """Each label's place in the labels' order as the ranking's multi-key sort orders them
    (a constant first key makes pandas take that path: mixed labels such as True and 1
    sort as they did in a table sorted by rank, P(best) and label)."""
    import pandas as pd

    table = pd.DataFrame({"_": np.zeros(len(labels)),
                          "label": pd.Series(list(labels), dtype=object)})
    order = table.sort_values(["_", "label"]).index.to_numpy()
    place = np.empty(len(order), dtype=np.intp)
    place[order] = np.arange(len(order))
    return place


class _Ranked:
    """One update's ranking: numpy columns, best first; the DataFrame only when asked.

    Best first is the reward's rank (1 = highest; equal rewards share the lower rank),
    then the higher P(best), then the label. A slider move draws from the columns; the
    frame (``tuner.ranking``, the texts) is built once per ranking that is looked at.
    """

    def __init__(self, by: str, columns: dict[str, Any], label_order: np.ndarray) -> None:
        reward = np.asarray(columns["reward"], dtype=np.float64)
        r = np.where(np.isnan(reward), -np.inf, reward)
        rank = 1 + (r[None, :] > r[:, None]).sum(axis=1)
        p_best = np.asarray(columns["p_best"], dtype=np.float64)
        self._order = np.lexsort((label_order, -p_best, rank))
        self._unsorted = {**columns, "rank": rank}
        self.columns = {k: np.asarray(v)[self._order]
                        for k, v in self._unsorted.items() if k != by}
        self._frame: Any = None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    def frame(self) -> Any:
        if self._frame is None:
            import pandas as pd

            table = pd.DataFrame(self._unsorted)
            self._frame = table.take(self._order).reset_index(drop=True)
        return self._frame


class SpecTuner:
    """The object :func:`tune_spec` returns; display it (it has ``_ipython_display_``).

    Attributes
    ----------
    widget
        The ipywidgets box.
    spec
        The current REWARD_SPEC as a dict (what to paste into ``metric.py``); while the
        controls are invalid (all weights 0) the last valid one.
    ranking
        The current table: one row per candidate with mean reward (and CI), part scores,
        accuracy, latency, cost and rank, best first.
    """

    def __init__(
        self,
        frame: Any,
        spec: Mapping[str, Any] | RewardSpec | None = None,
        *,
        by: str = "candidate",
        accuracy: str = "auto",
        latency: str | None = "auto",
        cost: str | None = "auto",
        cluster: str | None = "auto",
        policy: Policy = "0.25",
        debounce_ms: float = 60,
    ) -> None:
        self.frame = frame
        self.data = _TunerData(frame, by=by, accuracy=accuracy, latency=latency, cost=cost,
                               cluster=cluster, policy=policy)
        self.by = by
        self.columns = (self.data.accuracy, self.data.latency, self.data.cost_column)
        self.groups, self.cluster = self.data.groups, self.data.cluster
        # each label's place in the labels' sorted order (the ranking's last sort key)
        self._label_order = _label_order(self.groups)
        start, self._notes = _starting_spec(spec, self.data)
        self._spec = start
        self._error: str | None = None
        self._ranked: _Ranked | None = None
        self.timings: dict[str, float] = {}
        self.png: bytes = b""
        self._figure: Any = None
        self._artists: dict[str, Any] = {}
        self._name_regions: list[Any] = []
        self._title_regions: dict[str, Any] = {}
        self._part_cache: dict[tuple[Any, ...], np.ndarray] = {}
        # the part scores the best set's sums were computed for, and those sums
        # (whether made: on the second update with the same parts)
        self._best_parts: tuple[list[np.ndarray], WeightedBestSet | None, bool] | None = (
            None)
        self._text_handle: asyncio.TimerHandle | None = None
        self._pending_text: tuple[RewardSpec, Any] | None = None
        self._ipympl = _uses_ipympl()
        # the table has room for longer names than the plot's ticks: only shared parts go
        self._table_names = short_names(list(self.groups))
        self._build_controls(start)
        self._build_layout()
        self._schedule = _Debouncer(
            self.update, debounce_ms / 1000,
            cost=lambda: self.timings.get("update_ms", math.inf))
        for control in self._controls():
            control.observe(self._changed, names="value")
        self.update()

    # -- view ------------------------------------------------------------------

    def _build_controls(self, start: RewardSpec) -> None:
        """One slider per weight, a slider of readable values per reference, the accuracy
        toggle and the shape menu; all with the same description width and track."""
        widgets = _require_widgets()
        common = {"style": _CONTROL_STYLE, "layout": {"width": _CONTROL_WIDTH}}
        weight = {"min": 0.0, "max": 1.0, "step": 0.05, "continuous_update": True,
                  "readout_format": ".2f", **common}
        w = start.raw_weights
        self.w_accuracy, self.w_speed, self.w_cost = (
            widgets.FloatSlider(value=float(w[part]), description=f"{part} weight", **weight)
            for part in PARTS
        )
        for s in (self.w_accuracy, self.w_speed, self.w_cost):
            s.max = max(1.0, s.value)
        d = self.data
        empty = np.array([])
        self.speed_ref = self._reference_slider(
            "speed reference (ms)", d.lat if d.lat is not None else empty,
            start.speed_reference, self.data.median_mean("latency_ms"), common)
        self.cost_ref = self._reference_slider(
            "cost reference (USD)", d.cost if d.cost is not None else empty,
            start.cost_reference, self.data.median_mean("cost_usd"), common)
        acc_ref = start.accuracy_reference
        self.acc_is_error = widgets.Checkbox(
            value=acc_ref is not None, description="accuracy is an error (lower is better)",
            indent=True, **common,
        )
        errors = d.acc if acc_ref is not None else np.array([0.1])
        self.acc_ref = self._reference_slider(
            "accuracy reference", errors, acc_ref or 0.1, None, common)
        self.acc_ref.disabled = acc_ref is None
        self.shape = widgets.Dropdown(options=list(SHAPES), value=start.shape,
                                      description="shape", **common)
        self.normalised = widgets.HTML()
        self.references = widgets.HTML()
        self.message = widgets.HTML()
        self.message.add_class("metrickit-verdict")
        self.table = widgets.HTML()
        self.literal = widgets.HTML()
        # Inline: an Image widget whose bytes are swapped (trait updates reach the page from
        # any callback, unlike captured Output). With ipympl the canvas widget goes here.
        self.plot = widgets.Box()
        self._image = widgets.Image(format="png")

    @staticmethod
    def _reference_slider(description: str, values: np.ndarray, start: float,
                          from_data: float | None, common: dict[str, Any]) -> Any:
        widgets = _require_widgets()
        keep = [start] if from_data is None else [start, from_data]
        return widgets.SelectionSlider(
            options=_reference_options(values, *keep), value=float(start),
            description=description, continuous_update=True, **common,
        )

    def _controls(self) -> list[Any]:
        return [self.w_accuracy, self.w_speed, self.w_cost, self.speed_ref, self.cost_ref,
                self.acc_is_error, self.acc_ref, self.shape]

    def _build_layout(self) -> None:
        """Controls and the verdict with its table side by side when there is room, one
        above the other when not (the row wraps: a 1,000-px notebook beside JupyterLab's
        file browser); the plot image scales down to the width it is given."""
        widgets = _require_widgets()
        controls = widgets.VBox(
            [
                widgets.HTML("<b>Weights</b>"),
                self.w_accuracy,
                self.w_speed,
                self.w_cost,
                self.normalised,
                widgets.HTML("<b>References (half marks)</b>"),
                self.speed_ref,
                self.cost_ref,
                self.references,
                self.acc_is_error,
                self.acc_ref,
                self.shape,
            ],
            layout=widgets.Layout(**_CONTROLS_LAYOUT),
        )
        self.table.layout = widgets.Layout(**_TABLE_LAYOUT)
        self.message.layout = widgets.Layout(max_width="100%")
        result = widgets.VBox([self.message, self.table], layout=widgets.Layout(**_RESULT_LAYOUT))
        self._image.layout = widgets.Layout(**_IMAGE_LAYOUT)
        self.plot.layout = widgets.Layout(max_width="100%", margin="0")
        self.literal.layout = widgets.Layout(max_width="100%", overflow="auto hidden")
        self.top = widgets.Box([controls, result], layout=widgets.Layout(**_TOP_LAYOUT))
        self.widget = widgets.VBox(
            [
                self.top,
                self.plot,
                widgets.HTML("<b>REWARD_SPEC</b> (paste into metric.py)"),
                self.literal,
            ],
            layout=widgets.Layout(width="100%", max_width="100%"),
        )
        self.widget.add_class("metrickit-tuner")

    # -- state -----------------------------------------------------------------

    @property
    def spec(self) -> dict[str, Any]:
        """The current REWARD_SPEC (the last valid one while the controls are invalid)."""
        return self._spec.to_dict()

    def _controls_spec(self) -> dict[str, Any]:
        """The REWARD_SPEC the controls show, with the numbers they show (weights at the
        sliders' two decimals, references as the sliders' labels)."""
        d: dict[str, Any] = {
            "weights": {part: round(float(s.value), 2) for part, s in
                        zip(PARTS, (self.w_accuracy, self.w_speed, self.w_cost), strict=True)},
            "accuracy": {"reference": float(self.acc_ref.value)} if self.acc_is_error.value
            else {},
            "speed": {"reference": float(self.speed_ref.value)},
            "cost": {"reference": float(self.cost_ref.value)},
        }
        if self.shape.value != "hyperbolic":
            d["shape"] = self.shape.value
        return d

    def _changed(self, change: Mapping[str, Any]) -> None:
        owner: Any = change.get("owner")
        if owner is self.speed_ref:
            self._notes.pop("speed", None)
        if owner is self.cost_ref:
            self._notes.pop("cost", None)
        if owner is self.acc_is_error:
            self.acc_ref.disabled = not self.acc_is_error.value
            self._drop_figure()  # the trade-off's Pareto direction flips: draw it anew
        self._schedule()

    # -- update ----------------------------------------------------------------

    def update(self) -> None:
        """Recompute scores and ranking from the controls, then redraw. Never raises.

        The plot goes out first (what the eye follows while dragging), then the texts: in a
        kernel they follow ``_TEXT_DELAY`` seconds later, once per burst of updates (the
        page shows the new image before it lays out a new table); in a script at once.
        ``timings`` holds ``recompute_ms`` (scores and ranking), ``draw_ms`` (the new
        image), ``text_ms`` (verdict, table, literal: the last time they were rendered)
        and ``update_ms`` (what the next slider event costs: recompute and draw, and the
        texts when they are not deferred; never building a figure anew).
        """
        t0 = time.perf_counter()
        controls = self._controls_spec()
        try:
            spec = RewardSpec.from_dict(controls)
            scores = self._scores(spec)
        except MetrickitError as exc:
            self._show_problem(controls, exc)
            return
        self._error = None
        self._spec = spec
        self._ranked = self._rank(scores)
        t1 = time.perf_counter()
        built = self._draw(self._ranked)
        t2 = time.perf_counter()
        text_ms = self.timings.get("text_ms", 0.0)
        self._pending_text = (spec, self._ranked)
        loop = _running_loop() if self._schedule.wait > 0 else None
        if self._text_handle is not None:
            self._text_handle.cancel()
            self._text_handle = None
        if loop is None:
            self._flush_text()
            text_ms = self.timings["text_ms"]
        else:
            self._text_handle = loop.call_later(_TEXT_DELAY, self._flush_text)
        t3 = time.perf_counter()
        self.timings = {"recompute_ms": (t1 - t0) * 1000, "draw_ms": (t2 - t1) * 1000,
                        "text_ms": text_ms, "build_ms": built * 1000}
        self.timings["update_ms"] = (t3 - t0 - built) * 1000

    def _flush_text(self) -> None:
        """Render the texts of the last update (see :meth:`update`)."""
        self._text_handle = None
        if self._pending_text is None:
            return
        spec, table = self._pending_text
        self._pending_text = None
        start = time.perf_counter()
        self._render_text(spec, table)
        self.timings["text_ms"] = (time.perf_counter() - start) * 1000

    def _scores(self, spec: RewardSpec) -> dict[str, np.ndarray]:
        """:meth:`RewardSpec.score_arrays` of the cases, with each part's scores computed
        once per setting of that part (a weight slider only recombines them).

        The composite is ``w_accuracy * a + w_speed * s + w_cost * c`` in score_arrays'
        order, so the numbers are the same to the last bit.
        """
        d = self.data
        n = d.acc.shape[0]
        parts = []
        for part, values in (("accuracy", d.acc), ("speed", d.lat), ("cost", d.cost)):
            section = spec.to_dict().get(part, {})
            key = (part, spec.shape, tuple(sorted(section.items())))
            if key not in self._part_cache:
                if len(self._part_cache) > 64:
                    self._part_cache.clear()
                x = np.full(n, np.nan) if values is None else values
                self._part_cache[key] = spec.part_score(part, x)
            parts.append(self._part_cache[key])
        a, sp, c = parts
        w = spec.weights
        composite = w["accuracy"] * a + w["speed"] * sp + w["cost"] * c
        return {"accuracy_score": a, "speed_score": sp, "cost_score": c, "reward": composite}

    @property
    def ranking(self) -> Any:
        """The current ranking as a DataFrame, best first (None before the first valid
        update); built when asked for, not on every slider move."""
        return None if self._ranked is None else self._ranked.frame()

    def _rank(self, scores: Mapping[str, np.ndarray]) -> _Ranked:
        d = self.data
        reward = scores["reward"]
        gi = grouped_intervals(d.codes, len(d.groups), reward, clusters=d.units)
        # The best set from the parts' shuffled sums, kept while the parts stay: a weight
        # slider only reweights them (WeightedBestSet). They cost three parts' worth to
        # make, so they are made on the second update with the same parts (a weight
        # move); the first, and each move of a reference or the shape, which changes a
        # part, takes the direct path.
        parts = [scores[f"{part}_score"] for part in PARTS]
        kept = self._best_parts
        best = None
        if kept is None or any(a is not b for a, b in zip(parts, kept[0], strict=True)):
            self._best_parts = (parts, None, False)
        else:
            if not kept[2]:
                kept = self._best_parts = (parts, weighted_best_set(d.draws, parts), True)
            if kept[1] is not None:
                assert self._spec is not None
                best = kept[1]([self._spec.weights[part] for part in PARTS])
        ri, _ = best_group(d.groups, gi.mean, d.draws, reward, pairs=False, best=best)
        columns = {
            self.by: d.groups,
            "reward": gi.mean,
            "reward_low": gi.low,
            "reward_high": gi.high,
            "rank_low": ri.rank_low,
            "rank_high": ri.rank_high,
            "p_best": ri.p_best,
            "best_group": ri.best_group,
            "accuracy_score": d.group_mean(scores["accuracy_score"]),
            "speed_score": d.group_mean(scores["speed_score"]),
            "cost_score": d.group_mean(scores["cost_score"]),
            **d.means,
            "n": d.n.astype(int),
            "_slot": np.arange(len(d.groups)),
        }
        return _Ranked(self.by, columns, self._label_order)

    def _show_problem(self, controls: Mapping[str, Any], exc: MetrickitError) -> None:
        """Invalid controls: every part of the view says so, with the sliders' values."""
        if self._text_handle is not None:  # the last valid ranking's texts: not any more
            self._text_handle.cancel()
            self._text_handle = None
        self._pending_text = None
        self._error = str(exc)
        problems = getattr(exc, "problems", ()) or (str(exc),)
        self.message.value = (
            "<div style='color:#b00020'><b>Cannot score with these settings:</b> "
            f"{html.escape('; '.join(problems))}</div>"
        )
        self.normalised.value = "normalised: <b>none</b> (" + html.escape(problems[0]) + ")"
        literal = _literal(controls, self._notes, "; ".join(problems))
        self.literal.value = f"<pre class='metrickit-spec'>{html.escape(literal)}</pre>"
        if self._artists:
            self._artists["title"].set_text("no ranking: " + problems[0])
            self._show()

    def _render_text(self, spec: RewardSpec, table: Any) -> None:
        import pandas as pd

        w = spec.weights
        self.normalised.value = "normalised: " + ", ".join(
            f"{k} <b>{w[k]:.2f}</b>" for k in PARTS
        )
        refs = []
        for part, unit in (("speed", "ms"), ("cost", "USD")):
            value = spec.reference(part)
            assert value is not None
            note = f" ({self._notes[part]})" if part in self._notes else ""
            refs.append(f"{part}: {_num(value)} {unit} = {_human(value, unit)}{note}")
        self.references.value = "<small>" + html.escape("; ".join(refs)) + "</small>"
        best = table["_slot"][table["best_group"]]
        verdict = self._verdict([self._table_names[i] for i in best])  # the table's names
        self.message.value = f"<b>{html.escape(verdict)}</b>" + (
            f"<br><small>{html.escape(self.data.note)}</small>" if self.data.note else "")
        # one column per idea, so the table fits a laptop's notebook (the whole frame is
        # ``tuner.ranking``): the rank with its interval, the reward with its interval, the
        # short names (shared parts dropped, the model kept; by slot, not by label: True
        # and 1 are two candidates but one dict key)
        head = table.frame().head(15)
        slots = head["_slot"].to_numpy()
        shown = pd.DataFrame({
            self.by: [self._table_names[i] for i in slots],
            "rank": [f"{r}" if lo == hi else f"{r} ({lo}–{hi})" for r, lo, hi in
                     zip(head["rank"], head["rank_low"], head["rank_high"], strict=True)],
            "reward [95% CI]": [f"{v:.3f} [{lo:.3f}, {hi:.3f}]" for v, lo, hi in
                                zip(head["reward"], head["reward_low"], head["reward_high"],
                                    strict=True)],
            "P(best)": [share(v) for v in head["p_best"]],
            "accuracy": [f"{v:.3g}" for v in head["accuracy"]],
            **{c: [f"{v:.4g}" for v in head[c]] for c in ("latency_ms", "cost_usd")
               if c in head},
        })
        self.table.value = shown.to_html(index=False, classes="metrickit-ranking", border=0)
        literal = _literal(spec.to_dict(), self._notes, None)
        self.literal.value = f"<pre class='metrickit-spec'>{html.escape(literal)}</pre>"

    @property
    def tied(self) -> list[str]:
        """The candidates tied for best (leader first); one name when the best is clear."""
        if self._ranked is None:
            return []
        ranked = self._ranked
        return [str(self.groups[i]) for i in ranked["_slot"][ranked["best_group"]]]

    @property
    def verdict(self) -> str:
        """``"best: a (95 %)"`` or ``"tied: a, b"``: what the current spec ranks first."""
        return self._verdict(self.tied)

    def _verdict(self, tied: list[str]) -> str:
        if len(tied) == 1:
            assert self._ranked is not None
            mean = self._ranked["reward"][0]
            return f"best: {tied[0]} (best at 95 %, mean reward {mean:.3f})"
        return "tied: " + ", ".join(tied) + " (no candidate is best at 95 %)"

    def _title(self, width: int) -> str:
        """The verdict with short names, at most ``width`` characters."""
        short = dict(zip(self.data.groups, self.data.short, strict=True))
        tied = [short[g] for g in self.tied]
        if len(tied) == 1:
            return _shorten(f"best: {tied[0]} (95 %)", width)
        text = "tied: " + ", ".join(tied)
        for keep in range(len(tied) - 1, 0, -1):
            if len(text) <= width:
                break
            text = "tied: " + ", ".join(tied[:keep]) + f" and {len(tied) - keep} more"
        return _shorten(text, width)

    # -- drawing ---------------------------------------------------------------

    def _draw(self, table: _Ranked) -> float:
        """Move the artists to ``table``'s ranking and show the figure; the seconds spent
        building a new figure (0 when the existing one was updated)."""
        built = 0.0
        if self._figure is None:
            start = time.perf_counter()
            self._build_figure()
            built = time.perf_counter() - start
        art = self._artists
        rewards = table["reward"].astype(float)
        low = table["reward_low"].astype(float)
        high = table["reward_high"].astype(float)
        in_best = table["best_group"].astype(bool)
        clear = int(in_best.sum()) == 1
        art["order"] = table["_slot"]
        short = np.asarray(self.data.short, dtype=object)[art["order"]]
        # Slot k (from the top) shows the candidate ranked k-th.
        for k, (bar, name) in enumerate(zip(art["bars"], art["names"], strict=True)):
            bar.set_width(rewards[k])
            bar.set_color((plots.BEST if clear else plots.TIED) if in_best[k] else plots.NEUTRAL)
            name.set_text(short[k])
        y = np.arange(len(rewards))
        art["errors"].set_segments(
            [[(lo, yi), (hi, yi)] for lo, hi, yi in zip(low, high, y, strict=True)]
        )
        if "best" in art:
            best = int(table["_slot"][0])
            art["best"].set_offsets(
                [[art["xs"][best], art["ys"][best]]] if clear else np.empty((0, 2))
            )
        art["title"].set_text(self._title(art["title_width"]))
        self._show()
        return built

    def _show(self) -> None:
        fig, art = self._figure, self._artists
        if self._ipympl:
            fig.canvas.draw_idle()  # ipympl redraws in place
            return
        # Inline: the static parts were rendered once; blit the moving artists onto that
        # background and swap a fast-compressed PNG into the Image widget.
        canvas = fig.canvas
        canvas.restore_region(self._background)
        # Names are pre-rendered strips, moved to their slot: drawing 50 texts per frame
        # would cost more than everything else together.
        step = art["slot_step"]
        for k, i in enumerate(art["order"]):
            region = self._name_regions[i]
            x1, y1, _, _ = region.get_extents()
            canvas.restore_region(region, xy=(x1, y1 - round(k * step)))
        # The title takes few values (the verdicts met so far): each is rendered once.
        title = art["title"]
        text = title.get_text()
        if text in self._title_regions:
            canvas.restore_region(self._title_regions[text])
        else:
            title.axes.draw_artist(title)
            if len(self._title_regions) < 256:
                self._title_regions[text] = canvas.copy_from_bbox(art["title_strip"])
        skip = {*map(id, art["names"]), id(title)}
        for artist in art["dynamic"]:
            if id(artist) not in skip:
                artist.axes.draw_artist(artist) if artist.axes else fig.draw_artist(artist)
        self.png = _png(canvas)
        self._image.value = self.png

    def _drop_figure(self) -> None:
        if self._figure is not None and self._ipympl:
            import matplotlib.pyplot as plt

            plt.close(self._figure)
        self._figure = None
        self._artists = {}

    def _build_figure(self) -> None:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        n = len(self.groups)
        height = max(4.2, 0.2 * n + 1.8)
        with plots.style():
            if self._ipympl:
                with plt.ioff():
                    fig = plt.figure(figsize=(12, height), layout="constrained")
                fig.canvas.header_visible = False  # type: ignore[attr-defined]
                self.plot.children = (fig.canvas,)
            else:
                fig = Figure(figsize=(12, height), dpi=80, layout="constrained")
                FigureCanvasAgg(fig)
                self.plot.children = (self._image,)
            trade_ax, bar_ax = fig.subplots(1, 2, width_ratios=[1.3, 1])
            art: dict[str, Any] = {"trade_ax": trade_ax, "bar_ax": bar_ax, "dynamic": []}
            # Bars first: the trade-off places its labels on the final layout.
            self._draw_bars(bar_ax, art)
            if "accuracy" in self.data.means and "latency_ms" in self.data.means:
                self._draw_tradeoff(trade_ax, art)
            else:
                trade_ax.set_axis_off()
            self._freeze(fig, bar_ax, art)
        self._figure = fig
        self._artists = art

    def _draw_tradeoff(self, ax: Any, art: dict[str, Any]) -> None:
        error = bool(self.acc_is_error.value)
        options = plots.TradeoffOptions(
            y="accuracy", by="candidate", cluster="_task" if self.data.units is not None else None,
            color="cost_usd" if self.data.cost is not None else None,
            y_higher_is_better=not error, marker_room=320.0,
        )
        plots.tradeoff(self.data.plot_frame(), ax=ax, options=options)
        if error:
            ax.set_ylabel("accuracy error, lower is better")
        xs, ys = plots.tradeoff_positions(self.data.means, options)
        art["xs"], art["ys"] = xs, ys
        art["best"] = ax.scatter([np.nan], [np.nan], s=320, marker="*", color="gold",
                                 edgecolors="black", zorder=6)
        art["dynamic"].append(art["best"])

    def _draw_bars(self, ax: Any, art: dict[str, Any]) -> None:
        n = len(self.groups)
        y = np.arange(n)
        plots._dress(ax, "x")
        art["bars"] = list(ax.barh(y, np.zeros(n), color=plots.NEUTRAL, height=0.7))
        art["errors"] = ax.hlines(y, 0, 0, color="black", linewidth=1.2, zorder=3)
        # Names are drawn per update in rank order; the ticks hold the longest names only
        # while the layout is computed (see _freeze).
        size = 7.5 if n > 15 else 8.5
        art["names"] = [
            ax.text(-0.015, yi, "", transform=ax.get_yaxis_transform(), ha="right",
                    va="center", fontsize=size)
            for yi in y
        ]
        ax.set_yticks(y, sorted(self.data.short, key=len, reverse=True), fontsize=size)
        ax.tick_params(axis="y", length=0)
        ax.set_ylim(n - 0.5, -0.5)
        ax.set_xlim(0, 1)  # a composite reward is a weighted mean of scores in [0, 1]
        ax.set_xlabel("mean composite reward, 95% CI; best first (gold: tied for best)")
        ax.set_title(" ")
        art["title"] = ax.text(0.0, 1.02, "", transform=ax.transAxes, ha="left",
                               va="bottom", fontsize=11)
        art["dynamic"].extend([*art["bars"], art["errors"], *art["names"], art["title"]])

    def _freeze(self, fig: Any, bar_ax: Any, art: dict[str, Any]) -> None:
        """Lay the figure out once with the names as tick labels, then keep that layout and
        draw the names as their own texts (their order changes with the ranking)."""
        fig.draw_without_rendering()
        fig.set_layout_engine("none")
        renderer = fig.canvas.get_renderer()
        art["names_x0"] = min(t.get_window_extent(renderer).x0
                              for t in bar_ax.get_yticklabels()) - 2
        bar_ax.set_yticklabels([""] * len(self.groups))
        width_px = bar_ax.get_window_extent().width
        art["title_width"] = max(20, int(width_px / (11 * fig.dpi / 72 * 0.6)))
        if not self._ipympl:
            for artist in art["dynamic"]:
                artist.set_animated(True)
            fig.canvas.draw()  # the static parts, without the moving artists
            self._background = fig.canvas.copy_from_bbox(fig.bbox)
            self._title_regions = {}
            from matplotlib.transforms import Bbox

            box = bar_ax.get_window_extent()
            # Everything above the bar axes, from its left edge (where the title starts)
            # to the figure's right edge: only the title moves there.
            art["title_strip"] = Bbox([[box.x0 - 2, box.y1 + 1], [fig.bbox.x1, fig.bbox.y1]])
            self._name_regions = self._render_names(fig, bar_ax, art)

    def _render_names(self, fig: Any, ax: Any, art: dict[str, Any]) -> list[Any]:
        """Each candidate's name rendered once into the strip left of the top bar."""
        from matplotlib.transforms import Bbox

        canvas = fig.canvas
        text = art["names"][0]
        top, next_down = (ax.transData.transform((0, y))[1] for y in (0, 1))
        art["slot_step"] = next_down - top  # display pixels from one slot to the next
        half = abs(art["slot_step"]) / 2
        strip = Bbox([[art["names_x0"], top - half], [ax.get_window_extent().x0 - 1, top + half]])
        regions = []
        for name in self.data.short:
            canvas.restore_region(self._background)
            text.set_text(name)
            ax.draw_artist(text)
            regions.append(canvas.copy_from_bbox(strip))
        canvas.restore_region(self._background)
        return regions

    # -- display ---------------------------------------------------------------

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def figure(self) -> Any:
        """The matplotlib Figure being updated."""
        return self._figure


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _png(canvas: Any) -> bytes:
    """PNG bytes of an Agg canvas's current buffer, made for speed: it changes on every
    slider move.

    The figure is opaque, so the pixels go out as RGB; every row is stored unfiltered and
    the lot compressed with zlib's fastest level. That is a third of the time Pillow's
    adaptive-filter PNG takes for the same size (a plot is mostly flat colour, which
    filtering does not help).
    """
    import struct
    import zlib

    width, height = canvas.get_width_height(physical=True)
    rgba = np.asarray(canvas.buffer_rgba()).reshape(height, width, 4)
    rows = np.empty((height, 1 + 3 * width), dtype=np.uint8)
    rows[:, 0] = 0  # filter type 0 (none) per row
    # one channel at a time: three strided copies take a fifth of the time of copying
    # the (height, width, 3) view of the RGBA buffer in one go
    flat, out = rgba.reshape(height, 4 * width), rows[:, 1:]
    for channel in range(3):
        out[:, channel::3] = flat[:, channel::4]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.data, 1)) + chunk(b"IEND", b""))


def _uses_ipympl() -> bool:
    import matplotlib

    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend.endswith("widget")


def tune_spec(
    frame: Any,
    spec: Mapping[str, Any] | RewardSpec | None = None,
    *,
    by: str = "candidate",
    accuracy: str = "auto",
    latency: str | None = "auto",
    cost: str | None = "auto",
    cluster: str | None = "auto",
    policy: Policy = "0.25",
    debounce_ms: float = 60,
) -> SpecTuner:
    """Sliders for a REWARD_SPEC over a table of candidates, with plots that follow.

    Parameters
    ----------
    frame
        One row per case: a ``by`` column naming the candidate, an accuracy column
        (a score in [0, 1], or an error when the spec has ``accuracy.reference``), and
        measured latency (ms) and cost (USD) columns (NaN where not measured: that part
        scores 0, as the service does). A trial table from any metrickit reader works as
        it is: each trial that counts is a case.
    spec
        Starting REWARD_SPEC (dict or :class:`RewardSpec`). By default the weights of the
        example in ``docs/contracts.md`` (section 3) with speed and cost references taken
        from the data: the median over candidates of their mean latency and cost (two
        significant digits), so the speed and cost parts separate the candidates whether
        they take 300 ms or 20 minutes. The UI and the literal say where each came from.
    by
        The candidate column: ``"candidate"`` (default; every trial reader fills it). A
        frame without it is refused with a message naming ``by=`` and the columns.
    accuracy, latency, cost
        The measured columns. ``"auto"`` (default): ``accuracy`` when the frame has it,
        else a trial table's only reward key; ``latency_ms``, else a trial table's
        ``total_ms``; ``cost_usd``. A latency or cost column that is absent or holds no
        value is not measured (None: that part scores 0). A case whose accuracy is NA (the
        key is absent from its evaluation) is left out and the message says so.
    cluster
        The task (case) column: the reward intervals cluster by it and ties come from
        resampling it. ``"auto"`` takes ``case_id``, ``task_name``, ``task``, ... when
        present; None treats rows as independent.
    policy
        Which trials count (:func:`metrickit._core.frame.counted_trials`): ``"0.25"``
        (default) a finished trial without a valid reward counts as 0, ``"0.26"`` it is
        left out. Running trials never count; the message under the verdict says how
        many were left out. Ties are decided by paired comparisons on the tasks both
        candidates ran (:func:`metrickit.compute.ranking.pairwise_tests`).
    debounce_ms
        Slider events closer together than this are coalesced while dragging.

    Returns
    -------
    SpecTuner
        Display it in a notebook; read ``.spec`` and ``.ranking`` at any time. The
        ``REWARD_SPEC`` literal shows each number exactly as its slider does; with all
        weights at 0 the message, the normalised weights and the literal (marked "not valid
        yet") all show that state. The bars are in rank order, best at the top, gold when
        tied for best; the trade-off's Pareto front minimises accuracy when "accuracy is an
        error" is ticked.
    """
    return SpecTuner(
        frame, spec, by=by, accuracy=accuracy, latency=latency, cost=cost, cluster=cluster,
        policy=policy, debounce_ms=debounce_ms,
    )


# -- the case browser ------------------------------------------------------------------------

#: characters of one file or message shown (the rest is cut, and the cut is said)
BROWSE_CHARS = 20_000
#: files of one trial folder shown at most
_BROWSE_FILES = 16
_BROWSE_CACHE = 64
_TEXT_SUFFIXES = {"", ".txt", ".log", ".json", ".jsonl", ".md", ".out", ".err", ".yaml",
                  ".yml", ".toml", ".py", ".sh", ".diff", ".patch", ".pane", ".cast", ".csv"}
_BROWSE_CSS = (
    "<style>.mk-browse{font-size:13px;max-width:100%}.mk-browse pre{white-space:pre-wrap;"
    "overflow-wrap:anywhere;max-height:28em;overflow:auto;background:#f6f6f6;padding:6px;"
    "margin:2px 0}.mk-browse .mk-sides{display:flex;gap:12px;flex-wrap:wrap}"
    ".mk-browse .mk-side{flex:1 1 420px;min-width:0}.mk-browse table{border-collapse:collapse}"
    ".mk-browse td,.mk-browse th{padding:1px 8px 1px 0;text-align:left;vertical-align:top}"
    ".mk-browse .mk-add{color:#1a7f37}.mk-browse .mk-del{color:#cf222e}"
    ".mk-browse .mk-na{color:#888}</style>"
)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return html.escape(text)
    return (html.escape(text[:limit])
            + f"\n… (cut at {limit:,} of {len(text):,} characters)")


def _read_text(path: Any, limit: int) -> str:
    with open(path, "rb") as f:
        raw = f.read(limit * 4 + 1)
    text = raw.decode("utf-8", errors="replace")
    return text


class _Sources:
    """What a trial's source recorded beyond its row, read on demand and cached."""

    def __init__(self, limit: int) -> None:
        import functools

        self.limit = limit
        self.details = functools.lru_cache(maxsize=_BROWSE_CACHE)(self._details)
        self.reads = 0  # trials whose files were read (the browser reads only those shown)

    def _details(self, fmt: str, trial_dir: str, task: str, attempt: int,
                 trial_name: str) -> dict[str, Any]:
        from pathlib import Path

        self.reads += 1
        if fmt == "inspect":
            return self._inspect(trial_dir, task, attempt, trial_name)
        folder = Path(trial_dir)
        if trial_dir and folder.is_dir():
            return self._folder(folder)
        return {"files": [], "messages": [], "output": None, "feedback": None,
                "where": trial_dir}

    def _folder(self, folder: Any) -> dict[str, Any]:
        files = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder).as_posix()
            if path.suffix.lower() not in _TEXT_SUFFIXES:
                files.append((rel, path.stat().st_size, None))
                continue
            files.append((rel, path.stat().st_size, path))
        # what explains a result first: the exception, the verifier, the agent, the rest
        def order(item: tuple[str, int, Any]) -> tuple[int, str]:
            rel = item[0]
            rank = (0 if rel == "exception.txt" else 1 if rel.startswith("verifier/")
                    else 2 if rel.startswith("agent/") else 3)
            return rank, rel

        files.sort(key=order)
        shown = []
        for rel, size, path in files[:_BROWSE_FILES]:
            text = None if path is None else _read_text(path, self.limit)
            shown.append((rel, size, text))
        output = next((text for rel, _, text in shown
                       if rel in ("verifier/test-stdout.txt", "verifier/stdout.txt")
                       and text is not None), None)
        return {"files": shown, "more_files": max(0, len(files) - _BROWSE_FILES),
                "messages": [], "output": output,
                "output_label": "verifier output" if output is not None else None,
                "feedback": None, "where": str(folder)}

    def _inspect(self, file: str, task: str, attempt: int, uuid: str) -> dict[str, Any]:
        try:
            import inspect_ai.log as log
        except ImportError:
            raise ImportError(
                "browsing an Inspect AI log needs Inspect AI: pip install "
                "'metrickit[inspect]' (inspect-ai)"
            ) from None
        sample = log.read_eval_log_sample(file, id=task, epoch=attempt, uuid=uuid or None)
        messages = [(m.role, m.text or "") for m in sample.messages or []]
        feedback = []
        for name, score in (sample.scores or {}).items():
            parts = [f"{name}: {score.value!r}"]
            if score.answer is not None:
                parts.append(f"answer {score.answer!r}")
            if score.explanation:
                parts.append(str(score.explanation))
            feedback.append(" · ".join(parts))
        output = sample.output.completion if sample.output is not None else None
        return {"files": [], "messages": messages, "output": output, "output_label": "output",
                "feedback": "\n".join(feedback) or None, "where": file,
                "metadata": sample.metadata or None}


class TrialBrowser:
    """Pages through trials and shows what their source recorded (:func:`browse`).

    ``pages`` lists what each page shows (one trial, or one task of a compared pair);
    :meth:`next`, :meth:`prev` and :meth:`go` move; :attr:`html` is the current page;
    :attr:`widget` the ipywidgets box (buttons, position, page). A trial's files (a Harbor
    trial's agent and verifier files, an Inspect sample's messages) are read only when
    its page is shown.
    """

    def __init__(self, df: Any, pages: list[tuple[Any, Any, str]], *, by: str,
                 keys: list[str], labels: tuple[Any, Any] | None, title: str,
                 limit: int) -> None:
        self.frame = df
        self.pages = pages
        self.by = by
        self.keys = keys
        self.labels = labels
        self.title = title
        self.sources = _Sources(limit)
        self.limit = limit
        self.position = 0
        self._widget: Any = None
        self.html = self._render() if pages else self._empty()

    # -- moving --------------------------------------------------------------------------
    def go(self, position: int) -> str:
        """Show page ``position`` (0-based, clipped to the pages); return its HTML."""
        if self.pages:
            self.position = max(0, min(int(position), len(self.pages) - 1))
            self.html = self._render()
        self._sync()
        return self.html

    def next(self) -> str:
        return self.go(self.position + 1)

    def prev(self) -> str:
        return self.go(self.position - 1)

    def __len__(self) -> int:
        return len(self.pages)

    # -- widgets -------------------------------------------------------------------------
    @property
    def widget(self) -> Any:
        if self._widget is None:
            self._widget = self._build()
        return self._widget

    def _build(self) -> Any:
        w = _require_widgets()
        self.prev_button = w.Button(description="◀ prev", layout=w.Layout(width="90px"))
        self.next_button = w.Button(description="next ▶", layout=w.Layout(width="90px"))
        self.at = w.BoundedIntText(value=self.position + 1, min=1, max=max(1, len(self.pages)),
                                   layout=w.Layout(width="90px"))
        self.count = w.HTML(f"of {len(self.pages):,} · {html.escape(self.title)}")
        # no margin: 100 % plus ipywidgets' 2-px margins would overflow its box sideways
        self.page = w.HTML(self.html, layout=w.Layout(width="100%", margin="0"))
        self.prev_button.on_click(lambda _: self.prev())
        self.next_button.on_click(lambda _: self.next())
        self.at.observe(lambda change: self.go(change["new"] - 1)
                        if change["new"] - 1 != self.position else None, names="value")
        bar = w.HBox([self.prev_button, self.at, self.count, self.next_button],
                     layout=w.Layout(flex_flow="row wrap", align_items="center"))
        return w.VBox([bar, self.page], layout=w.Layout(width="100%"))

    def _sync(self) -> None:
        if self._widget is None:
            return
        self.page.value = self.html
        if self.at.value != self.position + 1:
            self.at.value = self.position + 1
        self.prev_button.disabled = self.position == 0
        self.next_button.disabled = self.position >= len(self.pages) - 1

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _repr_html_(self) -> str:
        return self.html

    # -- rendering -----------------------------------------------------------------------
    def _empty(self) -> str:
        return (f"{_BROWSE_CSS}<div class='mk-browse'><b>{html.escape(self.title)}</b>: "
                "nothing to show</div>")

    def _render(self) -> str:
        rows_a, rows_b, heading = self.pages[self.position]
        heading = heading or _heading(self.frame, int(rows_a[0]), self.by)
        head = (f"<div><b>{html.escape(heading)}</b> "
                f"<span class='mk-na'>({self.position + 1:,} of {len(self.pages):,}: "
                f"{html.escape(self.title)})</span></div>")
        if rows_b is None:
            body = "".join(self._trial(int(i)) for i in rows_a)
            return f"{_BROWSE_CSS}<div class='mk-browse'>{head}{body}</div>"
        assert self.labels is not None
        sides = []
        outputs = []
        for label, rows in zip(self.labels, (rows_a, rows_b), strict=True):
            inner = "".join(self._trial(int(i)) for i in rows) or (
                "<p class='mk-na'>no trial of this task</p>")
            sides.append(f"<div class='mk-side'><h4>{html.escape(str(label))}</h4>{inner}</div>")
            first = next((d for d in (self._details(int(i)) for i in rows)
                          if d.get("output") is not None), None)
            outputs.append(first)
        diff = self._diff(*outputs)
        return (f"{_BROWSE_CSS}<div class='mk-browse'>{head}"
                f"<div class='mk-sides'>{''.join(sides)}</div>{diff}</div>")

    def _details(self, i: int) -> dict[str, Any]:
        row = self.frame.iloc[i]
        output = row.get("output") if "output" in self.frame.columns else None
        fmt = str(row.get("format") or "")
        trial_dir = row.get("trial_dir")
        attempt = row.get("attempt")
        found = self.sources.details(
            fmt, "" if _missing(trial_dir) else str(trial_dir), str(row.get("task_name")),
            1 if _missing(attempt) else int(attempt),
            "" if _missing(row.get("trial_name")) else str(row.get("trial_name")))
        if not _missing(output):
            found = {**found, "output": str(output), "output_label": "output"}
        return found

    def _trial(self, i: int) -> str:
        row = self.frame.iloc[i]
        try:
            found = self._details(i)
            problem = ""
        except Exception as exc:  # a file the source lost must not stop the browser
            found = {"files": [], "messages": [], "output": None, "feedback": None}
            problem = (f"<p class='mk-del'>could not read this trial's source: "
                       f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>")
        parts = [f"<hr><div><b>{html.escape(str(row.get(self.by)))}</b> · task "
                 f"<b>{html.escape(str(row.get('task_name')))}</b> · attempt "
                 f"{html.escape(str(row.get('attempt')))} · status "
                 f"{html.escape(str(row.get('_status')))} · run "
                 f"{html.escape(str(row.get('run')))}</div>", problem]
        cells = []
        for key in self.keys:
            v = row.get(key)
            cells.append(f"<td>{html.escape(key)}</td><td>"
                         + ("<span class='mk-na'>NA (not in this evaluation)</span>"
                            if _missing(v) else html.escape(f"{float(v):g}")) + "</td>")
        measured = []
        for column, unit in (("total_ms", "ms"), ("cost_usd", "usd"),
                             ("n_input_tokens", "input tokens"),
                             ("n_output_tokens", "output tokens")):
            v = row.get(column)
            if not _missing(v):
                measured.append(_human(float(v), unit) if unit in ("ms", "usd")
                                else f"{int(v):,} {unit}")
        parts.append("<table><tr>" + "</tr><tr>".join(cells) + "</tr></table>")
        if measured:
            parts.append(f"<div class='mk-na'>{html.escape(' · '.join(measured))}</div>")
        if not _missing(row.get("exception_type")):
            parts.append(f"<div><b>exception</b> {html.escape(str(row['exception_type']))}"
                         f"<pre>{_cut(str(row.get('exception_message') or ''), self.limit)}"
                         "</pre></div>")
        feedback = row.get("feedback") if "feedback" in self.frame.columns else None
        feedback = found.get("feedback") if _missing(feedback) else str(feedback)
        if feedback:
            parts.append(f"<div><b>feedback</b><pre>{_cut(feedback, self.limit)}</pre></div>")
        if found.get("output") is not None:
            parts.append(f"<div><b>{html.escape(found.get('output_label') or 'output')}</b>"
                         f"<pre>{_cut(found['output'], self.limit)}</pre></div>")
        if found.get("messages"):
            shown = "".join(
                f"<div><b>{html.escape(role)}</b><pre>{_cut(text, self.limit)}</pre></div>"
                for role, text in found["messages"])
            parts.append(f"<details><summary>transcript ({len(found['messages'])} messages)"
                         f"</summary>{shown}</details>")
        for rel, size, text in found.get("files", []):
            content = ("<p class='mk-na'>(not text)</p>" if text is None
                       else f"<pre>{_cut(text, self.limit)}</pre>")
            parts.append(f"<details><summary>{html.escape(rel)} ({size:,} bytes)</summary>"
                         f"{content}</details>")
        if found.get("more_files"):
            parts.append(f"<div class='mk-na'>… and {found['more_files']:,} more file(s) in "
                         f"{html.escape(str(found.get('where')))}</div>")
        elif found.get("where") and not found.get("files") and not found.get("messages"):
            parts.append(f"<div class='mk-na'>source: {html.escape(str(found['where']))}</div>")
        return "".join(parts)

    def _diff(self, a: dict[str, Any] | None, b: dict[str, Any] | None) -> str:
        import difflib

        if a is None or b is None:
            return ("<p class='mk-na'>no text diff: " + ("neither side" if a is None and b is None
                    else "one side") + " recorded an output</p>")
        label = a.get("output_label") or "output"
        lines = list(difflib.unified_diff(
            a["output"].splitlines(), b["output"].splitlines(),
            fromfile=str(self.labels[0]) if self.labels else "a",
            tofile=str(self.labels[1]) if self.labels else "b", lineterm="", n=2))
        if not lines:
            return f"<p><b>diff of the {html.escape(label)}s</b>: identical</p>"
        shown = []
        for line in lines[: self.limit // 40]:
            css = ("mk-add" if line.startswith("+") and not line.startswith("+++")
                   else "mk-del" if line.startswith("-") and not line.startswith("---") else "")
            shown.append(f"<span class='{css}'>{html.escape(line)}</span>" if css
                         else html.escape(line))
        return (f"<div><b>diff of the {html.escape(label)}s</b> (first attempt of each)"
                f"<pre>{chr(10).join(shown)}</pre></div>")


def _missing(value: Any) -> bool:
    from metrickit._core.values import is_null

    return is_null(value)


def browse(
    trials: Any,
    *,
    show: str = "all",
    compare: Any = None,
    cell: tuple[Any, Any] | None = None,
    by: str = "candidate",
    value: str | None = None,
    threshold: float = 0.5,
    flips_only: bool = True,
    max_chars: int = BROWSE_CHARS,
) -> TrialBrowser:
    """Page through trials and see what their source recorded.

    For each trial: its rewards (NA where its evaluation has no such key), exception,
    time, cost and tokens, feedback and output (a ``feedback``/``output`` column of the
    table; an Inspect sample's score explanations and completion), and its transcript or
    log: an Inspect sample's messages, a Harbor (or Terminal-Bench) trial folder's files
    (the exception, the verifier's files, the agent's files, then the rest), each cut at
    ``max_chars`` characters. Those are read only when a trial's page is shown (at most
    64 trials are kept), so browsing 10,000 trials costs what the pages shown cost.

    Parameters
    ----------
    trials
        A trial table from any metrickit reader.
    show
        ``"all"`` (default: every trial, in table order) or ``"failures"`` (finished trials
        with an exception, without a valid reward, or with ``value`` below ``threshold``).
    compare
        A :class:`metrickit.RunComparison` (``mk.compare_runs(trials, a, b)``): one page per
        task that flips (one side passes, the other fails; ``flips_only=False``: every
        paired task), the two candidates' trials side by side and a diff of their outputs
        (of the first attempt of each that recorded one; a Harbor trial's verifier output).
    cell
        ``(task, candidate)``: the trials of one heatmap cell
        (:func:`metrickit.plots.task_heatmap`).
    by, value, threshold
        The candidate column; the reward that decides a failure (default the table's only
        reward key) and the pass mark (the one :func:`metrickit.compare_runs` uses).
    max_chars
        Characters of one file, message or output shown.

    Returns
    -------
    TrialBrowser
        Displays as the pager in Jupyter; ``.next()``, ``.prev()``, ``.go(i)``, ``.html``,
        ``.pages``.

    Raises
    ------
    MetrickitError
        An unknown ``show``, a ``by`` that is not a column, a ``cell`` with no trial.

    Examples
    --------
    >>> import metrickit as mk
    >>> trials = mk.examples.load("harbor_jobs")                       # doctest: +SKIP
    >>> mk.widgets.browse(trials, show="failures")                     # doctest: +SKIP
    >>> runs = mk.compare_runs(trials, "terminus-2 · gpt-5", "codex · gpt-5-mini")  # doctest: +SKIP
    >>> mk.widgets.browse(trials, compare=runs)                        # doctest: +SKIP
    """
    import pandas as pd

    from metrickit._core.frame import counted_trials, reward_keys
    from metrickit.compute.tables import as_pandas, require_by, task_labels, value_column

    if show not in ("all", "failures"):
        raise MetrickitError(f"show={show!r}; expected 'all' or 'failures'")
    df = as_pandas(trials).reset_index(drop=True)
    require_by(list(df.columns), by, "browse")
    keys = reward_keys(df)
    everything = np.arange(len(df))
    pages: list[tuple[Any, Any, str]]
    labels = None
    if compare is not None:
        a, b = compare.a, compare.b
        labels = (a, b)
        side_a = (df[by] == a).to_numpy(dtype=bool)
        side_b = (df[by] == b).to_numpy(dtype=bool)
        both = side_a | side_b
        task = "task_name" if "task_name" in df.columns else next(
            c for c in df.columns if c in ("task", "case_id", "sample_id", "doc_id"))
        names = np.array(df[task].astype(object), dtype=object)
        names[both] = task_labels(df[both], task).to_numpy(dtype=object)
        table = compare.tasks if not flips_only else compare.flips
        own_b = table["task_b"] if "task_b" in table.columns else table[task]
        # the trials that count: the ones the comparison compared
        counted = np.zeros(len(df), dtype=bool)
        keep = counted_trials(df[both].reset_index(drop=True)).keep
        counted[np.flatnonzero(both)] = True if keep is None else np.asarray(keep, dtype=bool)
        by_task_a = pd.Series(everything[side_a & counted]).groupby(
            names[side_a & counted]).agg(list)
        by_task_b = pd.Series(everything[side_b & counted]).groupby(
            names[side_b & counted]).agg(list)
        pages = []
        for label, label_b, flip, diff in zip(table[task], own_b, table["flip"],
                                              table["difference"], strict=True):
            what = f"{flip} · " if flip else ""
            pages.append((np.asarray(by_task_a.get(label, []), dtype=np.intp),
                          np.asarray(by_task_b.get(str(label_b).split(", ")[0], []),
                                     dtype=np.intp),
                          f"task {label}: {what}difference {diff:+.3g}"))
        title = (f"{'flips' if flips_only else 'paired tasks'} of {a} vs {b} "
                 f"(value {compare.value!r})")
    elif cell is not None:
        task_value, candidate = cell
        rows = everything[((df["task_name"].astype(str) == str(task_value))
                           & (df[by] == candidate)).to_numpy(dtype=bool)]
        if not rows.size:
            raise MetrickitError(
                f"browse: cell={cell!r} has no trial (task_name {task_value!r}, {by} "
                f"{candidate!r})"
            )
        pages = [(np.asarray([i]), None, f"task {task_value} · {candidate}") for i in rows]
        title = f"the trials of task {task_value} × {candidate}"
    elif show == "failures":
        finished = counted_trials(df)
        running = np.zeros(len(df), dtype=bool) if finished.running is None else np.asarray(
            finished.running, dtype=bool)
        column = value_column(df, value)
        x = pd.to_numeric(df[column]).to_numpy(dtype=np.float64, na_value=np.nan)
        failed = ~running & (
            (df["exception_type"].notna().to_numpy(dtype=bool)
             if "exception_type" in df.columns else False)
            | (~df["reward_valid"].fillna(False).to_numpy(dtype=bool)
               if "reward_valid" in df.columns else False)
            | (x < threshold)
        )
        rows = everything[failed]
        pages = [(np.asarray([i]), None, "") for i in rows]
        title = (f"{len(rows):,} failure(s): an exception, no valid reward, or {column} < "
                 f"{threshold:g}")
    else:
        pages = [(np.asarray([i]), None, "") for i in everything]
        title = f"all {len(df):,} trials"
    return TrialBrowser(df, pages, by=by, keys=keys, labels=labels, title=title,
                        limit=max_chars)


def _heading(df: Any, i: int, by: str) -> str:
    row = df.iloc[i]
    return f"{row.get(by)} · task {row.get('task_name')} · attempt {row.get('attempt')}"
