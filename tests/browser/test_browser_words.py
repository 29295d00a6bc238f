"""In Chromium: the admin's submission list fits a 1280 px screen and speaks the site's words, the
upload form starts on ranked, and a result page says its state in the same words."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import Submission, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import SOURCE, make_done  # noqa: E402

pytestmark = [pytest.mark.browser]
PASSWORD = "a-long-pass-phrase-9"


def log_in(page, base: str, name: str, path: str = "/accounts/login/"):
    page.goto(f"{base}{path}")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.locator("form [type=submit]").click()
    page.wait_for_load_state()


def right_edges(page, selector: str) -> dict:
    return page.evaluate("""(sel) => {
        const table = document.querySelector(sel);
        const box = table.getBoundingClientRect();
        const scroller = table.closest('.results') || table.parentElement;
        return {right: box.right, viewport: document.documentElement.clientWidth,
                page: document.documentElement.scrollWidth,
                hidden: scroller.scrollWidth - scroller.clientWidth};
    }""", selector)


def test_the_admin_submission_list_fits_1280_px_in_the_sites_words(page, site):
    from evaluator.tasks import get_task

    User = get_user_model()
    User.objects.create_superuser("admin", password=PASSWORD)
    task = Task.objects.get(name="softmax")
    # the widest a row gets: the longest task name, a long user name, three reason codes
    widest, _ = services.task_sync(spec=get_task("gelu_bias_residual"))
    maria = User.objects.create_user("maria_kernel_writer_from_the_north", password=PASSWORD)
    cpu = make_done(task, maria, speedup=0.00134, device_type="cpu")
    test_run = make_done(task, maria, mode="test")
    cheat = make_done(task, maria, speedup=1.4)
    services.submission_disqualify(submission=cheat, actor=User.objects.get(username="admin"),
                                   reason="a library call dressed as a kernel")
    make_done(widest, maria, verdict="flagged", speedup=2.2,
              codes=["too_fast_vs_compile", "no_kernel_launched", "suspicious_source"],
              reasons=["fast", "library", "source"])
    services.submission_create(user=maria, task=task, source=SOURCE, filename="k.py", mode="ranked")

    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, site.url, "admin", "/admin/login/?next=/admin/")
    for url in ("/admin/leaderboard/submission/", "/admin/leaderboard/flaggedsubmission/"):
        page.goto(f"{site.url}{url}")
        edges = right_edges(page, "#result_list")
        assert edges["right"] <= edges["viewport"] and edges["page"] <= edges["viewport"], (url, edges)
        assert edges["hidden"] <= 0, (url, edges)

    page.goto(f"{site.url}/admin/leaderboard/submission/")
    rows = {int(r.locator("th.field-id").inner_text()): r.inner_text()
            for r in page.locator("#result_list tbody tr").all()}
    assert "0.00134x" in rows[cpu.pk] and "0.00x" not in rows[cpu.pk] and "CPU" in rows[cpu.pk]
    assert "Verified (test run)" in rows[test_run.pk]
    assert "Disqualified" in rows[cheat.pk] and "Rejected" not in rows[cheat.pk]
    assert any("Queued" in text for text in rows.values())
    page.get_by_role("link", name="Disqualified", exact=True).click()
    page.wait_for_load_state()
    ids = [int(t) for t in page.locator("#result_list tbody th.field-id").all_inner_texts()]
    assert ids == [cheat.pk]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_upload_form_starts_on_ranked(page, site, width):
    get_user_model().objects.create_user("ann", password=PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, site.url, "ann")
    page.goto(f"{site.url}/upload/")
    assert page.is_checked("input[name=mode][value=ranked]")
    assert not page.is_checked("input[name=mode][value=test]")
    assert page.locator("input[name=mode]").first.get_attribute("value") == "ranked"
    assert "ranked (the default" in page.inner_text("#upload-form")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_a_result_page_says_its_state_in_the_sites_words(page, site):
    ann = get_user_model().objects.create_user("ann", password=PASSWORD)
    task = Task.objects.get(name="softmax")
    passed = make_done(task, ann, mode="test", device_type="cpu")
    flagged = make_done(task, ann, verdict="flagged", mode="ranked", codes=["no_kernel_launched"],
                        reasons=["library calls did a large share of the task's work"])
    assert Submission.objects.get(pk=flagged.pk).report["kernels_launched"]  # its own kernel ran
    log_in(page, site.url, "ann")
    page.goto(f"{site.url}/submissions/{passed.pk}/")
    assert page.inner_text("#verdict-title") == "Verified (test run)"
    assert page.inner_text("#verdict") == "Verified (test run)" and page.inner_text("#status") == "Done"
    page.goto(f"{site.url}/submissions/{flagged.pk}/")
    assert page.inner_text("#verdict-title") == "Flagged: awaiting review, not ranked until approved"
    reasons = page.inner_text("#result ul.reasons")
    assert "Library calls did a large share of the task's work" in reasons
    assert "No kernel" not in reasons
