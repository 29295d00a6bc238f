"""The audit console: staff only; the queue by age and reason; an item with its reasons in words,
the code with the scan's findings marked, timing, earlier submissions and a diff; decisions that
need a reason and write the audit log."""
import re

import pytest
from django.urls import reverse

from leaderboard.models import AuditEntry, Submission
from web_helpers import make_done

SUSPICIOUS = "import torch\nimport ctypes\n\ndef custom_kernel(x):\n    return torch.softmax(x, -1)\n"


def flagged(task, user, *, days_ago=0, codes=("too_fast_vs_compile",), reasons=("2.10x faster than torch.compile",),
            source=None):
    sub = make_done(task, user, speedup=2.1, verdict="flagged", codes=list(codes), reasons=list(reasons),
                    days_ago=days_ago)
    if source is not None:
        Submission.objects.filter(pk=sub.pk).update(source=source)
        sub.refresh_from_db()
    return sub


def test_the_console_is_for_staff_only(client, settings, task, owner):
    """A visitor who is not logged in is sent to the site's login page (not the admin's), and
    back after it; a logged-in user who is not staff gets the site's 403 page."""
    settings.DEBUG = False
    sub = flagged(task, owner)
    for name, args in (("audit_queue", []), ("audit_item", [sub.pk])):
        url = reverse(name, args=args)
        r = client.get(url)
        assert r.status_code == 302 and r["Location"] == f"{reverse('login')}?next={url}"
        client.force_login(owner)
        r = client.get(url)
        assert r.status_code == 403 and 'id="forbidden"' in r.content.decode()
        client.logout()
    r = client.post(reverse("audit_decide", args=[sub.pk]), {"action": "approve", "reason": "mine"})
    assert r.status_code == 302 and r["Location"].startswith(reverse("login"))
    client.force_login(owner)
    assert client.post(reverse("audit_decide", args=[sub.pk]), {"action": "approve", "reason": "mine"}).status_code == 403
    sub.refresh_from_db()
    assert sub.verdict == "flagged"


def test_the_queue_is_oldest_first_with_reasons_in_words_and_a_filter(client, task, owner, other, staff):
    newer = flagged(task, owner, days_ago=1)
    older = flagged(task, other, days_ago=3, codes=["suspicious_source"], reasons=["suspicious source: line 2: ctypes"])
    make_done(task, owner)  # verified: not in the queue
    client.force_login(staff)
    html = client.get(reverse("audit_queue")).content.decode()
    rows = re.findall(r'<a href="/audit/(\d+)/">', re.search(r'<table id="queue">.*?</table>', html, re.S).group(0))
    assert rows == [str(older.pk), str(newer.pk)]
    assert "3 d " in html and "Much faster than torch.compile" in html and "constructs that can game" in html
    only = client.get(reverse("audit_queue") + "?reason=suspicious_source").content.decode()
    table = re.search(r'<table id="queue">.*?</table>', only, re.S).group(0)
    assert f"/audit/{older.pk}/" in table and f"/audit/{newer.pk}/" not in table


def test_an_item_has_one_reason_box_for_the_verdict_and_the_code(client, task, owner, staff):
    """The decision and withholding the code share one reason box: two boxes both labelled
    "Reason" left the auditor guessing which one a button reads."""
    sub = flagged(task, owner)
    client.force_login(staff)
    html = client.get(reverse("audit_item", args=[sub.pk])).content.decode()
    assert len(re.findall(r"<textarea", html)) == 1
    assert len(re.findall(r"<label[^>]*>Reason", html)) == 1
    form = re.search(r'<form[^>]*id="decision-form".*?</form>', html, re.S).group(0)
    code_action = reverse("audit_code_decide", args=[sub.pk])
    assert re.search(rf'id="withhold"[^>]*formaction="{code_action}"', form)
    # what that button sends: the one box's reason, to the code's own address
    client.post(code_action, {"action": "withhold", "reason": "a licensed snippet"})
    html = client.get(reverse("audit_item", args=[sub.pk])).content.decode()
    form = re.search(r'<form[^>]*id="decision-form".*?</form>', html, re.S).group(0)
    assert len(re.findall(r"<textarea", html)) == 1
    assert re.search(rf'id="release"[^>]*formaction="{code_action}" formnovalidate', form)


def test_an_item_shows_code_with_findings_timing_history_and_a_diff(client, task, owner, staff):
    first = flagged(task, owner, days_ago=2, source="import torch\n\ndef custom_kernel(x):\n    return x\n")
    sub = flagged(task, owner, codes=["suspicious_source"], reasons=["suspicious source: line 2: imports ctypes"],
                  source=SUSPICIOUS)
    client.force_login(staff)
    html = client.get(reverse("audit_item", args=[sub.pk])).content.decode()
    assert "The code uses constructs that can game a benchmark." in html and "imports ctypes" in html
    marked = re.findall(r'<span class="hll"><span class="linenos">\s*(\d+)</span>', html)
    assert marked == ["2"]
    assert 'href="#L-2"' in html
    assert re.search(r'<table id="shapes">.*0\.150 ms', html, re.S)
    assert f'href="/audit/{first.pk}/"' in html
    diff = re.search(r'<pre class="diff" id="diff">(.*?)</pre>', html, re.S).group(1)
    assert '<span class="add">+import ctypes</span>' in diff and '<span class="del">-    return x</span>' in diff
    assert f'href="/submissions/{sub.pk}/"' in html  # to the public page
    page = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert f'href="/audit/{sub.pk}/"' in page  # and back


@pytest.mark.parametrize("action, verdict, hidden, status", [
    ("approve", "verified", False, "done"),
    ("disqualify", "rejected", True, "done"),
    ("rerun", "", False, "queued"),
])
def test_each_decision_asks_for_a_reason_and_writes_the_audit_log(client, task, owner, staff, action, verdict, hidden,
                                                                  status, django_capture_on_commit_callbacks):
    sub = flagged(task, owner)
    client.force_login(staff)
    url = reverse("audit_decide", args=[sub.pk])
    r = client.post(url, {"action": action, "reason": "   "}, follow=True)
    assert "Give a reason" in r.content.decode()
    sub.refresh_from_db()
    assert sub.verdict == "flagged" and not AuditEntry.objects.exists()
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(url, {"action": action, "reason": "read the kernel"}, follow=True)
    assert r.redirect_chain[-1][0] == reverse("audit_item", args=[sub.pk])
    sub.refresh_from_db()
    assert (sub.verdict, sub.hidden, sub.status) == (verdict, hidden, status)
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor, entry.reason) == (action, staff, "read the kernel")
    assert "The audit log has your reason" in r.content.decode()


def test_a_decision_that_does_not_apply_is_refused_with_a_message(client, task, owner, staff):
    sub = make_done(task, owner)  # verified already
    client.force_login(staff)
    r = client.post(reverse("audit_decide", args=[sub.pk]), {"action": "approve", "reason": "x"}, follow=True)
    assert f"Only a flagged result can be approved: #{sub.pk} is Verified." in r.content.decode()
    assert not AuditEntry.objects.exists()
    assert client.post(reverse("audit_decide", args=[sub.pk]), {"action": "delete", "reason": "x"}).status_code == 302
    assert client.get(reverse("audit_item", args=[999999])).status_code == 404


def test_the_item_offers_only_the_decisions_that_apply(client, task, owner, staff):
    from leaderboard import services

    def buttons(sub):
        html = client.get(reverse("audit_item", args=[sub.pk])).content.decode()
        found = set(re.findall(r'<button type="submit" name="action" value="(approve|disqualify|rerun)"', html))
        heading = re.search(r"<h2>(Why it is here|Why it failed|Its reasons)</h2>", html).group(1)
        return found, heading, html

    client.force_login(staff)
    assert buttons(flagged(task, owner))[:2] == ({"approve", "disqualify", "rerun"}, "Why it is here")
    assert buttons(make_done(task, owner, verdict="rejected", codes=["mismatch"], reasons=["wrong answer"]))[:2] == (
        {"disqualify", "rerun"}, "Its reasons")
    assert buttons(make_done(task, owner))[0] == {"disqualify", "rerun"}
    cheat = services.submission_disqualify(submission=flagged(task, owner), actor=staff, reason="copied")
    assert buttons(cheat)[0] == {"rerun"}
    queued = Submission.objects.create(user=owner, task=task, mode="ranked", device_type="cpu", source="x = 1\n",
                                       celery_task_id="t")
    found, _, html = buttons(queued)
    assert found == set() and "No decision on its result applies while it is Queued." in html
    # private code: withholding it is for later, and the button says so
    assert "Keep the code private even if it is published later" in buttons(make_done(task, owner))[2]


def test_the_queue_holds_what_can_rank(client, task, owner, staff):
    ranked = flagged(task, owner)
    test_run = make_done(task, owner, mode="test", verdict="flagged", codes=["no_kernel_launched"],
                         reasons=["no kernel ran"])
    client.force_login(staff)
    html = client.get(reverse("audit_queue")).content.decode()
    assert f'>#{ranked.pk}<' in html and f'>#{test_run.pk}<' not in html
    # still found, and decided on, one by one
    assert client.get(reverse("audit_item", args=[test_run.pk])).status_code == 200
