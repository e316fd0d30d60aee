"""Seeded generators of large Harbor reward JSONL files for benchmarks, in several shapes.

Shapes (``--shape``; :data:`SHAPES` maps each to its keys):

``mix``
    3 keys, 20 % of object rows miss one key, 10 % ``{}``, 10 % ``null``. Values mix JSON
    integers (0/1) and floats with 3-4 decimals, as real verifiers write.
``latency``
    a pass flag (int), a latency in ms with one decimal (``"speed_ms": 1262.0`` on about
    one row in ten: an integral value written as a float), a cost in dollars and a token
    count; 5 % ``null``.
``wide``
    24 keys per row, floats and ints mixed.
``sparse``
    each row holds 3 of 200 keys.
``long_keys``
    5 keys with 40-60 character names.
``nulls``
    10 % ``null`` lines, 4 keys otherwise present on every row.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

KEYS = ("correctness", "style", "efficiency")
LATENCY_KEYS = ("passed", "speed_ms", "cost_usd", "tokens")
WIDE_KEYS = tuple(f"metric_{i:02d}" for i in range(24))
SPARSE_KEYS = tuple(f"check_{i:03d}" for i in range(200))
LONG_KEYS = tuple(
    f"verifier_{name}_score_normalised_against_reference_solution_v2"[:width]
    for name, width in zip(
        ("correctness", "readability", "efficiency", "robustness", "safety"),
        (40, 45, 50, 55, 60),
        strict=True,
    )
)
NULL_KEYS = ("reward", "accuracy", "f1", "steps")

SHAPES: dict[str, tuple[str, ...]] = {
    "mix": KEYS,
    "latency": LATENCY_KEYS,
    "wide": WIDE_KEYS,
    "sparse": SPARSE_KEYS,
    "long_keys": LONG_KEYS,
    "nulls": NULL_KEYS,
}


def generate(path: Path, n_lines: int, *, seed: int = 0, shape: str = "mix") -> Path:
    rng = np.random.default_rng(seed)
    make = {
        "mix": _mix,
        "latency": _latency,
        "wide": _wide,
        "sparse": _sparse,
        "long_keys": _long_keys,
        "nulls": _nulls,
    }[shape]
    path.write_text("\n".join(make(rng, n_lines)) + "\n")
    return path


def _obj(cells: list[tuple[str, str]]) -> str:
    return "{" + ", ".join(f'"{k}": {v}' for k, v in cells) + "}"


def _mix(rng: np.random.Generator, n: int) -> list[str]:
    kind = rng.random(n)
    miss = rng.integers(0, len(KEYS), n)
    miss_row = rng.random(n) < 0.2
    ints = rng.integers(0, 2, (n, len(KEYS)))
    floats = np.round(rng.random((n, len(KEYS))), 4)
    is_int = rng.random((n, len(KEYS))) < 0.5
    lines = []
    for i in range(n):
        if kind[i] < 0.1:
            lines.append("null")
        elif kind[i] < 0.2:
            lines.append("{}")
        else:
            parts = []
            for j, key in enumerate(KEYS):
                if miss_row[i] and miss[i] == j:
                    continue
                value = str(int(ints[i, j])) if is_int[i, j] else repr(float(floats[i, j]))
                parts.append((key, value))
            lines.append(_obj(parts))
    return lines


def _latency(rng: np.random.Generator, n: int) -> list[str]:
    null = rng.random(n) < 0.05
    passed = rng.integers(0, 2, n)
    speed = np.round(rng.lognormal(7.0, 0.6, n), 1)  # ~1100 ms; ".0" on about 1 row in 10
    cost = np.round(rng.lognormal(-4.0, 1.0, n), 5)
    tokens = rng.integers(100, 20_000, n)
    return [
        "null" if null[i] else _obj([
            ("passed", str(int(passed[i]))),
            ("speed_ms", repr(float(speed[i]))),
            ("cost_usd", repr(float(cost[i]))),
            ("tokens", str(int(tokens[i]))),
        ])
        for i in range(n)
    ]


def _wide(rng: np.random.Generator, n: int) -> list[str]:
    values = np.round(rng.random((n, len(WIDE_KEYS))), 4)
    ints = rng.random((n, len(WIDE_KEYS))) < 0.3
    return [
        _obj([(k, str(int(values[i, j] > 0.5)) if ints[i, j] else repr(float(values[i, j])))
              for j, k in enumerate(WIDE_KEYS)])
        for i in range(n)
    ]


def _sparse(rng: np.random.Generator, n: int) -> list[str]:
    which = rng.integers(0, len(SPARSE_KEYS), (n, 3))
    values = np.round(rng.random((n, 3)), 3)
    lines = []
    for i in range(n):
        keys = sorted(set(which[i].tolist()))
        lines.append(_obj([(SPARSE_KEYS[k], repr(float(values[i, j])))
                           for j, k in enumerate(keys)]))
    return lines


def _long_keys(rng: np.random.Generator, n: int) -> list[str]:
    values = np.round(rng.random((n, len(LONG_KEYS))), 4)
    ints = rng.random((n, len(LONG_KEYS))) < 0.3
    return [
        _obj([(k, str(int(values[i, j] > 0.5)) if ints[i, j] else repr(float(values[i, j])))
              for j, k in enumerate(LONG_KEYS)])
        for i in range(n)
    ]


def _nulls(rng: np.random.Generator, n: int) -> list[str]:
    null = rng.random(n) < 0.1
    values = np.round(rng.random((n, 3)), 4)
    steps = rng.integers(1, 50, n)
    return [
        "null" if null[i] else _obj([
            ("reward", repr(float(values[i, 0]))),
            ("accuracy", repr(float(values[i, 1]))),
            ("f1", repr(float(values[i, 2]))),
            ("steps", str(int(steps[i]))),
        ])
        for i in range(n)
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("-n", "--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape", choices=sorted(SHAPES), default="mix")
    args = parser.parse_args()
    generate(args.output, args.lines, seed=args.seed, shape=args.shape)
