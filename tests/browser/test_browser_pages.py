"""The pages as a newcomer, an owner and an auditor see them in Chromium: the CPU board, the result
page and its chart, publishing code, the tokens page, the audit console, the error page, and no
page wider than a 390 px phone."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from browser_helpers import log_in, user

from leaderboard import services
from leaderboard.models import ApiToken, AuditEntry, Submission, Task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from web_helpers import make_done, report_for  # noqa: E402

pytestmark = [pytest.mark.browser]
# a line far wider than a phone, and a sha256: both must stay inside the viewport
LONG_SOURCE = ("import torch\nimport ctypes\n\n\ndef custom_kernel(x):\n"
               "    return torch.softmax(x, dim=-1)  # " + "a-very-long-comment-" * 12 + "\n")


def boxes_overlap(a, b) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_a_newcomer_on_a_cpu_site_lands_on_the_cpu_board_and_reads_a_tryout(page, site):
    task = Task.objects.get(name="softmax")
    alice = user("alice")
    sub = make_done(task, alice, speedup=0.0031, device_type="cpu")
    page.goto(f"{site.url}/")
    assert re.search(r"0\.00310x\s+on CPU", page.inner_text("#tasks"))
    page.get_by_role("link", name=task.title).first.click()
    assert page.inner_text("#devices .current") == "CPU"
    assert "alice" in page.inner_text("#leaderboard")
    assert "interpreter timings" in page.inner_text("#tryout")
    assert "M=256, N=1024 on CPU" in page.inner_text("#description")
    assert "8192" not in page.inner_text("#description")
    # each chart's title is a heading of the page that names the device, clear of the mode bar
    page.set_viewport_size({"width": 390, "height": 844})
    for chart in ("chart-top", "chart-history", "chart-floor"):
        page.wait_for_selector(f"#{chart}[data-rendered='1']")
        page.hover(f"#{chart}")
        assert page.locator(f"#{chart} .gtitle").count() == 0
        heading = page.locator(f"h3:right-of(#{chart}), h3:above(#{chart})").first
        assert heading.inner_text().endswith("on CPU")
        assert not boxes_overlap(page.locator(f"#{chart} .modebar").bounding_box(), heading.bounding_box())
    page.set_viewport_size({"width": 1280, "height": 900})
    # the row links to the entry, which anyone may read; the code stays private
    page.locator("#leaderboard").get_by_role("link", name="alice").click()
    page.wait_for_url(f"{site.url}/submissions/{sub.pk}/")
    assert page.inner_text("#verdict-title") == "Verified"
    assert "try-out" in page.inner_text("#verdict-why")
    assert page.locator("#code-private").is_visible()


def test_the_result_page_reads_in_ten_seconds_with_its_own_chart(page, site):
    task = Task.objects.get(name="softmax")
    bob = user("bob")
    sub = make_done(task, bob, speedup=1.3)
    report = dict(sub.report)
    report["shapes"][0].update(candidate_p10_ms=0.14, candidate_p90_ms=0.2, eager_p10_ms=0.26, eager_p90_ms=0.28,
                               compile_p10_ms=0.19, compile_p90_ms=0.2)
    Submission.objects.filter(pk=sub.pk).update(report=report)
    log_in(page, site.url, "bob")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{site.url}/submissions/{sub.pk}/")
        page.wait_for_selector("#chart-result[data-rendered='1']")
        data = page.evaluate("document.getElementById('chart-result').data.map(t => t.name)")
        assert data == ["your kernel", "eager PyTorch", "torch.compile", "roofline floor"]
        assert page.evaluate("document.getElementById('chart-result').data[0].error_y.array[0]") == pytest.approx(0.05)
        page.hover("#chart-result")  # the mode bar shows on hover
        modebar = page.locator("#chart-result .modebar").bounding_box()
        heading = page.get_by_role("heading", name="Time per benchmark shape on NVIDIA H200").bounding_box()
        assert modebar and heading and not boxes_overlap(modebar, heading)
        assert page.locator("#chart-result .gtitle").count() == 0
        for legend in page.locator("#chart-result .legendtext").all():
            assert not boxes_overlap(modebar, legend.bounding_box())
    assert page.inner_text("#verdict-title") == "Verified"
    assert "noisy run" in page.inner_text("#shapes")
    assert "Noisy run" in page.inner_text("#verdict-why")


def test_the_finished_time_and_chart_arrive_without_a_reload(page, site):
    task = Task.objects.get(name="softmax")
    carol = user("carol")
    sub = Submission.objects.create(user=carol, task=task, mode="ranked", device_type="cpu", source=LONG_SOURCE,
                                    filename="k.py", celery_task_id="t")
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    log_in(page, site.url, "carol")
    page.goto(f"{site.url}/submissions/{sub.pk}/")
    page.evaluate("window.__sameDocument = true")
    assert re.fullmatch(r"running for \d+ s", page.inner_text("#elapsed"))
    assert page.locator("#finished-at").count() == 0
    assert services.submission_store_result(submission=claimed, report=report_for(task, device="cpu", speedup=0.5))
    page.wait_for_selector("#finished-at", timeout=10_000)
    page.wait_for_selector("#chart-result[data-rendered='1']", timeout=10_000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.inner_text("#elapsed").startswith("took ")


def test_a_flagged_owner_is_told_it_awaits_review_and_publishes_the_code(page, site):
    task = Task.objects.get(name="softmax")
    dave = user("dave")
    sub = make_done(task, dave, speedup=2.1, verdict="flagged", codes=["too_fast_vs_compile"],
                    reasons=["2.10x faster than torch.compile"])
    log_in(page, site.url, "dave")
    page.goto(f"{site.url}/submissions/{sub.pk}/")
    assert page.inner_text("#verdict-title") == "Flagged: awaiting review, not ranked until approved"
    page.click("#publish-form button")  # the confirmation box is required: the browser holds the form back
    assert page.locator("#code-open").count() == 0
    page.check("#publish-confirm")
    page.click("#publish-form button")
    page.wait_for_selector("#code-open")
    page.context.clear_cookies()
    page.goto(f"{site.url}/submissions/{sub.pk}/")
    assert "custom_kernel" in page.inner_text(".highlight")


def test_the_tokens_page_makes_one_token_however_often_it_is_reloaded(page, site):
    user("erin")
    log_in(page, site.url, "erin")
    page.goto(f"{site.url}/accounts/profile/")
    page.fill("#id_name", "laptop")
    page.click("#token-form button")
    page.wait_for_url(f"{site.url}/accounts/profile/")
    key = page.inner_text("#new-token")
    assert key.startswith("lb_")
    page.reload()
    assert page.locator("#new-token").count() == 0
    assert ApiToken.objects.filter(user__username="erin").count() == 1


def test_an_auditor_approves_and_disqualifies_in_the_console(page, site):
    task = Task.objects.get(name="softmax")
    frank, gina = user("frank"), user("gina")
    user("auditor", is_staff=True)
    fair = make_done(task, frank, speedup=2.1, verdict="flagged", codes=["too_fast_vs_compile"],
                     reasons=["2.10x faster than torch.compile"], device_type="cpu")
    cheat = make_done(task, gina, speedup=3.0, verdict="flagged", codes=["suspicious_source"],
                      reasons=["suspicious source: line 2: imports ctypes"], device_type="cpu")
    Submission.objects.filter(pk=cheat.pk).update(source=LONG_SOURCE)
    log_in(page, site.url, "auditor")
    page.get_by_role("link", name="Audit", exact=True).click()
    page.wait_for_url(f"{site.url}/audit/")
    rows = page.locator("#queue tbody tr")
    assert rows.count() == 2
    assert "Much faster than torch.compile" in page.inner_text("#queue")

    page.get_by_role("link", name=f"#{fair.pk}").click()
    page.click("#approve")  # no reason: the browser asks for one, nothing is sent
    assert page.url.endswith(f"/audit/{fair.pk}/") and not AuditEntry.objects.exists()
    page.fill("#id_reason", "an honest fused softmax")
    page.click("#approve")
    page.wait_for_selector(".messages .success")
    assert page.inner_text("#audit-verdict") == "Verified"
    page.click("#public-link")
    assert "an honest fused softmax" in page.inner_text("#audit")
    page.click("#console-link")  # and back
    page.wait_for_url(f"{site.url}/audit/{fair.pk}/")

    page.goto(f"{site.url}/audit/")
    page.get_by_role("link", name=f"#{cheat.pk}").click()
    page.wait_for_url(f"{site.url}/audit/{cheat.pk}/")  # count() does not wait for the page
    assert page.locator(".highlight .hll").count() == 1 and "ctypes" in page.inner_text(".highlight .hll")
    page.fill("#id_reason", "reads the answer through ctypes")
    page.click("#disqualify")
    page.wait_for_selector(".messages .success")
    assert page.inner_text("#audit-verdict") == "Disqualified"
    assert [(e.action, e.actor.username) for e in AuditEntry.objects.order_by("created_at")] == [
        ("approve", "auditor"), ("disqualify", "auditor")]

    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    board = page.inner_text("#leaderboard")
    assert "frank" in board and "gina" not in board
    page.goto(f"{site.url}/audit/")
    assert "Nothing waiting" in page.inner_text("#queue")


def test_the_sites_own_404_page(page, site):
    response = page.goto(f"{site.url}/no/such/page/")
    assert response.status == 404
    assert page.locator("#not-found").is_visible() and page.locator(".site-header").is_visible()


def test_no_page_is_wider_than_a_390px_phone(page, site):
    task = Task.objects.get(name="softmax")
    henry = user("henry", is_staff=True)
    gpu = make_done(task, henry, speedup=1.2)
    cpu = make_done(task, henry, speedup=0.01, device_type="cpu")
    older = make_done(task, henry, speedup=2.0, verdict="flagged", codes=["suspicious_source"],
                      reasons=["suspicious source: line 2: imports ctypes " + "x" * 80], device_type="cpu")
    flagged = make_done(task, henry, speedup=2.0, verdict="flagged", codes=["suspicious_source"],
                        reasons=["suspicious source: line 2: imports ctypes"], device_type="cpu")
    for sub in (gpu, cpu, flagged):
        Submission.objects.filter(pk=sub.pk).update(source=LONG_SOURCE, logs="x" * 500)
    services.api_token_create(user=henry, name="a-token-with-a-long-name-" * 3)
    page.set_viewport_size({"width": 390, "height": 844})
    pages = ["/", "/tasks/softmax/", "/tasks/softmax/?device=cuda:NVIDIA%20H200", f"/submissions/{gpu.pk}/",
             f"/submissions/{cpu.pk}/", "/upload/", "/accounts/login/", "/accounts/signup/", "/no/such/page/"]
    staff_pages = [f"/submissions/{flagged.pk}/", "/accounts/profile/", "/audit/", f"/audit/{flagged.pk}/",
                   f"/audit/{older.pk}/"]
    wide = {}
    for path in pages:
        page.goto(site.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide[path] = width
    log_in(page, site.url, "henry")
    for path in pages[:6] + staff_pages:
        page.goto(site.url + path)
        page.wait_for_load_state("load")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            wide["(staff) " + path] = width
    assert not wide, wide
