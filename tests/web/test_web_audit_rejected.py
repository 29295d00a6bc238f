"""The audit console's page of rejections, "who tried what": staff only, every mode, newest first,
with the reasons in words, and filters by reason code and by user; users with the most rejections
on top."""
import re

from django.urls import reverse

from web_helpers import make_done


def rejected(task, user, code, reason, *, mode="ranked", days_ago=0):
    return make_done(task, user, verdict="rejected", codes=[code], reasons=[reason], mode=mode, days_ago=days_ago)


def rows(html: str, table: str) -> list[str]:
    return re.findall(r'<a href="/audit/(\d+)/">', re.search(rf'<table id="{table}">.*?</table>', html, re.S).group(0))


def test_staff_only(client, task, owner):
    url = reverse("audit_rejected")
    r = client.get(url)
    assert r.status_code == 302 and r["Location"] == f"{reverse('login')}?next={url}"
    client.force_login(owner)
    assert client.get(url).status_code == 403


def test_who_tried_what_newest_first_in_every_mode_with_filters(client, task, owner, other, staff):
    old = rejected(task, owner, "aliases_input", "the output aliases an input", days_ago=2)
    cheat = rejected(task, other, "deferred_write", "the output changed after the call returned", mode="test",
                     days_ago=1)
    again = rejected(task, other, "mismatch", "3 of 4096 elements differ", days_ago=0)
    make_done(task, owner)  # verified: not a rejection
    client.force_login(staff)
    html = client.get(reverse("audit_rejected")).content.decode()
    assert rows(html, "rejected") == [str(again.pk), str(cheat.pk), str(old.pk)]
    assert "deferred_write" in html and "test" in html  # a test-mode try counts
    users = re.search(r'<table id="rejected-users">.*?</table>', html, re.S).group(0)
    assert users.index("other") < users.index("owner")  # two rejections before one
    by_reason = client.get(reverse("audit_rejected") + "?reason=deferred_write").content.decode()
    assert rows(by_reason, "rejected") == [str(cheat.pk)]
    by_user = client.get(reverse("audit_rejected") + "?user=owner").content.decode()
    assert rows(by_user, "rejected") == [str(old.pk)]
    nobody = client.get(reverse("audit_rejected") + "?user=" + "x" * 500).content.decode()
    assert rows(nobody, "rejected") == [] and "No rejection" in nobody


def test_the_review_queue_links_it(client, staff):
    client.force_login(staff)
    html = client.get(reverse("audit_queue")).content.decode()
    assert f'href="{reverse("audit_rejected")}"' in html
