"""Rater agreement's interval cost grows with the cases, not their square.

    python benchmarks/bench_agreement.py

Times ``mk.agreement(level="ordinal")`` (Krippendorff's alpha with its leave-one-case-out
jackknife) on 3 raters x 5 categories for growing case counts, against the baseline of the
same jackknife computed the direct way (alpha recomputed with each case weighted 0: one pass
over all cases per case, quadratic), on the sizes where that baseline finishes.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

import metrickit as mk
from metrickit.compute.agreement import alpha_resampled


def direct(x: np.ndarray) -> None:
    n = x.shape[0]
    rows = max(1, 4_000_000 // n)
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        w = np.ones((stop - start, n))
        w[np.arange(stop - start), np.arange(start, stop)] = 0.0
        alpha_resampled(x, "ordinal", w)


def main() -> int:
    rng = np.random.default_rng(0)
    warm = pd.DataFrame({f"r{j}": rng.integers(0, 5, 20) for j in range(3)})
    mk.agreement(warm, ["r0", "r1", "r2"], level="ordinal")  # imports, not the work
    direct(warm.to_numpy(float))
    print(f"{'cases':>8} {'agreement s':>12} {'direct s':>10} {'ratio':>7}")
    for n in (1_000, 4_000, 16_000, 100_000):
        truth = rng.integers(0, 5, n)
        frame = pd.DataFrame({f"r{j}": np.clip(truth + rng.integers(-1, 2, n), 0, 4)
                              for j in range(3)})
        start = time.perf_counter()
        mk.agreement(frame, ["r0", "r1", "r2"], level="ordinal")
        fast = time.perf_counter() - start
        if n <= 16_000:
            start = time.perf_counter()
            direct(frame.to_numpy(float))
            slow = time.perf_counter() - start
            print(f"{n:>8,} {fast:>12.3f} {slow:>10.3f} {slow / fast:>6.1f}x")
        else:
            print(f"{n:>8,} {fast:>12.3f} {'-':>10} {'-':>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
