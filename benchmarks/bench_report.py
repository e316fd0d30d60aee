"""The report and the task heatmap: time and peak memory as the tasks grow, and
``metrickit report`` on the example job against ``metrickit summarize`` on the same job.

    python benchmarks/bench_report.py [--tasks 1000,10000,100000] [--repeat 3] [--json]
    python benchmarks/bench_report.py --quick       # the example job and 1,000 tasks only

Every measurement runs in a fresh process (``ru_maxrss`` is that process's peak, imports and
the generated table included). The trial tables have 4 candidates and 2 attempts per task
(8 trials a task: 800,000 trials at 100,000 tasks). The heatmap draws at most
``plots.HEATMAP_ROWS`` rows whatever the number of tasks, so its time and memory should stay
roughly flat beyond that; its baseline is the one-row-per-task heatmap the report drew
before (only at the smallest size: at 10,000 tasks it takes minutes and gigabytes).

The example job's report is timed as a user meets it: ``metrickit report
data/harbor_jobs/2025-07-14__09-00-00 --spec data/harbor_jobs_spec.py`` in a new process,
the best of ``--repeat`` runs; the baseline is ``metrickit summarize`` on the same job in
the same run (it reads the job and prints its per-candidate statistics, without plots).
The command draws its figures in a second process forked at its start
(``metrickit.reporting.painter``), which imports matplotlib and draws while the first reads
and computes; a second row sets it against the same command with ``METRICKIT_NO_FORK=1``,
everything in one process, the two taking turns run by run.

Where that time goes: the same command, drawing in its own process (so that no phase
overlaps another), run in a fresh process with each phase timed (the best of ``--repeat``
such runs). ``imports`` is every module loaded during the command,
wherever the import happens (a lazy import inside a statistic counts here, not under
statistics); ``load`` reads the job, ``statistics`` is every number of the report,
``plots`` builds and renders the two figures (PNG), ``HTML`` renders the template (with the
heatmap, an HTML table of coloured cells); the interpreter's own start is measured apart
(``python -c pass``). Each phase is given in wall time and in CPU time (steadier when other
processes share the machine). Baselines measured in the same run: the whole report against
``python -c "import numpy, pandas, matplotlib"``; its imports against those it cannot avoid
(``import numpy, pandas, scipy.special, jinja2`` and matplotlib's Figure with the Agg
canvas, which is how the report draws: pyplot is never imported) and against those of a
pyplot report
(``import numpy, pandas, matplotlib.pyplot``); and ``import scipy.stats`` against
``import scipy.special`` (what a report pays while a module it runs imports
``scipy.stats``; ``metrickit._core.dist`` gives the distributions the report needs from
``scipy.special`` alone).

The children run with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` is dropped
from their environment, and a first run writes the cache): an installed package has its
``.pyc`` files, and compiling metrickit's modules on every run would add about 0.2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _bench import machine, peak_rss_mb, row, run_child

ROOT = Path(__file__).resolve().parents[1]
JOB = ROOT / "data" / "harbor_jobs" / "2025-07-14__09-00-00"
SPEC = ROOT / "data" / "harbor_jobs_spec.py"
NO_FORK = "METRICKIT_NO_FORK"  # metrickit.reporting.painter.NO_FORK


def _serial_env() -> dict[str, str]:
    """This environment with the report's drawing kept in its own process."""
    return {**os.environ, NO_FORK: "1"}


CANDIDATES = 4
ATTEMPTS = 2


def _trials(n_tasks: int):  # type: ignore[no-untyped-def]
    """A trial table of ``n_tasks`` tasks, 4 candidates of different skill, 2 attempts."""
    import numpy as np
    import pandas as pd

    import metrickit as mk

    rng = np.random.default_rng(0)
    skill = np.linspace(0.35, 0.75, CANDIDATES)
    hard = rng.uniform(-0.4, 0.4, n_tasks)
    p = np.clip(skill[None, :, None] - hard[:, None, None], 0, 1)
    ok = (rng.random((n_tasks, CANDIDATES, ATTEMPTS)) < p).astype(int).ravel()
    n = ok.size
    df = pd.DataFrame({
        "task": np.repeat(np.array([f"task-{i:06d}" for i in range(n_tasks)], dtype=object),
                          CANDIDATES * ATTEMPTS),
        "who": np.tile(np.repeat(np.array([f"model-{j}" for j in range(CANDIDATES)],
                                          dtype=object), ATTEMPTS), n_tasks),
        "reward": ok,
        "ms": rng.gamma(2.0, 30_000.0, n),
        "usd": rng.gamma(2.0, 0.02, n),
    })
    return mk.trials_from_frame(df, task="task", candidate="who", reward="reward",
                                latency_ms="ms", cost_usd="usd")


def _child(kind: str, n_tasks: int) -> None:
    """One measurement in this process; prints one JSON line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from metrickit.reporting import plots
    from metrickit.reporting.html import report

    trials = _trials(n_tasks)
    start = time.perf_counter()
    if kind == "report":
        with tempfile.TemporaryDirectory() as folder:
            report(trials, Path(folder) / "r.html")
    else:
        ax = plots.task_heatmap(trials, max_rows=10**9 if kind == "unbounded" else
                                plots.HEATMAP_ROWS)
        ax.figure.savefig(Path(tempfile.gettempdir()) / "bench_heatmap.png", dpi=100)
        plt.close(ax.figure)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mb": peak_rss_mb()}))


class _Clock:
    """Wall time by phase: the innermost phase running is charged, and time inside an
    ``import`` statement (at its outermost level) is charged to ``imports``."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self.cpu: dict[str, float] = {}  # the same by CPU time: steadier on a busy machine
        self.stack = ["other"]
        self.mark = time.perf_counter()
        self.cpu_mark = time.process_time()
        self.depth = 0

    def _charge(self, phase: str) -> None:
        now, cpu = time.perf_counter(), time.process_time()
        self.spent[phase] = self.spent.get(phase, 0.0) + now - self.mark
        self.cpu[phase] = self.cpu.get(phase, 0.0) + cpu - self.cpu_mark
        self.mark, self.cpu_mark = now, cpu

    def push(self, phase: str) -> None:
        self._charge(self.stack[-1])
        self.stack.append(phase)

    def pop(self) -> None:
        self._charge(self.stack.pop())

    def timed(self, phase: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.push(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                self.pop()

        return wrapper

    def hook_imports(self) -> None:
        import builtins

        original = builtins.__import__

        def timed_import(*args: Any, **kwargs: Any) -> Any:
            if self.depth == 0:
                self.push("imports")
            self.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.pop()

        builtins.__import__ = timed_import


PHASES = ("imports", "load", "statistics", "plots", "HTML", "other")


def _split_child() -> None:
    """``metrickit report`` on the example job in this process, timed by phase; prints one
    JSON line ``{phase: seconds}``."""
    clock = _Clock()
    clock.hook_imports()
    with tempfile.TemporaryDirectory() as folder:
        import jinja2

        from metrickit import cli  # an import: charged to imports
        from metrickit.reporting import html, plots

        html.load_sources = clock.timed("load", html.load_sources)
        html.build_sections = clock.timed("statistics", html.build_sections)
        for name in ("candidate_bars", "tradeoff", "task_heatmap"):
            setattr(plots, name, clock.timed("plots", getattr(plots, name)))
        html._png = clock.timed("plots", html._png)  # savefig: drawing and PNG encoding
        html._environment = clock.timed("HTML", html._environment)
        jinja2.Template.render = clock.timed("HTML", jinja2.Template.render)  # type: ignore[method-assign]
        clock.push("other")
        code = cli.main(["report", str(JOB), "--spec", str(SPEC),
                         "-o", str(Path(folder) / "report.html")])
        clock.pop()
    assert code == 0
    print(json.dumps({**{p: clock.spent.get(p, 0.0) for p in PHASES},
                      **{f"{p} cpu": clock.cpu.get(p, 0.0) for p in PHASES}}))


def _split(repeat: int) -> dict[str, float]:
    """The phases of the run whose total is the smallest of ``repeat`` fresh processes
    (drawing in their own process: a phase in a second process would overlap the others)."""
    me = str(Path(__file__).resolve())
    runs = [run_child([me, "--child", "split", "0"], env=_serial_env()) for _ in range(repeat)]
    return min(runs, key=lambda r: sum(r.values()))


def _wall(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    """The best wall time of ``argv`` in a new process over ``repeat`` runs."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, env=env)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="1000,10000,100000",
                        help="task counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of the example job's report (the best is kept)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="the example job and 1,000 tasks only (a smoke run)")
    parser.add_argument("--child", nargs=2, metavar=("KIND", "TASKS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "split":
            _split_child()
        else:
            _child(args.child[0], int(args.child[1]))
        return
    sizes = [1000] if args.quick else [int(x) for x in args.tasks.split(",") if x]
    me = str(Path(__file__).resolve())
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the children, as an installed package
    rows = []
    bin_dir = Path(sys.executable).parent
    python = [sys.executable, "-c"]
    with tempfile.TemporaryDirectory() as folder:
        command = [str(bin_dir / "metrickit"), "report", str(JOB), "--spec", str(SPEC),
                   "-o", str(Path(folder) / "report.html")]
        _wall(command, 1)  # writes the bytecode cache
        # taking turns with the same command drawing in its own process (the baseline):
        # the machine's drift over the runs falls on both
        report_s = serial_s = float("inf")
        for _ in range(args.repeat):
            report_s = min(report_s, _wall(command, 1))
            serial_s = min(serial_s, _wall(command, 1, env=_serial_env()))
        summarize_s = _wall([str(bin_dir / "metrickit"), "summarize", str(JOB)], args.repeat)
        bare_s = _wall([*python, "import numpy, pandas, matplotlib"], args.repeat)
    rows.append(row("metrickit report on the example job"
                    " (960 trials, 6 candidates, 2 plots, 1 heatmap table)",
                    report_s, "metrickit summarize on the same job", summarize_s,
                    note=f"best of {args.repeat}, new process each"))
    rows.append(row("metrickit report, figures drawn in a second process (the command's way)",
                    report_s, f"the same, drawn in its own process ({NO_FORK}=1)", serial_s,
                    note="runs taking turns"))
    rows.append(row("metrickit report on the example job, against the bare imports",
                    report_s, 'python -c "import numpy, pandas, matplotlib"', bare_s,
                    note="the same runs"))
    start_s = _wall([*python, "pass"], args.repeat)
    floor_s = _wall([*python, "import numpy, pandas, matplotlib; matplotlib.use('Agg'); "
                     "import matplotlib.pyplot"], args.repeat)
    needed_s = _wall([*python, "import numpy, pandas, scipy.special, jinja2, matplotlib.figure, "
                      "matplotlib.backends.backend_agg"], args.repeat)
    special_s = _wall([*python, "import numpy, scipy.special"], args.repeat)
    stats_s = _wall([*python, "import numpy, scipy.stats"], args.repeat)
    split = _split(args.repeat)
    rows.append(row("  report: interpreter start (python -c pass)", start_s, "", float("nan")))
    rows.append(row("  report: imports (every module the command loads)", split["imports"],
                    "numpy, pandas, scipy.special, jinja2, Figure + Agg", needed_s - start_s,
                    note=f"CPU {split['imports cpu']:.2f} s; interpreter start taken out of "
                    "the baselines"))
    rows.append(row("  report: imports", split["imports"],
                    "import numpy, pandas, matplotlib.pyplot", floor_s - start_s,
                    note="what a pyplot report pays"))
    for phase, what in (("load", "read the job"), ("statistics", "every number"),
                        ("plots", "2 figures drawn and PNG-encoded; the heatmap table is HTML"),
                        ("HTML", "the template"), ("other", "arguments, spec file, writing")):
        rows.append(row(f"  report: {phase} ({what})", split[phase], "", float("nan"),
                        note=f"CPU {split[phase + ' cpu']:.2f} s"))
    rows.append(row("import scipy.special (what metrickit._core.dist needs)", special_s,
                    "import scipy.stats", stats_s, note="numpy imported in both"))
    smallest = min(sizes) if sizes else 0
    for n in sizes:
        heat = run_child([me, "--child", "heatmap", str(n)])
        if n == smallest:
            before = run_child([me, "--child", "unbounded", str(n)])
            rows.append(row(f"task_heatmap, {n:,} tasks ({n * CANDIDATES * ATTEMPTS:,} trials)",
                            heat["seconds"], "one row per task (the heatmap before)",
                            before["seconds"], peak_mb=heat["peak_mb"],
                            baseline_peak_mb=before["peak_mb"]))
        else:
            rows.append(row(f"task_heatmap, {n:,} tasks ({n * CANDIDATES * ATTEMPTS:,} trials)",
                            heat["seconds"], "", float("nan"), peak_mb=heat["peak_mb"]))
        rep = run_child([me, "--child", "report", str(n)])
        rows.append(row(f"report, {n:,} tasks ({n * CANDIDATES * ATTEMPTS:,} trials)",
                        rep["seconds"], "", float("nan"), peak_mb=rep["peak_mb"],
                        note="mk.report to HTML, the table already read"))
    if args.json:
        for r in rows:
            print(json.dumps(r), flush=True)
        return
    print(f"machine: {machine()}")
    print(f"{'operation':<74} {'metrickit':>10} {'peak MB':>8}   baseline")
    for r in rows:
        base = (f"{r['baseline_s']:.2f} s ({r['baseline']}), ratio {r['ratio']:.2f}x"
                if r["baseline"] else "")
        if r.get("baseline_peak_mb"):
            base += f", peak {r['baseline_peak_mb']:,.0f} MB"
        peak = f"{r['peak_mb']:,.0f}" if r["peak_mb"] else "-"
        base += f" ({r['note']})" if r["note"] else ""
        print(f"{r['operation']:<74} {r['metrickit_s']:>8.2f} s {peak:>8}   {base}")


if __name__ == "__main__":
    main()
