"""A caller's own reads in the API are kept in the "answers" cache (Redis) under a stamp of their
submissions and sent with an ETag (leaderboard/api/owncache.py): a repeat is one round trip and
one cache read, a matching If-None-Match is a 304, and every change to what the answer shows is
in the very next answer, with a new ETag, without waiting for any age to run out."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cache_helpers import kept_keys
from leaderboard import services
from leaderboard.models import Submission
from site_helpers import every_change_shows, make_done, make_queued

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept_for_good(settings):
    # an unfinished answer kept for an hour: what shows below shows through the stamp, not an age
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 3600


def _get(client, key, path, **headers):
    resp = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", **headers)
    assert resp.status_code == 200, resp.content
    return resp.json()


def _kept_for(user) -> int:
    return sum(1 for key in kept_keys() if key.startswith(f"own:{user.pk}:"))


def test_every_change_shows_in_the_next_answer(client, task, owner, admin_user):
    key = services.api_token_create(user=owner)[1]
    done = make_done(task, owner, speedup=1.3)
    waiting = make_queued(task, owner)
    detail, listing = f"/api/submissions/{waiting.pk}", "/api/submissions"

    first = _get(client, key, listing)
    assert first["count"] == 2
    assert _get(client, key, detail)["status"] == "queued"
    assert _kept_for(owner) == 2
    assert client.get(listing, HTTP_AUTHORIZATION=f"Token {key}").content == client.get(
        listing, HTTP_AUTHORIZATION=f"Token {key}").content

    every_change_shows(lambda path: _get(client, key, path), task=task, owner=owner, admin_user=admin_user,
                       waiting=waiting, done=done)


def test_a_repeat_is_the_stamp_and_a_cache_read(client, task, owner):
    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner, speedup=1.3)
    for path in ("/api/submissions", f"/api/submissions/{sub.pk}"):
        first = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
        with CaptureQueriesContext(connection) as queries:
            again = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
        assert again.content == first.content and again["ETag"] == first["ETag"]
        assert len(queries) == 1, [q["sql"] for q in queries]  # the token check with the stamp


def test_a_matching_etag_is_a_304_and_a_write_makes_a_new_answer(client, task, owner, other, admin_user):
    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner, speedup=1.3)
    for path in ("/api/submissions", f"/api/submissions/{sub.pk}"):
        first = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
        assert first.status_code == 200 and first["ETag"].startswith('"') and "private" in first["Cache-Control"]
        unchanged = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=first["ETag"])
        assert unchanged.status_code == 304 and unchanged.content == b""
        assert unchanged["ETag"] == first["ETag"] and "private" in unchanged["Cache-Control"]
        # someone else's ETag, or none that matches, is a whole answer
        stale = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH='"own:0:nothing"')
        assert stale.status_code == 200 and stale.content == first.content

    etags = {path: client.get(path, HTTP_AUTHORIZATION=f"Token {key}")["ETag"]
             for path in ("/api/submissions", f"/api/submissions/{sub.pk}")}
    services.submission_disqualify(submission=sub, actor=admin_user, reason="cheats")
    for path, etag in etags.items():
        changed = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=etag)
        assert changed.status_code == 200 and changed["ETag"] != etag, path
        shown = changed.json()
        assert (shown["results"][0] if "results" in shown else shown)["hidden"] is True

    # the same address for another caller is another answer with another ETag
    theirs = services.api_token_create(user=other)[1]
    make_done(task, other, speedup=1.1)
    mine = client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {key}")
    them = client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {theirs}", HTTP_IF_NONE_MATCH=mine["ETag"])
    assert them.status_code == 200 and them["ETag"] != mine["ETag"]
    assert [r["id"] for r in them.json()["results"]] != [r["id"] for r in mine.json()["results"]]


def test_a_parameter_the_view_does_not_read_keys_no_new_answer(client, task, owner):
    key = services.api_token_create(user=owner)[1]
    for _ in range(3):
        make_done(task, owner)
    first = client.get("/api/submissions?per_page=2", HTTP_AUTHORIZATION=f"Token {key}")
    kept = kept_keys()
    for n in range(4):
        again = client.get(f"/api/submissions?per_page=2&x={uuid.uuid4().hex}", HTTP_AUTHORIZATION=f"Token {key}")
        assert again.status_code == 200 and again["ETag"] == first["ETag"] and again.content == first.content
    assert kept_keys() == kept
    # the parameters it reads key answers of their own
    second = client.get("/api/submissions?per_page=2&page=2", HTTP_AUTHORIZATION=f"Token {key}")
    assert second["ETag"] != first["ETag"] and len(kept_keys()) == len(kept) + 1


def test_a_kept_answer_is_the_built_one(client, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    for i in range(3):
        make_done(task, owner, speedup=1 + i / 10)
    make_queued(task, owner)
    paths = ["/api/submissions?per_page=2", "/api/submissions?per_page=2&page=2",
             *[f"/api/submissions/{s.pk}" for s in Submission.objects.filter(user=owner)]]
    kept = [client.get(p, HTTP_AUTHORIZATION=f"Token {key}").content for p in paths]
    again = [client.get(p, HTTP_AUTHORIZATION=f"Token {key}").content for p in paths]
    # an empty cache of its own: each answer built again
    settings.CACHES = {**settings.CACHES, "answers": {**settings.CACHES["answers"],
                                                       "KEY_PREFIX": f"lb-answers-test-{uuid.uuid4().hex}"}}
    built = [client.get(p, HTTP_AUTHORIZATION=f"Token {key}").content for p in paths]
    assert again == kept
    # the same answers, but for the elapsed time of the unfinished one
    strip = [{k: v for k, v in json.loads(b).items() if k != "elapsed_s"} for b in kept[2:]]
    assert strip == [{k: v for k, v in json.loads(b).items() if k != "elapsed_s"} for b in built[2:]]
    assert [json.loads(b)["count"] for b in kept[:2]] == [4, 4]


def test_an_unfinished_answer_is_kept_at_most_its_age(client, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    waiting = make_queued(task, owner)
    path = f"/api/submissions/{waiting.pk}"
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 1
    first = _get(client, key, path)["elapsed_s"]
    assert _get(client, key, path)["elapsed_s"] == first  # kept
    time.sleep(1.2)
    assert _get(client, key, path)["elapsed_s"] > first  # expired: built again, the time moved on
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 0  # never kept
    time.sleep(1.2)
    assert _kept_for(owner) == 0
    _get(client, key, path)
    assert _kept_for(owner) == 0


def test_only_the_owners_answers_are_kept_and_no_refusal(client, task, owner, other, admin_user):
    mine = make_done(task, owner, speedup=1.4)  # ranked: public
    theirs_key = services.api_token_create(user=other)[1]
    staff_key = services.api_token_create(user=admin_user)[1]
    for key in (theirs_key, staff_key):
        resp = client.get(f"/api/submissions/{mine.pk}", HTTP_AUTHORIZATION=f"Token {key}")
        assert resp.json()["id"] == mine.pk and "ETag" not in resp
    assert client.get("/api/submissions/999999", HTTP_AUTHORIZATION=f"Token {theirs_key}").status_code == 404
    assert client.get("/api/submissions?page=9", HTTP_AUTHORIZATION=f"Token {theirs_key}").status_code == 404
    assert client.get(f"/api/submissions/{mine.pk}").status_code == 200  # anonymous: nothing to key on
    assert [key for key in kept_keys() if key.startswith("own:")] == []


def test_a_revoked_token_or_a_deactivated_user_is_refused_at_once(client, task, owner):
    token, key = services.api_token_create(user=owner)
    sub = make_done(task, owner)
    path = f"/api/submissions/{sub.pk}"
    etag = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")["ETag"]
    assert _kept_for(owner) == 1
    assert services.api_token_revoke(user=owner, token_id=token.pk)
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=etag).status_code == 401
    token, key = services.api_token_create(user=owner)
    _get(client, key, path)
    get_user_model().objects.filter(pk=owner.pk).update(is_active=False)
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
