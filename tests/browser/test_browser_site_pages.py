"""The site's own pages in Chromium at 1280 and 390 px: the compare form with an error, the
scoring page, a queued submission's place in line, and the audit item's one reason box.
`PAGE_SCREENSHOTS=<dir>` saves a screenshot of each to look at."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from browser_helpers import PASSWORD, log_in
from django.contrib.auth import get_user_model

from leaderboard.models import AuditEntry, Submission, Task
from leaderboard.services.submissions import QUEUED_PHASE

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import make_done  # noqa: E402

pytestmark = [pytest.mark.browser]
WIDTHS = (1280, 390)
# where screenshots go when a person wants to look at the pages (unset: none are taken)
SHOTS = os.environ.get("PAGE_SCREENSHOTS")


def shot(page, name: str, width: int) -> None:
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/{name}-{width}.png", full_page=True)


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


def _queued(task, user, minutes_ago):
    from datetime import timedelta

    from django.utils import timezone

    sub = Submission.objects.create(user=user, task=task, mode="ranked", device_type="cpu",
                                    source="def custom_kernel(x):\n    return x\n", status="queued",
                                    phase=QUEUED_PHASE, celery_task_id="t", enqueued_at=timezone.now())
    Submission.objects.filter(pk=sub.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    return sub


def test_a_queued_submission_shows_its_place_in_line_moving_up(page, site):
    """Two uploads ahead in the queue: the page says "3rd in line", then "2nd" once a worker takes
    the first, without a reload; with the typical duration of the task's verified runs."""
    from datetime import timedelta

    from django.utils import timezone

    from leaderboard import services

    task = Task.objects.get(name="softmax")
    ann, ben, cara, owner = (get_user_model().objects.create_user(n, password=PASSWORD)
                             for n in ("ann", "ben", "cara", "olga"))
    end = timezone.now() - timedelta(hours=1)
    for seconds in (35, 42, 60):  # cara's earlier runs: the typical duration
        Submission.objects.create(user=cara, task=task, mode="ranked", device_type="cpu", source="x", status="done",
                                  verdict="verified", started_at=end - timedelta(seconds=seconds), finished_at=end)
    first, _ = _queued(task, ben, 5), _queued(task, ann, 4)
    mine = _queued(task, owner, 1)
    log_in(page, site.url, "olga")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/submissions/{mine.pk}/")
        assert page.inner_text("#phase") == "3rd in line"
        assert page.inner_text("#verdict-why") == "queued, 3rd in line"
        assert page.inner_text("#typical") == "(ranked runs of this task take about 40 s here)"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, "submission-queued", width)
    services.submission_claim_next(submission_id=first.pk, worker="w")
    page.wait_for_function("document.getElementById('phase').textContent === '2nd in line'", timeout=10_000)
    claimed = services.submission_claim(submission_id=mine.pk, worker="w")
    services.submission_set_phase(submission=claimed, phase="timing: shape 1 of 1, round 2 (at most 40)")
    page.wait_for_function("document.getElementById('phase').textContent.startsWith('timing')", timeout=10_000)
    assert "running for" in page.inner_text("#elapsed")
    assert page.inner_text("#typical") == "(ranked runs of this task take about 40 s here)"
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        shot(page, "submission-running", width)


def test_the_scoring_page_is_reached_from_the_footer_and_fits_a_phone(page, site):
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/")
        page.click("#scoring-link")
        page.wait_for_url(f"{site.url}/scoring/")
        assert page.locator("h1").inner_text() == "How scoring works"
        assert "Softmax (fp32)" in page.inner_text("#flag-bounds")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, "scoring", width)
        page.click("a[href='#verdicts']")
        assert page.locator("#verdicts").is_visible()


def test_the_audit_item_has_one_reason_box_for_the_verdict_and_the_code(page, site):
    task = Task.objects.get(name="softmax")
    owner = get_user_model().objects.create_user("pia", password=PASSWORD)
    get_user_model().objects.create_user("auditor", password=PASSWORD, is_staff=True)
    sub = make_done(task, owner, speedup=2.1, verdict="flagged", codes=["too_fast_vs_compile"],
                    reasons=["2.10x faster than torch.compile"], device_type="cpu")
    log_in(page, site.url, "auditor")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/audit/{sub.pk}/")
        assert page.locator("textarea").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, "audit-item", width)
    page.click("#withhold")  # no reason: the browser asks for one, nothing is sent
    assert not AuditEntry.objects.exists()
    page.fill("#id_reason", "a licensed snippet")
    page.click("#withhold")
    page.wait_for_selector(".messages .success")
    assert AuditEntry.objects.get().reason == "a licensed snippet"
    assert "Withheld" in page.inner_text("#code-state")
    page.click("#release")  # a release needs no reason
    page.wait_for_selector("#withhold")
    assert [e.action for e in AuditEntry.objects.order_by("created_at")] == ["withhold", "release"]


def test_the_upload_form_refuses_a_file_for_another_task(page, site):
    from evaluator.tasks import get_task

    from leaderboard import services

    services.task_sync(spec=get_task("layernorm"))
    get_user_model().objects.create_user("quinn", password=PASSWORD)
    log_in(page, site.url, "quinn")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/upload/")
        page.select_option("#id_task", "layernorm")
        page.fill("#id_code", "import torch\n\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n")
        page.click("#upload-form button[type=submit]")
        page.wait_for_selector(".errorlist")
        # pasted code is "code", not "file"
        assert ("custom_kernel takes (x, weight, bias) for layernorm; this code's takes (x)"
                in page.inner_text(".errorlist"))
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, "upload-wrong-task", width)
    assert not Submission.objects.exists()
