"""The tuner in a real browser: key press on a slider -> new plot image in the page.

Starts JupyterLab on 127.0.0.1 with a token (``_jupyter.py``, as ``tests/test_browser.py``
does), opens it in
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
same presses with the tuner's former scheduling, a fixed 60 ms debounce on every event
(``_FIXED_DEBOUNCE``), i.e. what that wait adds on this machine; and the floor for the
example table (``_FLOOR``): each press only swaps in one of two images made before, so
the time left is JupyterLab's, the server's and the kernel's messaging. The load average is
printed beside the figures (the page, the server and the kernel share the machine's cores).
With ``--screenshot PNG`` the 14-candidate tuner is also checked at 1,280 px with the file
browser open (``_jupyter.layout_at_1280``, the test suite's check: every slider and readout
whole, nothing wider than the output area, no table cut) and saved as an image.

    python benchmarks/bench_tuner_browser.py [--moves 40] [--json] [--screenshot out/x.png]

Needs Chromium (``/usr/bin/chromium`` or ``$METRICKIT_CHROMIUM``) and the ``browser`` extra.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _jupyter import CHROMIUM, CHROMIUM_ARGS, Lab, jupyter_lab, layout_at_1280

ROOT = Path(__file__).resolve().parent.parent
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


#: the tuner's former scheduling, for the baseline: every event waits 60 ms (restarted by
#: the next event), however fast the update and however long the pause before it
_FIXED_DEBOUNCE = """
import asyncio
class _Fixed:
    def __init__(self, fn):
        self.fn, self.handle = fn, None
    def __call__(self):
        if self.handle is not None:
            self.handle.cancel()
        self.handle = asyncio.get_event_loop().call_later(0.06, self._fire)
    def _fire(self):
        self.handle = None
        self.fn()
tuner._schedule = _Fixed(tuner.update)"""

#: the floor, for the example table: the slider event only swaps in one of two images
#: made before (the tuner's own, same size), so what remains is the page, the server and
#: the kernel's messaging, none of the update's work
_FLOOR = """
_pngs = [tuner.png]
tuner.w_speed.value = round(tuner.w_speed.value + 0.05, 2)
_pngs.append(tuner.png)
class _Swap:
    wait = 0
    def __init__(self):
        self.i = 0
    def __call__(self):
        self.i += 1
        tuner._image.value = _pngs[self.i % 2]
tuner._schedule = _Swap()"""


def _notebook(path: Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)


_SETUP = """() => {
  const mk = window.__mk = {t0: null, times: [], parts: [], send: null, recv: null};
  document.addEventListener('keydown', () => {
    mk.t0 = performance.now(); mk.send = null; mk.recv = null;
  }, true);
  // Where the time goes: the first message the page sends after the key press (the new
  // slider value) and the first large one it receives (the new image's bytes).
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (mk.t0 !== null && mk.send === null) mk.send = performance.now() - mk.t0;
    if (!this.__mkSeen) {
      this.__mkSeen = true;
      this.addEventListener('message', (e) => {
        const size = e.data.byteLength || e.data.size || e.data.length || 0;
        if (mk.t0 !== null && mk.recv === null && size > 20000)
          mk.recv = performance.now() - mk.t0;
      });
    }
    return send.call(this, data);
  };
  const img = [...document.querySelectorAll('.metrickit-tuner img')].pop();
  img.addEventListener('load', () => {
    if (mk.t0 !== null) {
      const t = performance.now() - mk.t0;
      mk.times.push(t);
      mk.parts.push([mk.send, mk.recv, t]);
      mk.t0 = null;
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
    parts = [p for p in page.evaluate("window.__mk.parts") if None not in p]
    if parts:  # key -> value sent, -> image bytes received, -> image shown
        sent, got, shown = (statistics.median(x) for x in zip(*parts, strict=True))
        print(f"  medians over {len(parts)} presses: value sent {sent:.0f} ms, image bytes "
              f"in {got:.0f} ms, image shown {shown:.0f} ms", file=sys.stderr, flush=True)
    return list(page.evaluate("window.__mk.times"))


def _open_and_run(page: Any, lab: Lab, name: str) -> None:
    # a workspace of its own, reset: JupyterLab would reopen the previous notebook's tab,
    # and its (stale) tuner would be the one found and driven
    workspace = Path(name).stem.replace("_", "-")
    page.goto(lab.url(f"lab/workspaces/{workspace}/tree/{name}?reset"), timeout=120_000)
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " return w && w.context && w.context.path.endsWith(" + json.dumps(name) + ")"
        " && w.sessionContext && w.sessionContext.session"
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
    parser.add_argument("--screenshot", metavar="PNG",
                        help="after the 14-candidate run, check the layout at 1,280 px with "
                             "the file browser open and save a screenshot here")
    args = parser.parse_args()
    if args.quick:
        args.moves = 20
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="mk-bench-tuner-"))
    lab_dir = tmp / "lab"
    lab_dir.mkdir()
    tables = {"example": None, "14 candidates": _FOURTEEN.format(otel=str(OTEL))}
    cases: list[tuple[str, str, str]] = []  # (table, variant, notebook)
    variants = (("now", "", ""), ("fixed 60 ms debounce", ", debounce_ms=60", _FIXED_DEBOUNCE),
                ("floor: image swap only", "", _FLOOR))
    for variant, options, force in variants:
        if variant != "now" and args.no_baseline:
            continue
        # fixed: the former behaviour, every event waits 60 ms, however fast the update
        slug = {"now": "now", "floor: image swap only": "floor"}.get(variant, "fixed")
        for table, setup in tables.items():
            if slug == "floor" and setup is not None:
                continue  # one floor is enough: the example's image
            name = f"bench_{slug}_{'example' if setup is None else '14'}.ipynb"
            if setup is None:
                cells = ["import metrickit as mk\ncases = mk.examples.load('tickets')\n"
                         "spec = " + repr(NOTEBOOK_03_SPEC)]
            else:
                cells = [setup]
            spec = ", spec" if setup is None else ""
            cells.append(f"tuner = mk.widgets.tune_spec(cases{spec}{options}){force}\ntuner")
            _notebook(lab_dir / name, cells)
            cases.append((table, variant, name))

    results: dict[tuple[str, str], list[float]] = {}
    layout: dict[str, Any] | None = None
    try:
        with jupyter_lab(lab_dir, tmp) as lab, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for table, variant, name in cases:
                for attempt in (1, 2):  # a loaded machine can miss a start-up deadline
                    print(f"{table}, {variant} (attempt {attempt}) ...", file=sys.stderr,
                          flush=True)
                    page = browser.new_page(viewport={"width": 1500, "height": 2200})
                    try:
                        _open_and_run(page, lab, name)
                        results[(table, variant)] = _drive(page, args.moves)
                        if args.screenshot and variant == "now" and table != "example":
                            try:  # the figures stand without it
                                layout = layout_at_1280(page, Path(args.screenshot))
                            except Exception as exc:
                                print(f"  layout check failed: {type(exc).__name__}: "
                                      f"{str(exc)[:300]}", file=sys.stderr, flush=True)
                        break
                    except Exception as exc:  # reported, then retried once
                        print(f"  failed: {type(exc).__name__}: {str(exc)[:300]}",
                              file=sys.stderr, flush=True)
                    finally:
                        page.close()
                        lab.shut_down_kernels()
            browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    load = os.getloadavg()
    rows = []
    for table in tables:
        now = results.get((table, "now"), [])
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
                    + (f"; baseline p90 {_p90(base_times):.0f} ms" if base_times else "")
                    + f"; load average {load[0]:.1f} on {os.cpu_count()} cores",
        })
    if args.json:
        for r in rows:
            print(json.dumps(r))
        return
    print(f"key press -> new image in the page, {args.moves} presses per table; load "
          f"average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    if layout is not None:
        print(f"layout at 1,280 px with the file browser open (output area "
              f"{layout['width']:.0f} px): "
              + ("every slider and readout whole" if not layout["problems"]
                 else "; ".join(layout["problems"]))
              + f"; screenshot {args.screenshot}")
    print(f"{'table':<16}{'variant':<24}{'median ms':>10}{'p90 ms':>8}{'presses':>9}")
    for (table, variant), times in results.items():
        if not times:
            print(f"{table:<16}{variant:<24} no new image seen")
            continue
        print(f"{table:<16}{variant:<24}{statistics.median(times):>10.1f}"
              f"{_p90(times):>8.1f}{len(times):>9}")


if __name__ == "__main__":
    main()
