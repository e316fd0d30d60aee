"""The tuner in a real browser: key press on a slider -> new plot image in the page.

Starts JupyterLab on 127.0.0.1 with a token (as ``tests/test_browser.py`` does), opens it in
Chromium with Playwright, runs a notebook that shows the tuner and moves the speed-weight
slider with the keyboard, one step per key press, ``--moves`` times (up and down a stretch
of the slider, so every press changes the plot). For each press it records, in the page,
the time from the ``keydown`` event to the ``load`` event of the plot's new image (the
image decoded in the page; the bytes went from the browser to the kernel, through the
update and back), and prints the median and p90 over the presses.

Two tables: the example case table and spec of ``notebooks/03_tune_reward_spec.ipynb``
(``mk.examples.load("tickets")``, the tuner as the notebook makes it) and one of 14
candidates with long names: the otel-bench results in
``/work/shared/realdata/otel-bench/results.json`` when present (via
``trials_from_frame``), else a seeded 14-candidate table. Baseline in the same run: the
same presses with the tuner's former fixed 60 ms debounce (``debounce_ms=60`` and the
fast-update threshold off), i.e. what the 60 ms wait alone adds on this machine.

    python benchmarks/bench_tuner_browser.py [--moves 40] [--json]

Needs Chromium (``/usr/bin/chromium`` or ``$METRICKIT_CHROMIUM``) and the ``browser`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("METRICKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
#: the spec notebooks/03_tune_reward_spec.ipynb starts its tuner from
NOTEBOOK_03_SPEC = {"weights": {"accuracy": 0.7, "speed": 0.2, "cost": 0.1}, "accuracy": {},
                    "speed": {"reference": 2000}, "cost": {"reference": 0.01}}
OTEL = Path("/work/shared/realdata/otel-bench/results.json")

_FOURTEEN = '''
import json, os
from pathlib import Path
import numpy as np, pandas as pd
import metrickit as mk
otel = Path({otel!r})
if otel.is_file():
    df = pd.DataFrame(json.loads(otel.read_text()))
    df["latency_ms"] = df["Duration"] / 1e6
    cases = mk.trials_from_frame(df, task="TaskName", reward="Reward", model="ModelName",
                                 latency_ms="latency_ms", cost_usd="CostUSD")
    source = "otel-bench"
else:
    rng = np.random.default_rng(14)
    names = [f"openrouter/vendor-{{i}}/a-rather-long-model-name-{{i}}-preview" for i in range(14)]
    rows = 14 * 60
    cand = np.repeat(np.arange(14), 60)
    cases = pd.DataFrame({{"candidate": np.array(names)[cand],
                          "task_name": np.tile([f"t{{i}}" for i in range(60)], 14),
                          "accuracy": (rng.random(rows) < rng.uniform(.3, .9, 14)[cand]) * 1.0,
                          "latency_ms": rng.lognormal(11, .5, rows),
                          "cost_usd": rng.lognormal(-1, .7, rows)}})
    source = "seeded"
print(source, cases["candidate"].nunique(), "candidates", len(cases), "trials")
'''


def _notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _api(base: str, token: str, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"{base}{path}", method=method,
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


_SETUP = """() => {
  window.__mk = {t0: null, times: []};
  document.addEventListener('keydown', () => { window.__mk.t0 = performance.now(); }, true);
  const img = [...document.querySelectorAll('.metrickit-tuner img')].pop();
  img.addEventListener('load', () => {
    if (window.__mk.t0 !== null) {
      window.__mk.times.push(performance.now() - window.__mk.t0);
      window.__mk.t0 = null;
    }
  });
  return !!img;
}"""


def _drive(page: Any, moves: int) -> list[float]:
    """Press ArrowRight/ArrowLeft on the speed-weight slider ``moves`` times (eight steps
    up, eight down), waiting for each new image; the key-to-image times in ms."""
    tuner = page.locator(".metrickit-tuner").first
    # JupyterLab may lay out cells lazily; the key presses work either way
    with contextlib.suppress(Exception):
        tuner.locator("img").last.scroll_into_view_if_needed(timeout=10_000)
    assert page.evaluate(_SETUP)
    handle = tuner.locator(".widget-slider").filter(has_text="speed weight").locator(
        ".noUi-handle")
    handle.focus()
    for i in range(moves):
        key = "ArrowRight" if (i // 8) % 2 == 0 else "ArrowLeft"
        before = page.evaluate("window.__mk.times.length")
        page.keyboard.press(key)
        try:
            page.wait_for_function(f"window.__mk.times.length > {before}", timeout=5_000)
        except Exception:  # no new image for this press (should not happen): skip it
            page.evaluate("window.__mk.t0 = null")
        page.wait_for_timeout(150)  # a pause between presses, as a user's key repeat
    return list(page.evaluate("window.__mk.times"))


def _open_and_run(page: Any, base: str, token: str, name: str) -> None:
    page.goto(f"{base}/lab/tree/{name}?token={token}", timeout=120_000)
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " return w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel"
        " && w.sessionContext.session.kernel.connectionStatus === 'connected'; }",
        timeout=120_000,
    )
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    page.locator(".metrickit-tuner img").last.wait_for(state="attached", timeout=180_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.metrickit-tuner .metrickit-verdict')]"
        ".some(e => /^(best|tied):/.test(e.innerText.trim()))", timeout=120_000)
    page.wait_for_timeout(1000)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--quick", action="store_true", help="20 moves")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the fixed-60-ms-debounce runs")
    parser.add_argument("--json", action="store_true", help="print JSON rows for run.py")
    args = parser.parse_args()
    if args.quick:
        args.moves = 20
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="mk-bench-tuner-"))
    lab = tmp / "lab"
    lab.mkdir()
    tables = {"example": None, "14 candidates": _FOURTEEN.format(otel=str(OTEL))}
    cases: list[tuple[str, str, str]] = []  # (table, variant, notebook)
    for variant, options in (("now", ""), ("fixed 60 ms debounce", ", debounce_ms=60")):
        if variant != "now" and args.no_baseline:
            continue
        # the former behaviour: every event waits 60 ms, however fast the update
        force = ("\ntuner._schedule.cost = lambda: float('inf')" if options else "")
        slug = "now" if variant == "now" else "fixed"
        for table, setup in tables.items():
            name = f"bench_{slug}_{'example' if setup is None else '14'}.ipynb"
            if setup is None:
                cells = ["import metrickit as mk\ncases = mk.examples.load('tickets')\n"
                         "spec = " + repr(NOTEBOOK_03_SPEC)]
            else:
                cells = [setup]
            spec = ", spec" if setup is None else ""
            cells.append(f"tuner = mk.widgets.tune_spec(cases{spec}{options}){force}\ntuner")
            _notebook(lab / name, cells)
            cases.append((table, variant, name))

    token, port = secrets.token_hex(16), _free_port()
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    env["JUPYTER_CONFIG_DIR"] = str(tmp / "config")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    log = open(tmp / "jupyter.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
         f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.token={token}",
         f"--ServerApp.root_dir={lab}", "--LabApp.expose_app_in_browser=True"],
        cwd=lab, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(120):
            try:
                _api(base, token, "/api/status")
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for table, variant, name in cases:
                print(f"{table}, {variant} ...", file=sys.stderr, flush=True)
                page = browser.new_page(viewport={"width": 1500, "height": 2200})
                _open_and_run(page, base, token, name)
                results[(table, variant)] = _drive(page, args.moves)
                page.close()
                for session in _api(base, token, "/api/sessions") or []:
                    _api(base, token, f"/api/sessions/{session['id']}", method="DELETE")
            browser.close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for table in tables:
        now = results[(table, "now")]
        if not now:
            rows.append({"operation": f"tuner in JupyterLab ({table})",
                         "error": "no new image seen after any key press"})
            continue
        base_times = results.get((table, "fixed 60 ms debounce"))
        rows.append({
            "operation": f"tuner in JupyterLab, key press -> new image ({table}), median",
            "metrickit_ms": statistics.median(now),
            "baseline_ms": statistics.median(base_times) if base_times else None,
            "baseline": "fixed 60 ms debounce" if base_times else "",
            "note": f"p90 {_p90(now):.0f} ms over {len(now)} presses"
                    + (f"; baseline p90 {_p90(base_times):.0f} ms" if base_times else ""),
        })
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print(f"key press -> new image in the page, {args.moves} presses per table")
    print(f"{'table':<16}{'variant':<24}{'median ms':>10}{'p90 ms':>8}{'presses':>9}")
    for (table, variant), times in results.items():
        if not times:
            print(f"{table:<16}{variant:<24} no new image seen")
            continue
        print(f"{table:<16}{variant:<24}{statistics.median(times):>10.1f}"
              f"{_p90(times):>8.1f}{len(times):>9}")


if __name__ == "__main__":
    main()
