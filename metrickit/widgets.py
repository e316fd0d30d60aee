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

from metrickit._core.frame import Policy
from metrickit.compute.ranking import MeanDraws, best_group
from metrickit.compute.stats import group_codes, grouped_intervals, task_codes
from metrickit.errors import MetrickitError
from metrickit.reporting import plots
from metrickit.reporting.plots import grouped_mean_se
from metrickit.scoring.spec import PARTS, SHAPES, RewardSpec

__all__ = ["SpecTuner", "tune_spec"]

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


class _Debouncer:
    """Run ``fn`` once the value stops changing for ``wait`` seconds, unless it is fast.

    ``fn`` runs at once when ``wait == 0``, outside a running event loop (scripts, tests),
    or when ``cost()`` (what its last run took, in ms) is below ``fast_ms``: then the
    debounce would only add delay. Otherwise, inside a running event loop (a Jupyter
    kernel), calls are coalesced with ``loop.call_later``.
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

    def _run(self) -> None:
        self.fn()

    def __call__(self) -> None:
        if self.wait <= 0 or self.cost() < self.fast_ms:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            self._run()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            try:
                loop = asyncio.get_event_loop_policy().get_event_loop()
            except RuntimeError:
                loop = None
            if loop is None or not loop.is_running():
                self._run()
                return
        if self._handle is not None:
            self._handle.cancel()
        assert loop is not None
        self._handle = loop.call_later(self.wait, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._run()


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
        start, self._notes = _starting_spec(spec, self.data)
        self._spec = start
        self._error: str | None = None
        self.ranking: Any = None
        self.timings: dict[str, float] = {}
        self.png: bytes = b""
        self._figure: Any = None
        self._artists: dict[str, Any] = {}
        self._name_regions: list[Any] = []
        self._title_regions: dict[str, Any] = {}
        self._part_cache: dict[tuple[Any, ...], np.ndarray] = {}
        self._ipympl = _uses_ipympl()
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
            layout={"width": "480px"},
        )
        self.widget = widgets.VBox(
            [
                widgets.HBox([controls, widgets.VBox([self.message, self.table])]),
                self.plot,
                widgets.HTML("<b>REWARD_SPEC</b> (paste into metric.py)"),
                self.literal,
            ]
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

        The plot goes out first (what the eye follows while dragging), then the texts.
        ``timings`` holds ``recompute_ms`` (scores and ranking), ``draw_ms`` (the new
        image), ``text_ms`` (verdict, table, literal) and ``update_ms`` (their sum, without
        building a figure anew: what the next slider event costs).
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
        self.ranking = self._rank(scores)
        t1 = time.perf_counter()
        built = self._draw(self.ranking)
        t2 = time.perf_counter()
        self._render_text(spec, self.ranking)
        t3 = time.perf_counter()
        self.timings = {"recompute_ms": (t1 - t0) * 1000, "draw_ms": (t2 - t1) * 1000,
                        "text_ms": (t3 - t2) * 1000, "build_ms": built * 1000}
        self.timings["update_ms"] = (t3 - t0 - built) * 1000

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

    def _rank(self, scores: Mapping[str, np.ndarray]) -> Any:
        import pandas as pd

        d = self.data
        reward = scores["reward"]
        gi = grouped_intervals(d.codes, len(d.groups), reward, clusters=d.units)
        ri, _ = best_group(d.groups, gi.mean, d.draws, reward)
        table = pd.DataFrame(
            {
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
        )
        table["rank"] = table["reward"].rank(ascending=False, method="min").astype(int)
        table = table.sort_values(["rank", "p_best", self.by], ascending=[True, False, True])
        return table.reset_index(drop=True)

    def _show_problem(self, controls: Mapping[str, Any], exc: MetrickitError) -> None:
        """Invalid controls: every part of the view says so, with the sliders' values."""
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
        self.message.value = f"<b>{html.escape(self.verdict)}</b>" + (
            f"<br><small>{html.escape(self.data.note)}</small>" if self.data.note else "")
        shown = table.head(15)[
            [
                self.by,
                "rank",
                "rank_low",
                "rank_high",
                "reward",
                "reward_low",
                "reward_high",
                "p_best",
                "accuracy",
                *[c for c in ("latency_ms", "cost_usd") if c in table],
            ]
        ]
        self.table.value = shown.to_html(
            index=False, float_format=lambda v: f"{v:.4g}", classes="metrickit-ranking", border=0
        )
        literal = _literal(spec.to_dict(), self._notes, None)
        self.literal.value = f"<pre class='metrickit-spec'>{html.escape(literal)}</pre>"

    @property
    def tied(self) -> list[str]:
        """The candidates tied for best (leader first); one name when the best is clear."""
        if self.ranking is None:
            return []
        return [str(g) for g in self.ranking.loc[self.ranking["best_group"], self.by]]

    @property
    def verdict(self) -> str:
        """``"best: a (95 %)"`` or ``"tied: a, b"``: what the current spec ranks first."""
        tied = self.tied
        if len(tied) == 1:
            mean = self.ranking.iloc[0]["reward"]
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

    def _draw(self, table: Any) -> float:
        """Move the artists to ``table``'s ranking and show the figure; the seconds spent
        building a new figure (0 when the existing one was updated)."""
        built = 0.0
        if self._figure is None:
            start = time.perf_counter()
            self._build_figure()
            built = time.perf_counter() - start
        art = self._artists
        rewards = table["reward"].to_numpy(dtype=float)
        low = table["reward_low"].to_numpy(dtype=float)
        high = table["reward_high"].to_numpy(dtype=float)
        in_best = table["best_group"].to_numpy(dtype=bool)
        clear = int(in_best.sum()) == 1
        art["order"] = table["_slot"].to_numpy()
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
            best = int(table["_slot"].iloc[0])
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
    rows[:, 1:].reshape(height, width, 3)[...] = rgba[..., :3]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


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
