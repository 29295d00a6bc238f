"""The site under its own Content-Security-Policy (script-src 'self'), in real Chromium: the chart
draws, the status polls, the forms post, and the browser reports no violation."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import Submission, Task

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "a-long-pass-phrase-9"
# installed through the DevTools protocol, so the policy does not apply to it
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
    e => window.__csp.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline')));
"""


@pytest.fixture
def strict_page(require_chromium, chromium):
    context = chromium.new_context()  # the policy enforced, unlike the flows' page
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.add_init_script(RECORD_VIOLATIONS)
    console = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    yield page, console
    context.close()


def test_the_pages_work_under_the_policy(strict_page, site):
    page, console = strict_page
    from web_helpers_browser import flagged_report

    user = get_user_model().objects.create_user("dora", password=PASSWORD)
    staff = get_user_model().objects.create_user("staff", password=PASSWORD, is_staff=True)
    task = Task.objects.get(name="softmax")
    ranked = Submission.objects.create(user=user, task=task, mode="ranked", device_type="cpu",
                                       source="def custom_kernel(x):\n    return x\n", filename="k.py",
                                       celery_task_id="t1")
    claimed = services.submission_claim(submission_id=ranked.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=flagged_report(task))
    services.submission_approve(submission=ranked, actor=staff)
    waiting = Submission.objects.create(user=user, task=task, mode="test", device_type="cpu",
                                        source="def custom_kernel(x):\n    return x\n", filename="k.py",
                                        celery_task_id="t2")

    # logging in: a form post under form-action 'self'
    page.goto(f"{site.url}/accounts/login/")
    page.fill("#id_username", "dora")
    page.fill("#id_password", PASSWORD)
    page.locator("form [type=submit]").click()
    page.wait_for_url(f"{site.url}/")

    # the task page: plotly and charts.js from static/, the chart drawn
    page.goto(f"{site.url}/tasks/softmax/?device=cpu")
    page.wait_for_selector("#chart-top[data-rendered='1']")
    assert page.locator("#chart-top .main-svg").count() >= 1

    # a waiting submission: htmx polls the status and swaps it in when it changes
    page.goto(f"{site.url}/submissions/{waiting.pk}/")
    services.submission_claim(submission_id=waiting.pk, worker="test")
    page.wait_for_selector("#status:text('running')", timeout=15_000)

    assert page.evaluate("window.__csp") == [] and console == [], (page.evaluate("window.__csp"), console)
