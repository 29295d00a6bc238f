"""The site's own pages in Chromium at 1280 and 390 px: the compare form with an error, the
scoring page, a queued submission's place in line, and the audit item's one reason box.
`PAGE_SCREENSHOTS=<dir>` saves a screenshot of each to look at."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard.models import AuditEntry, Submission, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import make_done  # noqa: E402

pytestmark = [pytest.mark.browser]
PASSWORD = "a-long-pass-phrase-9"
WIDTHS = (1280, 390)
# where screenshots go when a person wants to look at the pages (unset: none are taken)
SHOTS = os.environ.get("PAGE_SCREENSHOTS")


def shot(page, name: str, width: int) -> None:
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/{name}-{width}.png", full_page=True)


def log_in(page, base, name):
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base}/")


def box(page, selector):
    return page.locator(selector).bounding_box()


def test_the_compare_form_keeps_its_layout_with_an_error(page, site):
    """Each field's error sits under its own field; the fields and the button stay where they were
    (the error list, a <ul> inside a <p>, used to push the second field and the button out of the row)."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/compare/")
        clean = {f: box(page, f"#id_{f}") for f in ("a", "b")}
        page.fill("#id_a", "99999")
        page.fill("#id_b", "88888")
        page.click("#compare-form button[type=submit]")
        page.wait_for_selector("#id_a_error")
        shot(page, "compare-error", width)
        assert "There is no submission #99999" in page.inner_text("#id_a_error")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.locator("#compare-form p:empty").count() == 0
        a, b = box(page, "#id_a"), box(page, "#id_b")
        error_a, error_b = box(page, "#id_a_error"), box(page, "#id_b_error")
        button = box(page, "#compare-form button[type=submit]")
        assert (a["x"], a["y"]) == (clean["a"]["x"], clean["a"]["y"])
        assert error_a["y"] >= a["y"] + a["height"] and error_b["y"] >= b["y"] + b["height"]
        if width == 1280:  # one row: the inputs level, the button beside them, each error under its field
            assert (b["x"], b["y"]) == (clean["b"]["x"], clean["b"]["y"]) and a["y"] == b["y"]
            assert abs((button["y"] + button["height"] / 2) - (a["y"] + a["height"] / 2)) < 6
            assert error_a["x"] + error_a["width"] <= b["x"]
        else:  # one column: each error between its field and the next
            assert b["x"] == a["x"]
            assert error_a["y"] + error_a["height"] <= b["y"]
            assert button["y"] >= error_b["y"] + error_b["height"]
