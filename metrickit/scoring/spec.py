"""REWARD_SPEC: trade accuracy against measured speed and cost.

A spec is the dict a scorer file defines at module level (docs/contracts.md, section 3)::

    REWARD_SPEC = {
        "weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1},
        "accuracy": {},                 # or {"reference": 0.1}: accuracy is then an error
        "speed": {"reference": 2000},   # milliseconds
        "cost": {"reference": 0.01},    # US dollars
        "shape": "hyperbolic",          # optional (metrickit's key): "exponential", "linear"
    }

A reference is the value that earns half marks. For a measured value ``x`` and a reference
``r`` the part score is

* ``hyperbolic`` (default): ``r / (r + x)``: 0 → 1, r → 0.5, falling smoothly toward 0;
* ``exponential``: ``2 ** (-x / r)``;
* ``linear``: ``max(0, 1 - x / (2 r))`` (0 from ``2 r`` on).

Without ``accuracy.reference`` accuracy is already a score in [0, 1]; with it, accuracy is an
error (lower is better) turned into a score by the same rule. The composite is the sum of
normalised weight × part score. A latency or cost that was not measured (None, NaN) scores 0.

``"shape"`` is not part of the service's documented spec; it is an optional top-level key that
metrickit adds, applies to all three parts, and omits from :meth:`RewardSpec.to_dict` when it
is the default, so a spec written for the service round-trips unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from metrickit._core.values import describe_value, is_finite_number, is_number
from metrickit.errors import RewardInputError, ScorerError, SpecError
from metrickit.scoring.current import current_measurement, observation, service_cost

__all__ = ["PARTS", "SHAPES", "RewardSpec", "reward"]

PARTS = ("accuracy", "speed", "cost")
SHAPES = ("hyperbolic", "exponential", "linear")
_TOP_KEYS = ("weights", "accuracy", "speed", "cost", "shape")
_UNITS = {"accuracy": "", "speed": " ms", "cost": " USD"}
_MEASURED = {"speed": "latency", "cost": "cost"}

FloatArray = npt.NDArray[np.float64]








def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers, so to_dict() is JSON-ready."""
    return value.item() if isinstance(value, np.generic) else value


def _check_reference(where: str, value: Any, problems: list[str]) -> float | None:
    if not is_finite_number(value) or value <= 0:
        problems.append(f"{where} is {describe_value(value)}; expected a positive finite number")
        return None
    return float(value)


def _check_section(
    spec: Mapping[str, Any], part: str, problems: list[str], *, required: bool
) -> float | None:
    if part not in spec:
        if required:
            problems.append(
                f"missing {part!r}; expected {{'reference': <positive number{_UNITS[part]}>}}"
            )
        return None
    section = spec[part]
    if not isinstance(section, Mapping):
        problems.append(
            f"{part} is {describe_value(section)}; expected a dict like {{'reference': ...}}"
        )
        return None
    unknown = sorted(str(k) for k in section if k != "reference")
    if unknown:
        problems.append(
            f"{part} has unknown key(s) {unknown}; the only key accepted is 'reference'"
        )
    if "reference" not in section:
        if required:
            problems.append(
                f"{part}.reference is missing; expected a positive number{_UNITS[part]} "
                "(the value that earns half marks)"
            )
        return None
    return _check_reference(f"{part}.reference", section["reference"], problems)


def _check_weights(spec: Mapping[str, Any], problems: list[str]) -> dict[str, Any] | None:
    if "weights" not in spec:
        problems.append("missing 'weights'; expected {'accuracy': w, 'speed': w, 'cost': w}")
        return None
    weights = spec["weights"]
    if not isinstance(weights, Mapping):
        problems.append(
            f"weights is {describe_value(weights)}; expected a dict naming accuracy, speed and cost"
        )
        return None
    missing = [p for p in PARTS if p not in weights]
    if missing:
        problems.append(
            f"weights must name accuracy, speed and cost; missing {missing} "
            "(give 0 to leave a part out)"
        )
    unknown = sorted(str(k) for k in weights if k not in PARTS)
    if unknown:
        problems.append(f"weights has unknown name(s) {unknown}; expected accuracy, speed, cost")
    ok = True
    for part in PARTS:
        if part not in weights:
            continue
        value = weights[part]
        if not is_finite_number(value) or value < 0:
            problems.append(
                f"weights.{part} is {describe_value(value)}; expected a finite number ≥ 0"
            )
            ok = False
    if ok and not missing and all(weights[p] == 0 for p in PARTS):
        problems.append("weights are all 0; at least one must be positive")
        ok = False
    if not ok or missing:
        return None
    return {p: _plain(weights[p]) for p in PARTS}


def _shape_scores(shape: str, x: FloatArray, reference: float) -> FloatArray:
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        if shape == "hyperbolic":
            return reference / (reference + x)
        if shape == "exponential":
            return np.exp2(-x / reference)
        return np.maximum(0.0, 1.0 - x / (2.0 * reference))


def _first_bad(mask: npt.NDArray[np.bool_], values: FloatArray, what: str, rule: str) -> str:
    index = int(np.argmax(mask))
    count = int(mask.sum())
    where = f" (row {index}, {count} row(s) in all)" if values.ndim else ""
    return f"{what} is {float(values.flat[index])!r}{where}; {rule}"


@dataclass(frozen=True)
class RewardSpec:
    """A validated REWARD_SPEC. Build it with :meth:`from_dict`.

    Attributes
    ----------
    weights
        Weights of ``accuracy``, ``speed`` and ``cost`` scaled to sum to 1.
    raw_weights
        The weights as given (what :meth:`to_dict` writes back).
    accuracy_reference
        None: accuracy is a score in [0, 1]. A number: accuracy is an error, and this error
        earns half marks.
    speed_reference, cost_reference
        Latency (ms) and cost (USD) that earn half marks.
    shape
        ``"hyperbolic"`` (default), ``"exponential"`` or ``"linear"``.

    Examples
    --------
    >>> import metrickit as mk
    >>> spec = mk.RewardSpec.from_dict({
    ...     "weights": {"accuracy": 7, "speed": 2, "cost": 1},
    ...     "accuracy": {}, "speed": {"reference": 2000}, "cost": {"reference": 0.01}})
    >>> spec.weights
    {'accuracy': 0.7, 'speed': 0.2, 'cost': 0.1}
    >>> spec.part_score("speed", 2000)
    0.5
    """

    weights: dict[str, float] = field(hash=False)
    raw_weights: dict[str, Any] = field(hash=False)
    accuracy_reference: float | None
    speed_reference: float
    cost_reference: float
    shape: str = "hyperbolic"

    def __post_init__(self) -> None:
        # Direct construction gets the same checks as from_dict, and weights always follow
        # raw_weights, so the two can never disagree.
        checked = type(self)._validate(self.to_dict())
        object.__setattr__(self, "weights", checked.weights)

    @classmethod
    def _validate(cls, spec: Any) -> _Checked:
        if isinstance(spec, RewardSpec):
            spec = spec.to_dict()
        if not isinstance(spec, Mapping):
            raise SpecError(
                f"REWARD_SPEC is {describe_value(spec)}; expected a dict with 'weights', "
                "'accuracy', "
                "'speed' and 'cost'"
            )
        problems: list[str] = []
        unknown = sorted(str(k) for k in spec if k not in _TOP_KEYS)
        if unknown:
            problems.append(f"unknown key(s) {unknown}; expected only {list(_TOP_KEYS)}")
        raw = _check_weights(spec, problems)
        accuracy_ref = _check_section(spec, "accuracy", problems, required=False)
        speed_ref = _check_section(spec, "speed", problems, required=True)
        cost_ref = _check_section(spec, "cost", problems, required=True)
        shape = spec.get("shape", "hyperbolic")
        if shape not in SHAPES:
            problems.append(f"shape is {describe_value(shape)}; expected one of {list(SHAPES)}")
        if problems or raw is None or speed_ref is None or cost_ref is None:
            lines = "\n".join(f"  - {p}" for p in problems)
            raise SpecError(
                f"invalid REWARD_SPEC ({len(problems)} problem(s)):\n{lines}", tuple(problems)
            )
        values = [float(raw[p]) for p in PARTS]
        try:
            total = math.fsum(values)
        except OverflowError:  # weights near the float maximum: their ratios still fit
            top = max(values)
            values = [v / top for v in values]
            total = math.fsum(values)
        weights = {p: v / total for p, v in zip(PARTS, values, strict=True)}
        return _Checked(weights, raw, accuracy_ref, speed_ref, cost_ref, str(shape))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | RewardSpec) -> RewardSpec:
        """Validate a REWARD_SPEC dict; every problem is reported, one message each.

        Parameters
        ----------
        d
            ``{"weights": {...}, "accuracy": {...}, "speed": {"reference": ms},
            "cost": {"reference": usd}}`` and optionally ``"shape"``. A RewardSpec is
            returned as is.

        Raises
        ------
        SpecError
            Listing every problem (``.problems`` holds them one by one).
        """
        if isinstance(d, RewardSpec):
            return d
        c = cls._validate(d)
        return cls(
            c.weights,
            c.raw_weights,
            c.accuracy_reference,
            c.speed_reference,
            c.cost_reference,
            c.shape,
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec as a REWARD_SPEC dict; ``RewardSpec.from_dict(spec.to_dict()) == spec``."""
        out: dict[str, Any] = {
            "weights": dict(self.raw_weights),
            "accuracy": {}
            if self.accuracy_reference is None
            else {"reference": self.accuracy_reference},
            "speed": {"reference": self.speed_reference},
            "cost": {"reference": self.cost_reference},
        }
        if self.shape != "hyperbolic":
            out["shape"] = self.shape
        return out

    def replace(self, **changes: Any) -> RewardSpec:
        """A copy with some fields changed, validated like :meth:`from_dict`.

        ``weights`` (raw, any scale), ``accuracy_reference``, ``speed_reference``,
        ``cost_reference`` and ``shape`` can be changed.
        """
        d = self.to_dict()
        for name, value in changes.items():
            if name == "weights":
                d["weights"] = {**d["weights"], **value}
            elif name == "accuracy_reference":
                d["accuracy"] = {} if value is None else {"reference": value}
            elif name in ("speed_reference", "cost_reference"):
                d[name.split("_")[0]] = {"reference": value}
            elif name == "shape":
                d["shape"] = value
            else:
                raise TypeError(f"replace() got an unknown field {name!r}")
        return RewardSpec.from_dict(d)

    def reference(self, part: str) -> float | None:
        """The reference of ``part`` (None for an accuracy that is already a score)."""
        if part == "accuracy":
            return self.accuracy_reference
        if part == "speed":
            return self.speed_reference
        if part == "cost":
            return self.cost_reference
        raise ValueError(f"part is {part!r}; expected one of {list(PARTS)}")

    @overload
    def part_score(self, part: str, x: float | None) -> float: ...
    @overload
    def part_score(self, part: str, x: npt.ArrayLike) -> Any: ...

    def part_score(self, part: str, x: Any) -> Any:
        """Score of one part for a value or an array of values (numpy-vectorised).

        ``speed`` takes latencies in ms, ``cost`` costs in USD; None/NaN (not measured)
        scores 0. ``accuracy`` takes a score in [0, 1] or, with ``accuracy.reference``,
        an error ≥ 0.

        Raises
        ------
        RewardInputError
            A negative measurement or error, an accuracy outside [0, 1], a NaN accuracy.
        """
        reference = self.reference(part)
        arr = np.asarray(np.nan if x is None else x, dtype=np.float64)
        scalar = arr.ndim == 0
        if part == "accuracy":
            nan = np.isnan(arr)
            if nan.any():
                raise RewardInputError(
                    _first_bad(
                        nan,
                        arr,
                        "accuracy",
                        "expected a number (accuracy is the "
                        "scorer's own judgement and cannot be missing)",
                    )
                )
            if reference is None:
                bad = (arr < 0) | (arr > 1)
                if bad.any():
                    raise RewardInputError(
                        _first_bad(
                            bad,
                            arr,
                            "accuracy",
                            "expected a score in [0, 1] (give the spec an accuracy.reference to "
                            "pass an error instead, lower is better)",
                        )
                    )
                out = arr.astype(np.float64, copy=True)
                return float(out) if scalar else out
        negative = arr < 0
        if negative.any():
            what = {"accuracy": "accuracy error", "speed": "latency_ms", "cost": "cost_usd"}[part]
            raise RewardInputError(_first_bad(negative, arr, what, "expected a value ≥ 0"))
        assert reference is not None
        out = _shape_scores(self.shape, arr, reference)
        out = np.where(np.isnan(arr), 0.0, out)
        return float(out) if scalar else out

    def score_arrays(
        self,
        accuracy: npt.ArrayLike,
        latency_ms: npt.ArrayLike | None = None,
        cost_usd: npt.ArrayLike | None = None,
    ) -> dict[str, FloatArray]:
        """Part scores and composite for arrays of values (the core of :meth:`score_frame`).

        Returns
        -------
        dict
            ``accuracy_score``, ``speed_score``, ``cost_score`` and ``reward`` arrays.
        """
        acc = np.atleast_1d(np.asarray(accuracy, dtype=np.float64))
        n = acc.shape[0]
        missing = np.full(n, np.nan)
        lat = missing if latency_ms is None else np.asarray(latency_ms, dtype=np.float64)
        cost = missing if cost_usd is None else np.asarray(cost_usd, dtype=np.float64)
        a = self.part_score("accuracy", acc)
        s = self.part_score("speed", np.broadcast_to(lat, (n,)))
        c = self.part_score("cost", np.broadcast_to(cost, (n,)))
        w = self.weights
        composite = w["accuracy"] * a + w["speed"] * s + w["cost"] * c
        return {"accuracy_score": a, "speed_score": s, "cost_score": c, "reward": composite}

    def score_frame(
        self,
        frame: Any,
        *,
        accuracy: str = "accuracy",
        latency: str | None = "latency_ms",
        cost: str | None = "cost_usd",
    ) -> Any:
        """Add ``accuracy_score``, ``speed_score``, ``cost_score`` and ``reward`` columns.

        Column operations over the whole frame, with the same numbers :func:`reward`
        gives row by row. A null/NaN latency or cost scores 0 in that part.

        Parameters
        ----------
        frame
            A pandas or polars DataFrame (any eager frame narwhals supports); the result
            has the same type and index.
        accuracy, latency, cost
            Column names. ``latency=None`` or ``cost=None``: not measured, the part scores 0.

        Raises
        ------
        RewardInputError
            A column is missing, or holds a value the spec does not accept (the message
            names the first bad row).

        Examples
        --------
        >>> import pandas as pd, metrickit as mk
        >>> spec = mk.RewardSpec.from_dict({"weights": {"accuracy": 1, "speed": 1, "cost": 0},
        ...     "speed": {"reference": 1000}, "cost": {"reference": 0.01}})
        >>> df = pd.DataFrame({"accuracy": [1.0, 0.0], "latency_ms": [1000, None],
        ...                    "cost_usd": [0.01, 0.02]})
        >>> spec.score_frame(df)["reward"].tolist()
        [0.75, 0.0]
        """
        import narwhals as nw

        nf = nw.from_native(frame, eager_only=True)
        columns = list(nf.columns)

        def values(name: str | None, what: str) -> FloatArray | None:
            if name is None:
                return None
            if name not in columns:
                raise RewardInputError(
                    f"{what} column {name!r} is not in the frame; columns are {columns} "
                    f"(pass {what}=<column name>" + ("" if what == "accuracy" else " or None") + ")"
                )
            series = nf.get_column(name)
            if len(series) and series.null_count() == len(series):
                return np.full(len(series), np.nan)  # nothing measured in this column
            boolean_ok = what == "accuracy"  # a correct/incorrect column means 1/0
            if not (series.dtype.is_numeric() or (boolean_ok and series.dtype == nw.Boolean)) or (
                series.dtype == nw.Boolean and not boolean_ok
            ):
                # No silent casting: "1500" in a latency column is a bug upstream.
                values = series.to_list()
                bad = next(
                    (
                        i
                        for i, v in enumerate(values)
                        if v is not None
                        and not (isinstance(v, int | float) and not isinstance(v, bool))
                    ),
                    None,
                )
                where = "" if bad is None else f"; row {bad} holds {values[bad]!r}"
                raise RewardInputError(
                    f"{what} column {name!r} has dtype {series.dtype}{where}; expected a "
                    "numeric column (NaN/null where not measured)"
                )
            return np.asarray(series.cast(nw.Float64).to_numpy(), dtype=np.float64)

        acc = values(accuracy, "accuracy")
        assert acc is not None
        try:
            scores = self.score_arrays(acc, values(latency, "latency"), values(cost, "cost"))
        except RewardInputError as exc:
            raise RewardInputError(
                f"{exc} [frame columns {accuracy!r}/{latency!r}/{cost!r}]"
            ) from None
        namespace = nw.get_native_namespace(nf)
        new = [
            nw.new_series(name, arr, nw.Float64, backend=namespace) for name, arr in scores.items()
        ]
        return nf.with_columns(*new).to_native()


@dataclass(frozen=True)
class _Checked:
    weights: dict[str, float]
    raw_weights: dict[str, Any]
    accuracy_reference: float | None
    speed_reference: float
    cost_reference: float
    shape: str


def reward(
    spec_or_dict: RewardSpec | Mapping[str, Any],
    accuracy: float,
    feedback: str,
    *,
    latency_ms: float | None = None,
    cost_usd: float | None = None,
) -> tuple[float, dict[str, Any]]:
    """A contract-valid ``(score, {"feedback": ..., "scores": {...}})`` from a REWARD_SPEC.

    Parameters
    ----------
    spec_or_dict
        A :class:`RewardSpec` or a REWARD_SPEC dict.
    accuracy
        A score in [0, 1], or an error ≥ 0 when the spec has ``accuracy.reference``.
    feedback
        What the scorer has to say; a note is added for a part that was not measured.
    latency_ms, cost_usd
        Measurements; by default the current case's (:func:`metrickit.observation`,
        :func:`metrickit.service_cost`). Not measured: that part scores 0.

    Returns
    -------
    tuple
        ``(composite, {"feedback": ..., "scores": {"accuracy": a, "speed": s, "cost": c}})``.

    Examples
    --------
    >>> import metrickit as mk
    >>> spec = {"weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1}, "accuracy": {},
    ...         "speed": {"reference": 2000}, "cost": {"reference": 0.01}}
    >>> score, info = mk.reward(spec, 1.0, "Correct.", latency_ms=2000, cost_usd=0.0)
    >>> round(score, 6), info
    (0.9, {'feedback': 'Correct.', 'scores': {'accuracy': 1.0, 'speed': 0.5, 'cost': 1.0}})
    >>> mk.reward(spec, 0.0, "Wrong label.", latency_ms=None, cost_usd=0.01)[1]["feedback"]
    'Wrong label. The latency was not measured, so the speed part scores 0.'
    """
    spec = RewardSpec.from_dict(spec_or_dict)
    if not isinstance(feedback, str):
        raise ScorerError(f"reward(): feedback is {describe_value(feedback)}; expected a string")
    if not is_number(accuracy) and not isinstance(accuracy, bool | np.bool_):
        raise RewardInputError(
            f"reward(): accuracy is {describe_value(accuracy)}; expected a number"
        )
    latency = current_measurement(observation() if latency_ms is None else latency_ms, "latency_ms")
    cost = current_measurement(service_cost() if cost_usd is None else cost_usd, "cost_usd")
    # Scalar checks first, so a bad value is reported without frame row numbers.
    spec.part_score("accuracy", float(accuracy))
    spec.part_score("speed", latency)
    spec.part_score("cost", cost)
    scores = spec.score_arrays(
        [float(accuracy)],
        [np.nan if latency is None else latency],
        [np.nan if cost is None else cost],
    )
    notes = [
        f"The {_MEASURED[part]} was not measured, so the {part} part scores 0."
        for part, value in (("speed", latency), ("cost", cost))
        if value is None
    ]
    text = feedback
    if notes:
        head = feedback.rstrip()
        if head and head[-1] not in ".!?":
            head += "."  # the notes are sentences: "fine. The latency was not measured..."
        text = " ".join([head, *notes]) if head else " ".join(notes)
    parts = {p: float(scores[f"{p}_score"][0]) for p in PARTS}
    return float(scores["reward"][0]), {"feedback": text, "scores": parts}
