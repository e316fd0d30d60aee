"""The report ``make demo`` writes, in a real browser: Chromium opens it from ``file://``,
no request leaves the page, every plot is laid out with a non-empty box, and at a 1,280-px
viewport neither the page nor any of its tables scrolls sideways. The screenshot goes to
``test-output/browser/report.png``.

Needs Debian's Chromium (``make chromium`` as root installs it) and Playwright; it fails
(never skips) when either is missing, like ``tests/test_browser.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import metrickit as mk

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("METRICKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
OUT = ROOT / "test-output" / "browser"


def test_report_opens_from_file_with_no_request_and_visible_plots(tmp_path, demo_report):
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), (
        f"{CHROMIUM} not found: run `make chromium` as root (Debian's chromium) or deselect "
        "with -m 'not browser'"
    )
    # what `make demo` writes to out/report.html
    path = demo_report.path
    trials = mk.read_harbor_job(demo_report.argv[1], progress=False)
    requests: list[str] = []
    refused: list[str] = []

    def route(r):
        url = r.request.url
        if url.startswith(("file://", "data:")):
            r.continue_()
        else:
            refused.append(url)
            r.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("request", lambda request: requests.append(request.url))
            page.route("**/*", route)
            page.goto(path.as_uri(), wait_until="load")
            page.wait_for_load_state("networkidle")
            plots = page.locator("img, svg, table.heatmap")
            n = plots.count()
            assert n >= 3, f"expected the bar, trade-off and heatmap plots, found {n}"
            # the heatmap's cells are painted: no cell keeps the page's white
            painted = page.evaluate("""() => [...document.querySelectorAll(
                'table.heatmap td')].map(td => getComputedStyle(td).backgroundColor)""")
            assert painted and "rgba(0, 0, 0, 0)" not in painted, painted[:5]
            for i in range(n):
                plot = plots.nth(i)
                plot.scroll_into_view_if_needed()
                assert plot.is_visible(), f"plot {i} is not visible"
                box = plot.bounding_box()
                assert box is not None and box["width"] > 50 and box["height"] > 50, (i, box)
                if plot.evaluate("e => e.tagName") == "IMG":
                    decoded = plot.evaluate("e => e.complete && e.naturalWidth > 0")
                    assert decoded, f"image {i} did not decode"
            headline = page.locator("#headline tbody tr")
            assert headline.count() == trials["eval"].nunique()
            assert page.locator("#provenance").is_visible()
            # 1,280 px wide: nothing scrolls sideways, neither the page nor a table
            wide = page.evaluate("""() => {
                const out = [];
                const root = document.documentElement;
                if (root.scrollWidth > root.clientWidth)
                    out.push(`page ${root.scrollWidth} > ${root.clientWidth}`);
                for (const w of document.querySelectorAll('.table-wrap, pre'))
                    if (w.scrollWidth > w.clientWidth + 1)
                        out.push(`${w.querySelector('table')?.id || w.tagName} `
                                 + `${w.scrollWidth} > ${w.clientWidth}`);
                return out;
            }""")
            assert not wide, wide
            # a note cell is not cut short: its text fits its box
            cut = page.evaluate("""() => [...document.querySelectorAll('td.note')]
                .filter(td => td.scrollWidth > td.clientWidth + 1).map(td => td.textContent)""")
            assert not cut, cut
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, OUT / "report.png")
    assert not refused, f"requests that left the page: {refused}"
    assert all(url.startswith(("file://", "data:")) for url in requests), requests
    assert path.as_uri() in requests
