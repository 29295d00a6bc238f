"""Screenshots of a running site's public pages in Chromium, to look at: the home page, each task's
board on one device type, and the result page of each board's first entry, at 1280 and 390 px
(docs/bench/gpu-site.md: the H200 boards, loaded into a CPU site with `manage.py import_results`).

    python bench/site_screenshots.py --url http://127.0.0.1:8000 --device cuda:nvidia-h200 --out DIR

Prints each page's address, its width in CSS pixels against the window's (wider means the page
scrolls sideways) and its chart axes' types, so what a screenshot shows can be checked in text too.
"""
from __future__ import annotations

import argparse
import json
import urllib.parse
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"  # Debian's; the project never downloads a browser
WIDTHS = (1280, 390)


def board(url: str, task: str, device: str) -> dict:
    q = urllib.parse.urlencode({"device": device})
    with urllib.request.urlopen(f"{url}/api/tasks/{task}/leaderboard?{q}", timeout=30) as r:
        return json.loads(r.read())


def pages(url: str, device: str) -> list[tuple[str, str]]:
    """(name, address) of every page to take: home, then per task its board and its top result."""
    with urllib.request.urlopen(f"{url}/api/tasks", timeout=30) as r:
        tasks = [t["name"] for t in json.loads(r.read())["tasks"]]
    out = [("home", f"{url}/")]
    for task in tasks:
        out.append((f"board-{task}", f"{url}/tasks/{task}/?" + urllib.parse.urlencode({"device": device})))
        entries = board(url, task, device)["entries"]
        if entries:
            out.append((f"result-{task}", entries[0]["page"]))
    return out


def axes(page) -> list[str]:
    """Each plotly chart's id and axis types on the page, as plotly drew them."""
    return page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')].map(el =>
        `${el.id || '?'}: x ${el._fullLayout.xaxis.type}, y ${el._fullLayout.yaxis.type}`)""")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="http://127.0.0.1:8000")
    ap.add_argument("--device", required=True, help="the device type of the boards, e.g. cuda:nvidia-h200")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    todo = pages(args.url.rstrip("/"), args.device)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, address in todo:
                page.goto(address, wait_until="networkidle")
                path = args.out / f"{name}-{width}.png"
                page.screenshot(path=str(path), full_page=True)
                wide = page.evaluate("document.documentElement.scrollWidth")
                print(f"{path.name}: {address} width {wide}/{width} {'; '.join(axes(page))}")
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
