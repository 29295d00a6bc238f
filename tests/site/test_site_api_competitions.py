"""Competitions in the JSON API, with the clock under the test's control (time-machine): the list,
one competition open and closed, uploads after the deadline kept out, a disqualification after the
close, the export (a JSON 404 before the freeze, the page's file after), unknown and malformed
names; and a submission's source, which follows selectors.code_open_reason.

Uploads go through services.submission_create and finish through the worker's claim and
store_result; only the evaluator's report is made up (site_helpers.report_for)."""
from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import services
from leaderboard.models import Competition
from leaderboard.services import competitions, opencode
from clock_helpers import T0
from site_helpers import finish, upload

pytestmark = pytest.mark.django_db

OPENS, CLOSES = T0 + timedelta(hours=1), T0 + timedelta(hours=3)
DETAIL = "/api/competitions/spring-race"
EXPORT = "/api/competitions/spring-race/export.jsonl"





def new_race(task, staff, slug="spring-race", opens=OPENS, closes=CLOSES) -> Competition:
    c = Competition(slug=slug, title=slug.replace("-", " ").title(), text="Fastest softmax wins.",
                    device_types=["cpu"], opens_at=opens, closes_at=closes)
    return competitions.competition_save(competition=c, tasks=[task], actor=staff)


@pytest.fixture
def race(task, staff, at):
    return new_race(task, staff)


def entries(body: dict) -> list[tuple]:
    [board] = body["boards"]
    return [(e["rank"], e["user"], e["submission"]) for e in board["entries"]]


def test_the_list_gives_states_times_in_utc_and_links(client, task, staff, race, at):
    later = new_race(task, staff, slug="summer-race", opens=T0 + timedelta(days=90), closes=T0 + timedelta(days=91))
    at(2)
    body = client.get("/api/competitions").json()["competitions"]
    assert [(c["slug"], c["state"]) for c in body] == [("spring-race", "open"), ("summer-race", "upcoming")]
    spring = body[0]
    assert spring["title"] == "Spring Race" and spring["tasks"] == ["softmax"] and spring["devices"] == ["cpu"]
    assert (spring["opens_at"], spring["closes_at"]) == ("2030-03-01T13:00:00+00:00", "2030-03-01T15:00:00+00:00")
    assert spring["url"] == f"http://testserver{DETAIL}"
    assert spring["page"] == "http://testserver/competitions/spring-race/"
    assert spring["final"] is False and spring["frozen_at"] is None and spring["export"] is None
    assert client.get(spring["page"]).status_code == 200

    at(4)
    client.get(DETAIL)  # the detail freezes a due competition, as its page does
    body = client.get("/api/competitions").json()["competitions"]
    assert [(c["slug"], c["state"]) for c in body] == [("summer-race", "upcoming"), ("spring-race", "closed")]
    assert body[1]["final"] is True and body[1]["frozen_at"] == "2030-03-01T16:00:00+00:00"
    assert body[1]["export"] == f"http://testserver{EXPORT}"
    assert later.slug == body[0]["slug"]


def test_an_open_competition_has_live_standings_without_uploads_from_outside_the_window(client, task, users, race, at):
    at(0.5)
    early = finish(upload(users["ann"], task), speedup=3.0)  # before the opening: never in
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.4)
    ben = finish(upload(users["ben"], task), speedup=1.2)
    finish(upload(users["cy"], task, mode="test"))  # test runs never rank
    body = client.get(DETAIL).json()
    assert body["state"] == "open" and body["final"] is False and body["text"] == "Fastest softmax wins."
    assert entries(body) == [(1, "ann", ann.pk), (2, "ben", ben.pk)]
    first = body["boards"][0]["entries"][0]
    assert (body["boards"][0]["task"], body["boards"][0]["device_type"]) == ("softmax", "cpu")
    assert first["speedup_vs_compile"] == pytest.approx(1.4) and first["speedup_vs_eager"] == pytest.approx(2.8)
    assert first["uploaded_at"] == "2030-03-01T14:00:00+00:00" and "rank_at_freeze" not in first
    assert first["code_open"] is False  # open code comes with the freeze
    assert first["page"] == f"http://testserver/submissions/{ann.pk}/"
    assert first["url"] == f"http://testserver/api/submissions/{ann.pk}"
    assert early.pk not in [e[2] for e in entries(body)]
    assert body["after_deadline"] == [] and "evaluating" not in body


def test_a_closed_competition_settles_then_freezes_and_late_uploads_stay_out(client, task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.2)
    at(2.99)
    ben_upload = upload(users["ben"], task)  # in time, evaluated after the close
    at(3.5)
    late = finish(upload(users["cy"], task), speedup=9.0)  # after the deadline
    body = client.get(DETAIL).json()
    assert (body["state"], body["final"], body["export"]) == ("closed", False, None)
    assert (body["evaluating"], body["awaiting_review"]) == (1, 0)
    assert entries(body) == [(1, "ann", ann.pk)]

    ben = finish(ben_upload, speedup=1.5)
    opencode.submission_withhold(submission=ann, actor=staff, reason="a licensed snippet")
    body = client.get(DETAIL).json()  # freezes
    assert body["final"] is True and body["frozen_at"] == "2030-03-01T15:30:00+00:00"
    assert "evaluating" not in body
    assert entries(body) == [(1, "ben", ben.pk), (2, "ann", ann.pk)]
    assert [e["rank_at_freeze"] for e in body["boards"][0]["entries"]] == [1, 2]
    assert [e["code_open"] for e in body["boards"][0]["entries"]] == [True, False]  # ann's is withheld
    [after] = body["after_deadline"]
    assert (after["submission"], after["user"], after["task"]) == (late.pk, "cy", "softmax")
    assert after["uploaded_at"] == "2030-03-01T15:30:00+00:00"
    assert late.pk not in [e[2] for e in entries(body)]


def test_a_disqualification_after_the_close_removes_the_entry(client, task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.5)
    ben = finish(upload(users["ben"], task), speedup=1.2)
    cy = finish(upload(users["cy"], task), speedup=1.1)
    at(4)
    assert entries(client.get(DETAIL).json()) == [(1, "ann", ann.pk), (2, "ben", ben.pk), (3, "cy", cy.pk)]
    at(5)
    services.submission_disqualify(submission=ann, actor=staff, reason="caches the output across calls")
    body = client.get(DETAIL).json()
    assert entries(body) == [(1, "ben", ben.pk), (2, "cy", cy.pk)]
    assert [e["rank_at_freeze"] for e in body["boards"][0]["entries"]] == [2, 3]
    [removed] = body["boards"][0]["removed"]
    assert (removed["submission"], removed["user"], removed["rank_at_freeze"]) == (ann.pk, "ann", 1)
    assert removed["reason"] == "caches the output across calls" and removed["removed_by"] == "staff"
    assert removed["removed_at"] == "2030-03-01T17:00:00+00:00"
    assert removed["code_open"] is False  # no longer an entry: its code closes again


def test_the_export_is_a_json_404_before_the_freeze_and_the_pages_file_after(client, task, users, race, at):
    at(2)
    finish(upload(users["ann"], task), speedup=1.5)
    pending = upload(users["ben"], task)
    for hours, state in ((0.5, "upcoming"), (2, "open"), (3.5, "closed")):
        at(hours)
        resp = client.get(EXPORT)
        assert resp.status_code == 404 and resp["Content-Type"] == "application/json"
        body = resp.json()
        assert body["state"] == state and body["final"] is False
        assert "not frozen yet" in body["error"] and "closes 2030-03-01 15:00 UTC" in body["error"]
    finish(pending, speedup=1.2)
    at(4)
    resp = client.get(EXPORT)  # freezes first
    assert resp.status_code == 200 and resp["Content-Type"].startswith("application/x-ndjson")
    assert resp["Content-Disposition"] == 'attachment; filename="spring-race.jsonl"'
    page = client.get("/competitions/spring-race/export.jsonl")
    out = io.StringIO()
    call_command("export", competition="spring-race", stdout=out)
    assert resp.content == page.content == out.getvalue().encode()
    assert len(resp.content.decode().splitlines()) == 2


def test_an_unknown_competition_is_a_json_404(client, db):
    for url in ("/api/competitions/nope", "/api/competitions/nope/export.jsonl"):
        resp = client.get(url)
        assert resp.status_code == 404 and resp["Content-Type"] == "application/json"
        assert resp.json()["error"] == "No competition named 'nope' (GET /api/competitions lists them)."


@pytest.mark.parametrize("name", ["bad%20name", "%00", "a" * 65, "%C3%BCber", "x.y", "%FF", "%ED%A0%80"])
def test_a_malformed_name_is_a_json_404_that_says_what_a_name_is(client, db, name):
    for url in (f"/api/competitions/{name}", f"/api/competitions/{name}/export.jsonl"):
        resp = client.get(url)
        assert resp.status_code == 404 and resp["Content-Type"] == "application/json", url
        assert "is not a competition's name" in resp.json()["error"]


def test_wrong_methods_are_refused(client, race):
    for url in ("/api/competitions", DETAIL, EXPORT):
        assert client.post(url).status_code == 405


def test_the_standings_cost_the_same_queries_for_2_entries_and_8(client, task, staff, at, django_assert_max_num_queries):
    User = get_user_model()
    new_race(task, staff)
    at(2)
    for i in range(2):
        finish(upload(User.objects.create_user(f"u{i}"), task), speedup=2 - i / 10)
    at(4)
    client.get(DETAIL)  # the freeze's own queries are not the page's
    with CaptureQueriesContext(connection) as captured:
        client.get(DETAIL)
    with_2 = len(captured)  # now: the next request empties the log it reads
    new_race(task, staff, slug="second", opens=T0 + timedelta(hours=5), closes=T0 + timedelta(hours=7))
    at(6)
    for i in range(2, 8):
        finish(upload(User.objects.create_user(f"u{i}"), task), speedup=2 - i / 10)
    at(8)
    client.get("/api/competitions/second")
    with django_assert_max_num_queries(with_2):
        body = client.get("/api/competitions/second").json()
    assert len(body["boards"][0]["entries"]) == 6 and all(e["code_open"] for e in body["boards"][0]["entries"])
    with django_assert_max_num_queries(with_2):
        assert len(client.get(DETAIL).json()["after_deadline"]) == 6


def auth(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Token {services.api_token_create(user=user)[1]}"}


def source(client, submission_id: int, **extra):
    return client.get(f"/api/submissions/{submission_id}/source", **extra)


def test_the_source_of_a_submission_follows_open_code(client, task, users, race, staff, at):
    at(2)
    ann = finish(upload(users["ann"], task), speedup=1.5)
    ben = finish(upload(users["ben"], task), speedup=1.2)
    tryout = finish(upload(users["ann"], task, mode="test"))
    as_cy, as_ann = auth(users["cy"]), auth(users["ann"])

    body = client.get(f"/api/submissions/{ann.pk}", **as_cy).json()  # a ranked entry: public, its code not
    assert body["verdict"] == "verified" and body["code_open"] is False and body["code_open_reason"] == ""
    assert body["source"] is None and "logs" not in body and "report" not in body
    assert client.get(f"/api/submissions/{ann.pk}").json()["source"] is None  # without a token too
    for extra in (as_cy, {}):
        resp = source(client, ann.pk, **extra)
        assert resp.status_code == 403 and "owner's and staff's" in resp.json()["error"]
    own = client.get(f"/api/submissions/{ann.pk}", **as_ann).json()
    assert own["source"] == f"http://testserver/api/submissions/{ann.pk}/source" and own["logs"] == "runner output"
    assert source(client, ann.pk, **as_ann).json()["source"] == ann.source
    resp = client.get(f"/api/submissions/{tryout.pk}", **as_cy)  # a test run: the owner's and staff's
    assert resp.status_code == 404 and "another user" not in resp.json()["error"]
    assert source(client, tryout.pk, **as_cy).status_code == 404
    assert source(client, tryout.pk).status_code == 401
    assert source(client, tryout.pk, **auth(staff)).json()["source"] == tryout.source

    at(4)
    client.get(DETAIL)  # the freeze opens both entries' code
    opencode.submission_withhold(submission=ben, actor=staff, reason="a licensed snippet")
    for extra in (as_cy, {}):
        body = client.get(f"/api/submissions/{ann.pk}", **extra).json()
        assert body["code_open"] is True and "Spring Race" in body["code_open_reason"]
        assert body["logs"] == "runner output" and "report" not in body  # the stored report stays theirs
        code = client.get(body["source"], **extra).json()
        assert code["source"] == ann.source and code["filename"] == "k.py" and code["code_open"] is True
        withheld = client.get(f"/api/submissions/{ben.pk}", **extra).json()
        assert withheld["code_open"] is False and withheld["source"] is None and "logs" not in withheld
        assert source(client, ben.pk, **extra).status_code == 403
    assert source(client, ben.pk, **auth(users["ben"])).json()["source"] == ben.source  # the owner still reads it
    services.submission_disqualify(submission=ann, actor=staff, reason="forged timing")
    assert source(client, ann.pk, **as_cy).status_code == 404  # no longer an entry: private again
    assert source(client, ann.pk, HTTP_AUTHORIZATION="Token nope").status_code == 401
    assert source(client, 999999, **as_cy).status_code == 404
