"""JupyterLab and Chromium for the real-browser benchmark and tests (not a benchmark itself:
run.py skips it).

``bench_tuner_browser.py`` imports it (``benchmarks/`` is on its ``sys.path``) and
``tests/test_browser.py`` loads it with ``tests/benchmark_modules.py``: one start-up of
JupyterLab (``jupyter_lab``) and one definition of "cut off at a laptop's width"
(``layout_at_1280``) for both.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = os.environ.get("METRICKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]
#: JupyterLab's user settings every run starts with: no news toast over the notebook (and
#: no request to the news feed)
QUIET: dict[str, dict[str, Any]] = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                    "checkForUpdates": False},
}
#: every cell in the page (JupyterLab's default, "contentVisibility", skips laying out the
#: cells out of view, so a check of every output would see only the first screen)
ALL_CELLS: dict[str, dict[str, Any]] = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: its address and token."""

    base: str
    token: str
    data_dir: Path  # its JUPYTER_DATA_DIR: the database of trusted notebooks

    def trust(self, path: Path) -> None:
        """Sign the notebook at ``path`` as the user's own (see ``jupyter_lab``)."""
        import nbformat
        from nbformat.sign import NotebookNotary

        NotebookNotary(data_dir=str(self.data_dir)).sign(nbformat.read(path, as_version=4))

    def url(self, path: str) -> str:
        """The page ``path`` (``"lab/tree/x.ipynb"``) with the token."""
        return f"{self.base}/{path.lstrip('/')}{'&' if '?' in path else '?'}token={self.token}"

    def api(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"{self.base}{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """Every session's kernel (each notebook opened starts one)."""
        with contextlib.suppress(OSError):
            for session in self.api("/api/sessions") or []:
                self.api(f"/api/sessions/{session['id']}", method="DELETE")


@contextlib.contextmanager
def jupyter_lab(root: Path, state: Path, *,
                settings: Mapping[str, Mapping[str, Any]] = QUIET,
                trusted: Iterable[Path] = ()) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1 with a fresh token, serving ``root``, its configuration,
    settings, workspaces, trust database and log in ``state`` (never the user's
    ``~/.jupyter``): started, yielded once it answers, and stopped with its kernels on
    exit. ``settings`` maps a plugin id to user settings (``QUIET | ALL_CELLS``).

    ``trusted`` notebooks are signed as the user's own: JupyterLab shows their saved
    outputs as it showed them when they ran (HTML not sanitised, widgets drawn from the
    widget state saved in the notebook). An untrusted notebook shows a widget's text
    ``repr`` instead.
    """
    config, data = state / "jupyter-config", state / "jupyter-data"
    data.mkdir(parents=True, exist_ok=True)
    lab = Lab(f"http://127.0.0.1:{free_port()}", secrets.token_hex(16), data)
    for path in trusted:
        lab.trust(path)
    for plugin, values in settings.items():
        package, name = plugin.rsplit(":", 1)
        path = config / "lab" / "user-settings" / package / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # inline plots must render in the kernel
    env["JUPYTER_CONFIG_DIR"] = str(config)
    env["JUPYTER_DATA_DIR"] = str(data)
    env["JUPYTER_RUNTIME_DIR"] = str(state / "jupyter-runtime")
    port = lab.base.rsplit(":", 1)[1]
    log_path = state / "jupyter.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
             f"--ServerApp.port={port}", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.token={lab.token}", f"--ServerApp.root_dir={root}",
             "--LabApp.expose_app_in_browser=True", "--ServerApp.open_browser=False"],
            cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            for _ in range(120):
                try:
                    lab.api("/api/status")
                    break
                except OSError:
                    if server.poll() is not None:
                        raise RuntimeError(log_path.read_text()) from None
                    time.sleep(0.5)
            else:
                raise RuntimeError(f"JupyterLab did not start in 60 s:\n{log_path.read_text()}")
            yield lab
        finally:
            lab.shut_down_kernels()
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:  # a loaded machine: it is still shutting down
                server.kill()
                server.wait()  # reaped, not left to the garbage collector as a zombie


#: In the page, for the current notebook: every element matching the selector (an output,
#: the tuner) against what the user can see of it, the output area within the notebook's
#: scroller (a table wider than that is cut off at the window's edge even when its own box
#: does not scroll). Cut: a slider under 200 px or past that edge, a readout whose text
#: does not fit, an image or widget past the edge, a table past it, a table in a box that
#: scrolls or clips sideways, a table cell whose content does not fit, an output that
#: scrolls sideways. Widgets drawn from a notebook's saved state, with no kernel behind
#: them, carry ipywidgets' "disconnected" icon before each one, which shifts them by 20 px;
#: the icons are hidden while measuring, so a saved tuner is measured as it is laid out
#: live. Also counts what it saw, so a caller can tell an empty check.
_LAYOUT = """(scope) => {
  const nb = window.jupyterapp.shell.currentWidget;
  const cells = nb.content.widgets;
  const outer = nb.node.querySelector('.jp-WindowedPanel-outer') || nb.node;
  const ob = outer.getBoundingClientRect();
  const viewRight = ob.left + outer.clientLeft + outer.clientWidth;  // less its scrollbar
  const roots = [...nb.node.querySelectorAll(scope)];
  const seen = {outputs: 0, tables: 0, columns: 0, sliders: 0, readouts: 0, images: 0,
                widgets: 0, disconnected: 0};
  const out = [];
  const px = (x) => Math.round(x);
  const sideways = (e) => e.scrollWidth > e.clientWidth + 1
    && getComputedStyle(e).overflowX !== 'visible';
  const reported = new Set();
  const icons = document.createElement('style');
  icons.textContent = '.jupyter-widgets-disconnected::before{content:none!important;'
    + 'display:none!important}';
  document.head.appendChild(icons);
  let width = null;
  try {
    for (const root of roots) {
      const area = root.closest('.jp-OutputArea-output') || root;
      const box = area.getBoundingClientRect();
      if (box.width === 0 && box.height === 0) continue;  // a collapsed output
      seen.outputs++;
      const right = Math.min(box.right, viewRight);
      if (width === null || right - box.left < width) width = right - box.left;
      const index = cells.findIndex((c) => c.node.contains(root));
      const prompt = index < 0 ? null : cells[index].node.querySelector('.jp-InputPrompt');
      const label = prompt ? prompt.innerText.trim().replace(/:$/, '') : '';
      const at = `cell ${index + 1}${label ? ' ' + label : ''}`;
      const widgets = [...root.querySelectorAll('.jupyter-widgets')];
      if (root.matches('.jupyter-widgets')) widgets.push(root);
      seen.widgets += widgets.length;
      seen.disconnected += widgets.filter(
        (e) => e.classList.contains('jupyter-widgets-disconnected')).length;
      for (const s of root.querySelectorAll('.widget-slider, .widget-hslider')) {
        seen.sliders++;
        const r = s.getBoundingClientRect();
        const label = (s.querySelector('.widget-label') || {}).innerText || '?';
        if (r.width < 200 || r.right > right + 1)
          out.push(`${at}: slider ${label}: ${px(r.left)}-${px(r.right)} in `
                   + `${px(box.left)}-${px(right)}`);
        const track = s.querySelector('.slider-container, .noUi-target');
        const tw = track ? track.getBoundingClientRect().width : 999;
        if (tw < 80) out.push(`${at}: slider ${label}: track ${px(tw)} px`);
        const ro = s.querySelector('.widget-readout');
        if (ro) {
          seen.readouts++;
          if (ro.scrollWidth > ro.clientWidth + 1
              || ro.getBoundingClientRect().right > right + 1)
            out.push(`${at}: readout of ${label} cut: ${ro.innerText}`);
        }
      }
      for (const e of root.querySelectorAll('img, .widget-html')) {
        if (e.tagName === 'IMG') seen.images++;
        const r = e.getBoundingClientRect();
        if (r.right > right + 1)
          out.push(`${at}: ${e.tagName.toLowerCase()} ends at ${px(r.right)}, visible to `
                   + `${px(right)}`);
      }
      for (const t of root.querySelectorAll('table')) {
        seen.tables++;
        const r = t.getBoundingClientRect();
        const head = [...t.querySelectorAll('th, td')].map((c) => c.innerText.trim())
          .find((x) => x) || '';
        const name = `table "${head.slice(0, 30)}"`;
        if (r.right > right + 1)
          out.push(`${at}: ${name} ends at ${px(r.right)}, visible to ${px(right)}: `
                   + 'columns cut');
        for (let e = t.parentElement; e && area.contains(e); e = e.parentElement) {
          if (sideways(e)) {
            if (!reported.has(e))
              out.push(`${at}: ${name} scrolls sideways (${e.scrollWidth} px in `
                       + `${e.clientWidth}, ${e.tagName.toLowerCase()}.`
                       + `${[...e.classList].slice(-2).join('.')})`);
            reported.add(e);
            break;
          }
        }
        const row = t.querySelector('tr');
        seen.columns += row ? row.children.length : 0;
        for (const c of t.querySelectorAll('th, td')) {
          if (c.scrollWidth > c.clientWidth + 1) {
            out.push(`${at}: ${name}: cell "${c.innerText.trim().slice(0, 40)}" clipped `
                     + `(${c.scrollWidth} px in ${c.clientWidth})`);
            break;
          }
        }
      }
      if (sideways(area) && !reported.has(area))
        out.push(`${at}: the output scrolls sideways (${area.scrollWidth} px in `
                 + `${area.clientWidth})`);
    }
  } finally {
    icons.remove();
  }
  return {problems: out, width: width === null ? 0 : px(width), seen: seen};
}"""


#: how much of the current notebook is below the window: its last cell's bottom (not the
#: blank space JupyterLab leaves to scroll past the end)
_BELOW = """() => {
  const nb = window.jupyterapp.shell.currentWidget;
  const outer = nb.node.querySelector('.jp-WindowedPanel-outer');
  const cells = nb.content.widgets;
  const last = cells[cells.length - 1].node.getBoundingClientRect();
  const top = outer.getBoundingClientRect().top;
  return Math.max(0, last.bottom + 24 - top - outer.clientHeight);
}"""


def _settle(page: Any) -> None:
    """Two animation frames: layout done after a resize."""
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def layout_at_1280(page: Any, screenshot: Path, *, scope: str = ".metrickit-tuner",
                   whole_notebook: bool = False) -> dict[str, Any]:
    """The current notebook at a 1,280-px window with JupyterLab's file browser open: what
    of the elements matching ``scope`` is cut off (``problems``, see ``_LAYOUT``), the
    narrowest visible output width (``width``) and counts of what was checked (``seen``).
    Saves a screenshot to ``screenshot``: the window with the last ``scope`` element in
    view, or with ``whole_notebook`` the whole notebook (the window made as tall as it;
    checked at 1,000 px tall, where the notebook's scrollbar takes its width)."""
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
    page.locator(".jp-FileBrowser").first.wait_for(state="visible", timeout=10_000)
    page.wait_for_timeout(300)  # the sidebar's and the cells' resize handlers
    _settle(page)
    if not whole_notebook:
        with contextlib.suppress(Exception):
            page.locator(scope).last.scroll_into_view_if_needed(timeout=10_000)
        _settle(page)
    found = dict(page.evaluate(_LAYOUT, scope))
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    if whole_notebook:
        extra = page.evaluate(_BELOW)
        page.set_viewport_size({"width": 1280, "height": 1000 + min(int(extra), 30_000)})
        page.wait_for_timeout(300)
        _settle(page)
        page.screenshot(path=str(screenshot), full_page=False)
        page.set_viewport_size({"width": 1280, "height": 1000})
        _settle(page)
    else:
        page.screenshot(path=str(screenshot), full_page=False)  # the window, as the user sees it
    return found
