"""Seeded generator of a large Harbor reward JSONL file for benchmarks.

Mix (per the issue): 3 keys, 20 % of object rows miss one key, 10 % ``{}``, 10 % ``null``.
Values mix JSON integers (0/1) and floats with 3-4 decimals, as real verifiers write.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

KEYS = ("correctness", "style", "efficiency")


def generate(path: Path, n_lines: int, *, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    kind = rng.random(n_lines)
    miss = rng.integers(0, len(KEYS), n_lines)
    miss_row = rng.random(n_lines) < 0.2
    ints = rng.integers(0, 2, (n_lines, len(KEYS)))
    floats = np.round(rng.random((n_lines, len(KEYS))), 4)
    is_int = rng.random((n_lines, len(KEYS))) < 0.5
    lines = []
    for i in range(n_lines):
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
                parts.append(f'"{key}": {value}')
            lines.append("{" + ", ".join(parts) + "}")
    path.write_text("\n".join(lines) + "\n")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-o", "--output", type=Path, required=True)
    parser.add_argument("-n", "--lines", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    generate(args.output, args.lines, seed=args.seed)
