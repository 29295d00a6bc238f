"""The competition pages, the console's and the admin's competition forms, withholding code, and
the export download, with the clock moved by time-machine."""
from __future__ import annotations

import io
import json
import re
from datetime import datetime, timedelta, timezone as dt_timezone

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from leaderboard import services
from leaderboard.models import AuditEntry, Competition
from leaderboard.services import competitions
from clock_helpers import T0
from web_helpers import SOURCE, upload_done





@pytest.fixture
def race(task, staff, at):
    c = Competition(slug="spring-race", title="Spring <b>race</b>", text="Line one\n<script>alert(1)</script>",
                    device_types=["cpu"], opens_at=T0 + timedelta(hours=1), closes_at=T0 + timedelta(hours=3))
    return competitions.competition_save(competition=c, tasks=[task], actor=staff)


def table(html: str, css_id: str) -> str:
    found = re.search(rf'<table[^>]*id="{css_id}".*?</table>', html, re.S)
    return found.group(0) if found else ""


def test_an_upcoming_competition_counts_down_to_its_opening_in_utc_times(client, race, at):
    at(0.5)
    html = client.get(reverse("competition_detail", args=["spring-race"])).content.decode()
    assert 'data-state="upcoming"' in html
    assert '<time datetime="2030-03-01T13:00:00Z">2030-03-01 13:00 UTC</time>' in html
    assert 'data-countdown="2030-03-01T13:00:00Z"' in html and ">30 min 0 s<" in html
    assert "Spring &lt;b&gt;race&lt;/b&gt;" in html and "&lt;script&gt;alert(1)" in html
    assert "<script>alert(1)" not in html
    assert 'src="/static/js/localtime.js"' in html
    listing = client.get(reverse("competition_list")).content.decode()
    assert "/competitions/spring-race/" in listing and "upcoming" in listing


def test_standings_late_uploads_freeze_removal_and_export(client, task, owner, other, staff, race, at):
    at(2)
    mine = upload_done(task, owner, speedup=1.4)
    theirs = upload_done(task, other, speedup=1.2)
    html = client.get(reverse("competition_detail", args=["spring-race"])).content.decode()
    assert 'data-state="open"' in html and 'data-countdown="2030-03-01T15:00:00Z"' in html
    rows = re.findall(r'/submissions/(\d+)/">(\w+)</a>', html)
    assert rows == [(str(mine.pk), "owner"), (str(theirs.pk), "other")]
    export = reverse("competition_export", args=["spring-race"])
    assert client.get(export).status_code == 409

    at(4)
    late = upload_done(task, other, speedup=3.0)
    html = client.get(reverse("competition_detail", args=["spring-race"])).content.decode()  # freezes
    assert 'data-state="frozen"' in html and 'id="export-link"' in html
    assert f"/submissions/{late.pk}/" in table(html, "late") and "after the deadline" in table(html, "late")
    assert f"/submissions/{late.pk}/" not in html.split('id="late"')[0]
    page = client.get(reverse("submission_detail", args=[late.pk])).content.decode()
    assert "after the deadline" in page and "/competitions/spring-race/" in page

    response = client.get(export)
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="spring-race.jsonl"'
    assert response["Content-Type"].startswith("application/x-ndjson")
    out = io.StringIO()
    call_command("export", competition="spring-race", stdout=out)
    assert response.content.decode() == out.getvalue()  # one function writes both
    lines = [json.loads(x) for x in out.getvalue().splitlines()]
    assert [(x["user"], x["source"]) for x in lines] == [("owner", SOURCE), ("other", SOURCE)]

    at(5)
    services.submission_disqualify(submission=mine, actor=staff, reason="reads the <answer> from disk")
    html = client.get(reverse("competition_detail", args=["spring-race"])).content.decode()
    removed = table(html, "removed")
    assert f"#{mine.pk} by owner" in removed and "reads the &lt;answer&gt; from disk" in removed
    assert '<time datetime="2030-03-01T17:00:00Z">' in removed
    standings = html.split('id="removed"')[0]
    assert re.findall(r'/submissions/(\d+)/">(\w+)</a>', standings) == [(str(theirs.pk), "other")]


def test_staff_create_a_competition_in_the_console(client, task, owner, staff, at):
    url = reverse("console_competition_create")
    for console in (reverse("console_competitions"), url):  # the site's own door, as the rest of /audit/
        anonymous = client.get(console)
        assert anonymous.status_code == 302
        assert anonymous["Location"] == f"{reverse('login')}?next={console}"
    client.force_login(owner)
    assert client.get(url).status_code == 403  # logged in, not staff: logging in again would not help
    client.force_login(staff)
    assert client.get(url).status_code == 200
    bad = client.post(url, {"slug": "r", "title": "R", "device_types": ["cpu"],
                            "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-02T09:00"})
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "Choose at least one task." in text and "The closing time must be after the opening time." in text
    assert not Competition.objects.exists()
    bad = client.post(url, {"slug": "r", "title": "R", "tasks": [task.pk], "device_types": ["nowhere"],
                            "opens_at": "soon", "closes_at": "2030-03-02T09:00"})
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()
    ok = client.post(url, {"slug": "summer", "title": "Summer", "text": "go", "tasks": [task.pk],
                           "device_types": ["cpu", "cuda:NVIDIA H200"],
                           "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-03T10:00"})
    assert ok.status_code == 302 and ok["Location"] == "/competitions/summer/"
    c = Competition.objects.get(slug="summer")
    assert list(c.tasks.all()) == [task] and c.device_types == ["cpu", "cuda:NVIDIA H200"]
    assert c.created_by == staff and c.opens_at == datetime(2030, 3, 2, 10, tzinfo=dt_timezone.utc)


def test_a_frozen_competition_keeps_its_rules_but_not_its_words(client, task, owner, staff, race, at):
    at(2)
    entry = upload_done(task, owner, speedup=1.3)
    at(4)
    competitions.competitions_freeze_due()
    root = get_user_model().objects.create_superuser("root", password="pw-root-1234")
    client.force_login(root)
    admin_page = client.get(reverse("admin:leaderboard_competition_change", args=[race.pk])).content.decode()
    assert f"#{entry.pk} softmax by owner" in admin_page and "Fixed: the standings are frozen." in admin_page
    assert 'name="_delete"' not in admin_page and "/delete/" not in admin_page
    url = reverse("console_competition_edit", args=["spring-race"])
    client.force_login(staff)
    form = client.get(url).content.decode()
    assert re.search(r'<input type="datetime-local" name="closes_at"[^>]*disabled', form)
    r = client.post(url, {"slug": "spring-race", "title": "Spring race 2030", "text": "final",
                          "tasks": [], "device_types": [], "opens_at": "2031-01-01T00:00",
                          "closes_at": "2031-01-02T00:00"})
    assert r.status_code == 302
    race.refresh_from_db()
    assert race.title == "Spring race 2030" and race.closes_at == T0 + timedelta(hours=3)
    assert list(race.tasks.all()) == [task] and race.device_types == ["cpu"]


def test_the_admin_creates_a_competition_through_the_same_form(client, task, at):
    admin = get_user_model().objects.create_superuser("root", password="pw-root-1234")
    client.force_login(admin)
    url = reverse("admin:leaderboard_competition_add")
    assert client.get(url).status_code == 200
    r = client.post(url, {"slug": "adm", "title": "Admin race", "text": "", "tasks": [task.pk],
                          "device_types": ["cpu"], "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-01T10:00",
                          "entries-TOTAL_FORMS": "0", "entries-INITIAL_FORMS": "0"})
    assert r.status_code == 200 and "The closing time must be after the opening time." in r.content.decode()
    r = client.post(url, {"slug": "adm", "title": "Admin race", "text": "", "tasks": [task.pk],
                          "device_types": ["cpu"], "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-03T10:00",
                          "entries-TOTAL_FORMS": "0", "entries-INITIAL_FORMS": "0"})
    assert r.status_code == 302, r.content.decode()[:2000]
    c = Competition.objects.get(slug="adm")
    assert list(c.tasks.all()) == [task] and c.created_by == admin


def test_staff_withhold_code_from_the_console_and_release_it(client, task, owner, other, staff, at):
    sub = upload_done(task, owner, speedup=1.2)
    sub = services.submission_publish(submission=sub, actor=owner)
    page = reverse("submission_detail", args=[sub.pk])
    client.force_login(other)
    assert "custom_kernel" in client.get(page).content.decode()
    client.force_login(staff)
    decide = reverse("audit_code_decide", args=[sub.pk])
    r = client.post(decide, {"action": "withhold", "reason": ""}, follow=True)
    assert "Give a reason to withhold the code" in r.content.decode()
    client.post(decide, {"action": "withhold", "reason": "a licensed snippet"})
    assert AuditEntry.objects.filter(submission=sub, action="withhold", reason="a licensed snippet").exists()
    assert "Withheld" in client.get(reverse("audit_item", args=[sub.pk])).content.decode()
    client.force_login(other)
    html = client.get(page).content.decode()
    assert "custom_kernel" not in html and 'id="code-private"' in html
    client.force_login(owner)
    assert "custom_kernel" in client.get(page).content.decode()
    client.force_login(staff)
    r = client.post(decide, {"action": "release", "reason": ""}, follow=True)
    assert "no longer withheld" in r.content.decode()
    client.force_login(other)
    assert "custom_kernel" in client.get(page).content.decode()
    client.force_login(staff)
    r = client.post(decide, {"action": "release"}, follow=True)
    assert "is not withheld" in r.content.decode()


def test_the_upload_form_and_the_result_page_say_what_entering_means(client, task, owner, race, at):
    client.force_login(owner)
    at(0.5)  # upcoming: nothing to enter yet
    assert "competition-note" not in client.get(reverse("upload")).content.decode()
    at(2)
    html = client.get(reverse("upload")).content.decode()
    note = re.search(r'<p class="panel competition-note" id="competition-spring-race">.*?</p>', html, re.S).group(0)
    assert "Spring &lt;b&gt;race&lt;/b&gt;" in note and "on softmax" in note
    assert '<time datetime="2030-03-01T15:00:00Z">' in note
    assert "A ranked upload to this task enters it, and when it closes the code of every entry" in note
    assert "opens to every visitor" in note
    ranked = upload_done(task, owner, speedup=1.2)
    page = client.get(reverse("submission_detail", args=[ranked.pk])).content.decode()
    assert "/competitions/spring-race/" in page
    assert "when the competition closes the code of every entry in its final standings opens to every visitor" in page
    test_run = upload_done(task, owner, mode="test")
    assert "competition-note" not in client.get(reverse("submission_detail", args=[test_run.pk])).content.decode()


def test_a_closed_competition_waits_for_flagged_reviews_and_says_which(client, task, owner, other, staff, race, at):
    at(2)
    upload_done(task, owner, speedup=1.2)
    flagged = upload_done(task, other, speedup=1.9, verdict="flagged", codes=("too_fast_vs_compile",),
                          reasons=("much faster than torch.compile",))
    at(4)
    url = reverse("competition_detail", args=["spring-race"])
    html = client.get(url).content.decode()  # a visitor: how many, not whose
    assert 'data-state="settling"' in html and 'id="export-link"' not in html
    pending = re.search(r'<div class="panel" id="pending">.*?</div>', html, re.S).group(0)
    assert "1 flagged result awaits an audit's review" in pending
    assert f"#{flagged.pk}" not in pending and "other" not in pending

    client.force_login(staff)
    html = client.get(url).content.decode()
    assert f'<a href="/audit/{flagged.pk}/">#{flagged.pk}</a> by other (softmax)' in html
    queue = client.get(reverse("audit_queue")).content.decode()
    waiting = re.search(r'<div class="panel" id="freezes-waiting">.*?</div>', queue, re.S).group(0)
    assert "/competitions/spring-race/" in waiting and f'<a href="/audit/{flagged.pk}/">#{flagged.pk}</a>' in waiting
    row = re.search(rf'<tr>\s*<td><a href="/audit/{flagged.pk}/">.*?</tr>', queue, re.S).group(0)
    assert "its standings wait for this review" in row

    client.post(reverse("audit_decide", args=[flagged.pk]), {"action": "approve", "reason": "checked by hand"})
    html = client.get(url).content.decode()  # freezes now
    assert 'data-state="frozen"' in html
    assert re.findall(r'/submissions/(\d+)/">(\w+)</a>', html)[0] == (str(flagged.pk), "other")
    assert 'id="freezes-waiting"' not in client.get(reverse("audit_queue")).content.decode()


def test_the_late_list_and_note_end_after_the_grace_period(client, task, owner, other, race, at, settings):
    settings.COMPETITION_LATE_DAYS = 14
    at(3 + 24 * 13)
    within = upload_done(task, owner, speedup=2.0)
    at(3 + 24 * 15)
    later = upload_done(task, other, speedup=2.5)
    html = client.get(reverse("competition_detail", args=["spring-race"])).content.decode()
    late = table(html, "late")
    assert f"/submissions/{within.pk}/" in late and f"/submissions/{later.pk}/" not in late
    assert "Uploaded in the 14 days after the close" in html
    assert "after the deadline" in client.get(reverse("submission_detail", args=[within.pk])).content.decode()
    page = client.get(reverse("submission_detail", args=[later.pk])).content.decode()
    assert "after the deadline" not in page and "/competitions/spring-race/" not in page


def test_the_console_never_offers_a_bare_cuda(client, task, staff, at, settings):
    settings.WORKER_DEVICE, settings.WORKER_GPU_NAME = "cuda", ""  # a GPU site that does not name its GPU
    queued = services.submission_create(user=staff, task=task, source=SOURCE, filename="k.py", mode="ranked")
    assert queued.device_type == "cuda"  # queued under the bare name; its result is stored as cuda:<GPU>
    client.force_login(staff)
    url = reverse("console_competition_create")
    form = client.get(url).content.decode()
    offered = re.findall(r'name="device_types" value="([^"]*)"', form)
    assert "cuda" not in offered and "cuda:NVIDIA H200" in offered and "cpu" in offered
    r = client.post(url, {"slug": "gpu", "title": "GPU", "tasks": [task.pk], "device_types": ["cuda"],
                          "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-03T10:00"})
    assert r.status_code == 400 and "Select a valid choice" in r.content.decode()
    assert not Competition.objects.exists()


def test_the_console_refuses_an_opening_in_the_past(client, task, staff, at):
    at(24)  # 2030-03-02 12:00
    client.force_login(staff)
    r = client.post(reverse("console_competition_create"), {
        "slug": "late", "title": "Late", "tasks": [task.pk], "device_types": ["cpu"],
        "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-03T10:00"})
    assert r.status_code == 400 and "The opening time is in the past" in r.content.decode()
    assert not Competition.objects.exists()
