"""Live REWARD_SPEC tuning in Jupyter (ipywidgets).

:func:`tune_spec` shows sliders for the three weights, log sliders for the speed and
cost references, an accuracy-reference toggle and a shape menu. Every change recomputes
the composite reward of every case with the spec's own vectorised scoring
(:meth:`RewardSpec.score_arrays`, the core of :meth:`RewardSpec.score_frame`), ranks
the candidates, redraws the plots and shows the ``REWARD_SPEC`` literal to paste into a
``metric.py``.

The plotting is :mod:`metrickit.report.plots`; this module only wires widgets to it.
"""

from __future__ import annotations

import asyncio
import html
import math
import pprint
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from metrickit.compute.ranking import MeanDraws, best_group
from metrickit.compute.stats import group_codes, grouped_intervals, task_codes
from metrickit.errors import MetrickitError
from metrickit.report.plots import grouped_mean_se
from metrickit.scoring.spec import RewardSpec

__all__ = ["SpecTuner", "tune_spec"]

DEFAULT_SPEC: dict[str, Any] = {
    "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
    "accuracy": {},
    "speed": {"reference": 2000},
    "cost": {"reference": 0.01},
}


def _require_widgets() -> Any:
    try:
        import ipywidgets
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "metrickit.widgets needs ipywidgets: pip install 'metrickit[widgets]'"
        ) from exc
    return ipywidgets


def _log_range(values: np.ndarray, reference: float) -> tuple[float, float]:
    """Exponent range (base 10) for a log slider covering the data and the reference."""
    finite = values[np.isfinite(values) & (values > 0)]
    low = min(float(finite.min()) if finite.size else reference, reference) / 10
    high = max(float(finite.max()) if finite.size else reference, reference) * 10
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


class _Debouncer:
    """Run ``fn`` once the value stops changing for ``wait`` seconds.

    Inside a running event loop (a Jupyter kernel) calls are coalesced with
    ``loop.call_later``; without one (scripts, tests) or with ``wait == 0`` they run at once.
    """

    def __init__(self, fn: Callable[[], None], wait: float) -> None:
        self.fn = fn
        self.wait = wait
        self._handle: asyncio.TimerHandle | None = None

    def __call__(self) -> None:
        if self.wait <= 0:
            self.fn()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            try:
                loop = asyncio.get_event_loop_policy().get_event_loop()
            except RuntimeError:
                loop = None
            if loop is None or not loop.is_running():
                self.fn()
                return
        if self._handle is not None:
            self._handle.cancel()
        assert loop is not None
        self._handle = loop.call_later(self.wait, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.fn()


class SpecTuner:
    """The object :func:`tune_spec` returns; display it (it has ``_ipython_display_``).

    Attributes
    ----------
    widget
        The ipywidgets box.
    spec
        The current REWARD_SPEC as a dict (what to paste into ``metric.py``).
    ranking
        The current table: one row per candidate with mean reward (and CI), part scores,
        accuracy, latency, cost and rank.
    """

    def __init__(
        self,
        frame: Any,
        spec: Mapping[str, Any] | RewardSpec | None = None,
        *,
        by: str = "candidate",
        accuracy: str = "accuracy",
        latency: str | None = "latency_ms",
        cost: str | None = "cost_usd",
        cluster: str | None = "auto",
        debounce_ms: float = 60,
    ) -> None:
        import narwhals as nw
        import pandas as pd

        widgets = _require_widgets()
        start = RewardSpec.from_dict(spec if spec is not None else DEFAULT_SPEC)
        nf = nw.from_native(frame, eager_only=True)
        missing = [c for c in (by, accuracy, latency, cost) if c and c not in nf.columns]
        if missing:
            raise MetrickitError(
                f"tune_spec: column {missing[0]!r} is not in the frame; columns are "
                f"{list(nf.columns)} (pass by=, accuracy=, latency=, cost=)"
            )
        if len(nf) == 0:
            raise MetrickitError(
                "tune_spec: the frame has no rows; it needs one row per case with a "
                f"{by!r} column and the accuracy, latency and cost columns"
            )
        self.frame = frame
        self.by, self.columns = by, (accuracy, latency, cost)
        labels = pd.Series(nf.get_column(by).to_numpy(), dtype=object)
        self._codes, groups = group_codes(labels, by)
        self.groups = [str(g) for g in groups]
        self._n = np.bincount(self._codes, minlength=len(self.groups)).astype(float)
        # Tasks (cases) are the sampling unit: the reward bars' intervals cluster by them,
        # and ties come from the candidates' task-clustered joint sampling distribution.
        self._units, self.cluster = task_codes(frame, cluster)
        self._draws = MeanDraws(self._codes, len(self.groups), self._units, n_draws=500)
        self._acc = nf.get_column(accuracy).cast(nw.Float64).to_numpy()
        self._lat = nf.get_column(latency).cast(nw.Float64).to_numpy() if latency else None
        self._cost = nf.get_column(cost).cast(nw.Float64).to_numpy() if cost else None
        self._means = {
            name: self._group_mean(values)
            for name, values in (
                ("accuracy", self._acc),
                ("latency_ms", self._lat),
                ("cost_usd", self._cost),
            )
            if values is not None
        }
        self._spec = start
        # A log slider snaps its value (2000 shows as 1995); keep the given references
        # until the user moves a slider, then round to two significant digits.
        self._refs = {
            "speed": start.speed_reference,
            "cost": start.cost_reference,
            "accuracy": start.accuracy_reference or 0.1,
        }
        self._error: str | None = None
        self.ranking: Any = None
        self.timings: dict[str, float] = {}

        w = start.raw_weights
        slider = {
            "min": 0.0,
            "max": 1.0,
            "step": 0.05,
            "continuous_update": True,
            "readout_format": ".2f",
            "style": {"description_width": "initial"},
        }
        self.w_accuracy = widgets.FloatSlider(
            value=float(w["accuracy"]), description="accuracy weight", **slider
        )
        self.w_speed = widgets.FloatSlider(
            value=float(w["speed"]), description="speed weight", **slider
        )
        self.w_cost = widgets.FloatSlider(
            value=float(w["cost"]), description="cost weight", **slider
        )
        for s in (self.w_accuracy, self.w_speed, self.w_cost):
            s.max = max(1.0, s.value)
        lat_lo, lat_hi = _log_range(
            self._lat if self._lat is not None else np.array([]), start.speed_reference
        )
        cost_lo, cost_hi = _log_range(
            self._cost if self._cost is not None else np.array([]), start.cost_reference
        )
        log = {"continuous_update": True, "style": {"description_width": "initial"}}
        self.speed_ref = widgets.FloatLogSlider(
            value=start.speed_reference,
            base=10,
            min=lat_lo,
            max=lat_hi,
            step=0.05,
            readout_format=".4g",
            description="speed reference (ms)",
            **log,
        )
        self.cost_ref = widgets.FloatLogSlider(
            value=start.cost_reference,
            base=10,
            min=cost_lo,
            max=cost_hi,
            step=0.05,
            readout_format=".3g",
            description="cost reference (USD)",
            **log,
        )
        acc_ref = start.accuracy_reference
        self.acc_is_error = widgets.Checkbox(
            value=acc_ref is not None,
            description="accuracy is an error (lower is better)",
            indent=False,
        )
        self.acc_ref = widgets.FloatLogSlider(
            value=acc_ref or 0.1,
            base=10,
            min=-4,
            max=2,
            step=0.05,
            readout_format=".3g",
            description="accuracy reference",
            disabled=acc_ref is None,
            **log,
        )
        self.shape = widgets.Dropdown(
            options=["hyperbolic", "exponential", "linear"], value=start.shape, description="shape"
        )
        self.normalised = widgets.HTML()
        self.message = widgets.HTML()
        self.message.add_class("metrickit-verdict")
        self.table = widgets.HTML()
        self.literal = widgets.HTML()
        # Inline: an Image widget whose bytes are swapped (trait updates reach the page from
        # any callback, unlike captured Output). With ipympl the canvas widget goes here.
        self.plot = widgets.Box()
        self._image = widgets.Image(format="png")
        self._figure: Any = None
        self._artists: dict[str, Any] = {}
        self.png: bytes = b""
        self._ipympl = _uses_ipympl()

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
                self.acc_is_error,
                self.acc_ref,
                self.shape,
            ],
            layout={"width": "420px"},
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
        self._schedule = _Debouncer(self.update, debounce_ms / 1000)
        for control in (
            self.w_accuracy,
            self.w_speed,
            self.w_cost,
            self.speed_ref,
            self.cost_ref,
            self.acc_ref,
            self.shape,
            self.acc_is_error,
        ):
            control.observe(self._changed, names="value")
        self.update()

    # -- state -----------------------------------------------------------------

    @property
    def spec(self) -> dict[str, Any]:
        """The current REWARD_SPEC (the last valid one while the controls are invalid)."""
        return self._spec.to_dict()

    def _group_mean(self, values: np.ndarray) -> np.ndarray:
        return grouped_mean_se(self._codes, values, len(self.groups), se=False)[1]

    def _controls_spec(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "weights": {
                "accuracy": self.w_accuracy.value,
                "speed": self.w_speed.value,
                "cost": self.w_cost.value,
            },
            "accuracy": {"reference": self._refs["accuracy"]} if self.acc_is_error.value else {},
            "speed": {"reference": self._refs["speed"]},
            "cost": {"reference": self._refs["cost"]},
        }
        if self.shape.value != "hyperbolic":
            d["shape"] = self.shape.value
        return d

    def _changed(self, change: Mapping[str, Any]) -> None:
        owner = change.get("owner")
        sliders = {"speed": self.speed_ref, "cost": self.cost_ref, "accuracy": self.acc_ref}
        for part, slider in sliders.items():
            if owner is slider:
                self._refs[part] = float(f"{change['new']:.2g}")
        self.acc_ref.disabled = not self.acc_is_error.value
        self._schedule()

    # -- update ----------------------------------------------------------------

    def update(self) -> None:
        """Recompute scores and ranking from the controls, then redraw. Never raises."""
        import pandas as pd

        t0 = time.perf_counter()
        try:
            spec = RewardSpec.from_dict(self._controls_spec())
        except MetrickitError as exc:
            self._error = str(exc)
            self.message.value = (
                "<div style='color:#b00020'><b>Cannot score with these settings:</b> "
                f"{html.escape(str(exc))}</div>"
            )
            return
        self._error = None
        self._spec = spec
        try:
            scores = spec.score_arrays(self._acc, self._lat, self._cost)
        except MetrickitError as exc:
            self._error = str(exc)
            self.message.value = (
                f"<div style='color:#b00020'><b>Cannot score:</b> {html.escape(str(exc))}</div>"
            )
            return
        reward = scores["reward"]
        gi = grouped_intervals(self._codes, len(self.groups), reward, clusters=self._units)
        ri, _ = best_group(self.groups, gi.mean, self._draws, reward)
        table = pd.DataFrame(
            {
                self.by: self.groups,
                "reward": gi.mean,
                "reward_low": gi.low,
                "reward_high": gi.high,
                "rank_low": ri.rank_low,
                "rank_high": ri.rank_high,
                "p_best": ri.p_best,
                "best_group": ri.best_group,
                "accuracy_score": self._group_mean(scores["accuracy_score"]),
                "speed_score": self._group_mean(scores["speed_score"]),
                "cost_score": self._group_mean(scores["cost_score"]),
                **{k: v for k, v in self._means.items()},
                "n": self._n.astype(int),
            }
        )
        table["rank"] = table["reward"].rank(ascending=False, method="min").astype(int)
        table = table.sort_values(["rank", "p_best", self.by], ascending=[True, False, True])
        table = table.reset_index(drop=True)
        self.ranking = table
        t1 = time.perf_counter()
        self._render_text(spec, table)
        self._draw(table)
        t2 = time.perf_counter()
        self.timings = {"recompute_ms": (t1 - t0) * 1000, "draw_ms": (t2 - t1) * 1000}

    def _render_text(self, spec: RewardSpec, table: Any) -> None:
        w = spec.weights
        self.normalised.value = "normalised: " + ", ".join(
            f"{k} <b>{w[k]:.2f}</b>" for k in ("accuracy", "speed", "cost")
        )
        self.message.value = f"<b>{html.escape(self.verdict)}</b>"
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
        literal = "REWARD_SPEC = " + pprint.pformat(spec.to_dict(), sort_dicts=False, width=72)
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

    def _draw(self, table: Any) -> None:
        if self._figure is None:
            self._build_figure()
        fig, art = self._figure, self._artists
        by_group = table.set_index(self.by).reindex(self.groups)
        rewards = by_group["reward"].to_numpy(dtype=float)
        low = by_group["reward_low"].to_numpy(dtype=float)
        high = by_group["reward_high"].to_numpy(dtype=float)
        in_best = by_group["best_group"].to_numpy(dtype=bool)
        clear = int(in_best.sum()) == 1
        for i, bar in enumerate(art["bars"]):
            bar.set_width(rewards[i])
            bar.set_color(("tab:orange" if clear else "goldenrod") if in_best[i] else "tab:blue")
        y = np.arange(len(self.groups))
        art["errors"].set_segments(
            [[(lo, yi), (hi, yi)] for lo, hi, yi in zip(low, high, y, strict=True)]
        )
        if "best" in art:
            best = int(np.flatnonzero(in_best)[0]) if clear else -1
            art["best"].set_offsets(
                [[self._means["latency_ms"][best], self._means["accuracy"][best]]]
                if clear
                else np.empty((0, 2))
            )
        art["title"].set_text(_shorten(self.verdict.split(" (")[0], 60))
        if self._ipympl:
            fig.canvas.draw_idle()  # ipympl redraws in place
            return
        # Inline: the static parts were rendered once; blit the moving artists onto that
        # background and swap a fast-compressed PNG into the Output widget.
        canvas = fig.canvas
        canvas.restore_region(self._background)
        for artist in art["dynamic"]:
            artist.axes.draw_artist(artist) if artist.axes else fig.draw_artist(artist)
        self.png = _png(canvas)
        self._image.value = self.png

    def _build_figure(self) -> None:
        import matplotlib.pyplot as plt
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from metrickit.report import plots

        height = max(3.8, 0.2 * len(self.groups) + 1.6)
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
        if "accuracy" in self._means and "latency_ms" in self._means:
            plots.tradeoff(
                self._plot_frame(), by=self.by, ax=trade_ax,
                cluster="_task" if self._units is not None else None,
            )
            art["best"] = trade_ax.scatter(
                [np.nan],
                [np.nan],
                s=320,
                marker="*",
                color="gold",
                edgecolors="black",
                zorder=6,
                label="current best",
            )
            trade_ax.legend(loc="lower right", fontsize="small", frameon=False)
            art["dynamic"].append(art["best"])
        y = np.arange(len(self.groups))
        art["bars"] = list(bar_ax.barh(y, np.zeros(len(self.groups)), color="tab:blue"))
        art["dynamic"].extend(art["bars"])
        art["errors"] = bar_ax.hlines(y, 0, 0, color="black", linewidth=1.5, zorder=3)
        art["dynamic"].append(art["errors"])
        bar_ax.set_yticks(y, self.groups, fontsize="small" if len(self.groups) > 15 else None)
        bar_ax.invert_yaxis()
        bar_ax.set_xlim(0, 1)  # a composite reward is a weighted mean of scores in [0, 1]
        bar_ax.set_xlabel("mean composite reward (95% CI; gold: tied for best)")
        bar_ax.grid(axis="x", alpha=0.3)
        bar_ax.set_title(" ")
        art["title"] = bar_ax.text(
            0.5, 1.01, "", transform=bar_ax.transAxes, ha="center", va="bottom", fontsize="large"
        )
        art["dynamic"].append(art["title"])
        if not self._ipympl:
            for artist in art["dynamic"]:
                artist.set_animated(True)
            fig.canvas.draw()  # full render, layout included, without the moving artists
            fig.set_layout_engine("none")  # freeze the layout: later frames only blit
            self._background = fig.canvas.copy_from_bbox(fig.bbox)  # type: ignore[attr-defined]
        self._figure = fig
        self._artists = art

    def _plot_frame(self) -> Any:
        import pandas as pd

        data = {self.by: np.asarray(self.groups, dtype=object)[self._codes], "accuracy": self._acc}
        if self._units is not None:
            data["_task"] = self._units
        if self._lat is not None:
            data["latency_ms"] = self._lat
        if self._cost is not None:
            data["cost_usd"] = self._cost
        return pd.DataFrame(data)

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
    """PNG bytes of an Agg canvas's current buffer (fast compression: it changes often)."""
    import io

    from PIL import Image

    width, height = canvas.get_width_height(physical=True)
    image = Image.frombuffer("RGBA", (width, height), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    out = io.BytesIO()
    image.save(out, format="png", compress_level=1)
    return out.getvalue()


def _uses_ipympl() -> bool:
    import matplotlib

    backend = matplotlib.get_backend().lower()
    return "ipympl" in backend or backend.endswith("widget")


def tune_spec(
    frame: Any,
    spec: Mapping[str, Any] | RewardSpec | None = None,
    *,
    by: str = "candidate",
    accuracy: str = "accuracy",
    latency: str | None = "latency_ms",
    cost: str | None = "cost_usd",
    cluster: str | None = "auto",
    debounce_ms: float = 60,
) -> SpecTuner:
    """Sliders for a REWARD_SPEC over a table of candidates, with plots that follow.

    Parameters
    ----------
    frame
        One row per case: a ``by`` column naming the candidate, an accuracy column
        (a score in [0, 1], or an error when the spec has ``accuracy.reference``), and
        measured latency (ms) and cost (USD) columns (NaN where not measured: that part
        scores 0, as the service does).
    spec
        Starting REWARD_SPEC (dict or :class:`RewardSpec`); by default the example in
        ``docs/contracts.md`` (section 3).
    cluster
        The task (case) column: the reward intervals cluster by it and ties come from
        resampling it. ``"auto"`` takes ``case_id``, ``task_name``, ``task``, ... when
        present; None treats rows as independent.
    debounce_ms
        Slider events closer together than this are coalesced while dragging.

    Returns
    -------
    SpecTuner
        Display it in a notebook; read ``.spec`` and ``.ranking`` at any time.
    """
    return SpecTuner(
        frame, spec, by=by, accuracy=accuracy, latency=latency, cost=cost, cluster=cluster,
        debounce_ms=debounce_ms,
    )
