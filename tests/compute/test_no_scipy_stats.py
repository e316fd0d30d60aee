"""The statistics a report computes load neither ``scipy.stats`` nor ``scipy.optimize``
(``metrickit._core.dist`` and ``power._brentq`` stand in), with the same numbers."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from metrickit.compute import paired, power, ranking
from metrickit.compute.intervals import _order_statistics, mean_ci


def _fresh(code: str) -> str:
    """stdout of ``code`` run in a new interpreter (nothing imported yet)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


def test_statistics_do_not_import_scipy_stats_or_optimize() -> None:
    out = _fresh("""
        import sys
        import numpy as np
        from metrickit.compute import intervals, paired, power, ranking
        rng = np.random.default_rng(0)
        x = rng.integers(0, 2, 60).astype(float)
        intervals.mean_ci(x, clusters=np.repeat(np.arange(20), 3))
        intervals.mean_ci(x[:30], method="wilson")
        intervals.quantile_ci(rng.normal(size=50), 0.5)
        paired.paired_t(rng.normal(size=20))
        paired.mcnemar_exact(x[:30] > 0, x[30:] > 0)
        power.observed_detectable_difference(0.3, 25, 0.05, 0.8)
        ranking._widen(2.5, 12), ranking._t_scale(12)
        print(sorted(m for m in ("scipy.stats", "scipy.optimize", "polars") if m in sys.modules))
    """)
    assert out == "[]"


@pytest.mark.parametrize("xtol", [1e-12, 1e-6])
def test_brentq_is_scipys_step_for_step(xtol: float) -> None:
    rng = np.random.default_rng(1)
    for _ in range(300):
        c, k = rng.normal(), rng.uniform(0.5, 5)

        def f(x: float, c: float = c, k: float = k) -> float:
            return math.tanh(k * (x - c)) + 0.01 * x**3

        assert power._brentq(f, -10.0, 10.0, xtol) == brentq(f, -10.0, 10.0, xtol=xtol)
    for n_tasks in (3, 10, 34, 200):
        def g(x: float, n_tasks: int = n_tasks) -> float:
            return power.power_at(x, 1.0, n_tasks, 0.05) - 0.8

        assert power._brentq(g, 0.0, 8.0, xtol) == brentq(g, 0.0, 8.0, xtol=xtol)


def test_callers_agree_with_scipy_stats() -> None:
    assert ranking._widen(2.5, 12) == pytest.approx(stats.t.isf(stats.norm.sf(2.5), 12),
                                                    rel=1e-12)
    assert ranking._t_scale(12) == pytest.approx(stats.t.ppf(0.975, 12)
                                                 / stats.norm.ppf(0.975), rel=1e-12)
    d = np.random.default_rng(2).normal(0.2, 1, 25)
    _ci, p = paired.paired_t(d)
    assert p == pytest.approx(stats.ttest_1samp(d, 0).pvalue, rel=1e-10)
    assert mean_ci(d).high == pytest.approx(
        stats.t.interval(0.95, 24, loc=d.mean(), scale=stats.sem(d))[1], rel=1e-12)
    lo, hi, attained = _order_statistics(40, 0.5, 0.95)
    assert attained == pytest.approx(stats.binom.cdf(hi - 1, 40, 0.5)
                                     - stats.binom.cdf(lo - 1, 40, 0.5), rel=1e-12)


def test_is_lazy_leaves_polars_unimported() -> None:
    out = _fresh("""
        import sys
        import pandas as pd
        from metrickit._core.frame import is_lazy
        print(is_lazy(pd.DataFrame({"a": [1]})), "polars" in sys.modules)
    """)
    assert out == "False False"
    pl = pytest.importorskip("polars")
    from metrickit._core.frame import is_lazy

    assert is_lazy(pl.DataFrame({"a": [1]}).lazy())
    assert not is_lazy(pl.DataFrame({"a": [1]}))


def test_labels_clear_of_each_other_skip_adjusttext() -> None:
    out = _fresh("""
        import sys
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from metrickit.reporting.plots import _place_labels
        fig, ax = plt.subplots(figsize=(6, 4))
        xs, ys = [0.1, 0.9], [0.1, 0.9]
        ax.scatter(xs, ys, s=20)
        ax.set_xlim(-0.5, 1.5), ax.set_ylim(-0.5, 1.5)
        texts = [ax.text(x + 0.05, y, f"p{i}", gid=str(i)) for i, (x, y) in
                 enumerate(zip(xs, ys))]
        before = [t.get_position() for t in texts]
        kept, arrows = _place_labels(ax, texts, xs, ys, [20, 20])
        print(len(kept), len(arrows), [t.get_position() for t in kept] == before,
              "adjustText" in sys.modules)
    """)
    assert out == "2 0 True False"
