"""Screenshot the first curves of a bench report (report.html) into a PNG for BENCHMARKS.md.

    python scripts/bench_picture.py bench-results/report.html docs/bench_curves.png

Uses Debian's headless chromium through Playwright (no browser download).
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright


def main(report: str, out: str) -> None:
    args = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
        page = browser.new_page(viewport={"width": 1200, "height": 1400})
        page.goto(Path(report).resolve().as_uri())
        page.wait_for_selector(".js-plotly-plot")
        plots = page.locator(".js-plotly-plot")
        # T = 0 vs latency, and T = 0 vs verifier calls per token, stacked
        page.evaluate(
            "() => { const ps = document.querySelectorAll('.js-plotly-plot');"
            " ps.forEach((p, i) => { if (i > 1) p.style.display = 'none'; }); }"
        )
        plots.nth(0).scroll_into_view_if_needed()
        box0, box1 = plots.nth(0).bounding_box(), plots.nth(1).bounding_box()
        clip = {"x": box0["x"], "y": box0["y"], "width": max(box0["width"], box1["width"]),
                "height": box1["y"] + box1["height"] - box0["y"]}  # fmt: skip
        page.screenshot(path=out, clip=clip)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
