"""What people do in the browser, end to end, with real Chromium."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import Submission

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-pass-phrase-9"

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


def softmax_example() -> Path:
    """The softmax example kernel (examples/softmax.py once it exists; the pipeline tests' one)."""
    for path in (ROOT / "examples" / "softmax.py", ROOT / "tests" / "pipeline" / "kernels" / "softmax_rows.py"):
        if path.exists():
            return path
    raise AssertionError("no softmax example kernel")


def sign_up(page, base: str, username: str):
    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("#signup-form button[type=submit]")
    page.wait_for_url(f"{base}/")
    assert page.locator("header").get_by_text(username).is_visible()


def log_in(page, base: str, username: str, password: str, login_path="/accounts/login/"):
    page.goto(f"{base}{login_path}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.locator("form [type=submit]").click()
    page.wait_for_load_state()


def watch_status(page, timeout_s: float) -> list[str]:
    """The statuses the page shows, in order, until it shows a finished one (no reload)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = page.get_attribute("#result", "data-status")
        if not seen or seen[-1] != status:
            seen.append(status)
        if status in ("done", "failed"):
            return seen
        page.wait_for_timeout(250)
    raise AssertionError(f"still {seen[-1]} after {timeout_s} s; seen {seen}")


def board_users(page) -> list[str]:
    return [u.strip() for u in page.locator("#leaderboard tbody tr td:nth-child(2)").all_inner_texts()]


def test_sign_up_upload_watch_it_finish_live_and_find_it_ranked(page, site, worker):
    base = site.url
    sign_up(page, base, "alice")

    page.get_by_role("link", name="Upload").click()
    page.select_option("#id_task", "softmax")
    page.check("input[name=mode][value=ranked]")
    page.set_input_files("#id_file", str(softmax_example()))
    page.click("#upload-form button[type=submit]")
    page.wait_for_url(re.compile(r"/submissions/\d+/$"))
    submission = Submission.objects.get(user__username="alice")

    # From here on the page must never load again: only htmx swaps the status in.
    navigations, polls = [], []
    page.on("framenavigated", lambda frame: navigations.append(frame.url) if frame == page.main_frame else None)
    page.on("request", lambda req: polls.append(req.url) if req.url.endswith("/status/") else None)
    page.evaluate("window.__sameDocument = true")
    assert page.get_attribute("#result", "data-status") in ("queued", "running")

    seen = watch_status(page, timeout_s=600)
    submission.refresh_from_db()
    assert seen[-1] == "done", (seen, submission.error, submission.error_detail[-6000:], page.inner_text("#result"))
    assert page.evaluate("window.__sameDocument") is True and navigations == []
    assert len(polls) >= 1
    assert page.inner_text("#verdict") == "Verified", page.inner_text("#result")
    assert page.locator("#shapes tbody tr").count() >= 1
    assert page.get_attribute("#result", "hx-get") is None  # done: polling stopped
    n_polls = len(polls)
    page.wait_for_timeout(2500)
    assert len(polls) == n_polls

    # the task's CPU leaderboard and its chart
    page.get_by_role("link", name=submission.task.title).click()
    page.locator("#devices").get_by_role("link", name="CPU").click()
    page.wait_for_url(re.compile(r"device=cpu"))
    assert "alice" in board_users(page)
    assert page.locator("#mine").get_by_role("link").get_attribute("href").endswith(f"/submissions/{submission.pk}/")
    page.wait_for_selector("#chart-top[data-rendered='1']")
    assert "alice" in page.evaluate("document.getElementById('chart-top').data[0].x")
    assert page.locator("#chart-top .main-svg").count() >= 1


def test_the_status_updates_live_through_each_phase(page, site):
    """The htmx partial alone: the test moves the submission through its life with the services
    a worker uses, and the open page follows without a reload."""
    from web_helpers_browser import flagged_report

    user = get_user_model().objects.create_user("carol", password=PASSWORD)
    from leaderboard.models import Task

    task = Task.objects.get(name="softmax")
    sub = Submission.objects.create(user=user, task=task, mode="ranked", device_type="cpu",
                                    source=softmax_example().read_text(), filename="k.py", celery_task_id="t")
    log_in(page, site.url, "carol", PASSWORD)
    page.goto(f"{site.url}/submissions/{sub.pk}/")
    page.evaluate("window.__sameDocument = true")
    assert page.inner_text("#status") == "Queued"

    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    page.wait_for_function("document.getElementById('status').textContent === 'Running'", timeout=10_000)
    services.submission_set_phase(submission=claimed, phase="timing against torch.compile")
    page.wait_for_function("document.getElementById('phase').textContent.includes('torch.compile')", timeout=10_000)
    report = flagged_report(task, logs="<img src=x onerror=alert(1)>")
    assert services.submission_store_result(submission=claimed, report=report)
    page.wait_for_function("document.getElementById('status').textContent === 'Done'", timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.inner_text("#verdict") == "Flagged"
    assert "too_fast_vs_compile" in page.inner_text("#reasons")
    assert page.inner_text("#logs") == "<img src=x onerror=alert(1)>"  # shown as text, not markup
    assert page.locator("#logs img").count() == 0


def test_an_admin_approves_a_flagged_submission_and_it_ranks(page, site):
    from web_helpers_browser import flagged_report

    User = get_user_model()
    bob = User.objects.create_user("bob", password=PASSWORD)
    User.objects.create_superuser("admin", password="admin-pass-phrase-1")
    from leaderboard.models import Task

    task = Task.objects.get(name="softmax")
    sub = Submission.objects.create(user=bob, task=task, mode="ranked", device_type="cpu",
                                    source=softmax_example().read_text(), filename="k.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=flagged_report(task))

    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    assert "bob" not in board_users(page)

    log_in(page, site.url, "admin", "admin-pass-phrase-1", login_path="/admin/login/?next=/admin/")
    page.goto(f"{site.url}/admin/leaderboard/flaggedsubmission/")
    page.check(f"input[name=_selected_action][value='{sub.pk}']")
    page.select_option("select[name=action]", "approve")
    page.click("button[name=index]")
    page.fill("textarea[name=reason]", "read the kernel: an honest fused softmax")
    page.click("input[name=apply]")
    page.wait_for_load_state()
    assert "Approve: 1 done." in page.inner_text("body")

    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    assert board_users(page)[0] == "bob"
    page.wait_for_selector("#chart-top[data-rendered='1']")
    assert page.evaluate("document.getElementById('chart-top').data[0].x") == ["bob"]

    page.goto(f"{site.url}/submissions/{sub.pk}/")
    audit = page.inner_text("#audit")
    assert "approve" in audit and "admin" in audit and "read the kernel" in audit
    assert page.inner_text("#verdict") == "Verified"
