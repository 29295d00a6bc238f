"""A caller's own reads in the API are kept per process under a stamp of their submissions
(leaderboard/api/owncache.py): a repeat is one round trip, and every change to what the answer
shows is in the very next answer, without waiting for any age to run out."""
from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.api import owncache
from leaderboard.models import Submission
from site_helpers import every_change_shows, make_done, make_queued

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept_for_good(settings):
    # an unfinished answer kept for an hour: what shows below shows through the stamp, not an age
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 3600
    owncache.clear()
    yield
    owncache.clear()


def _get(client, key, path):
    resp = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code == 200, resp.content
    return resp.json()


def _kept_for(user) -> int:
    return sum(1 for (user_id, _) in owncache._entries if user_id == user.pk)


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


def test_a_kept_answer_is_the_built_one(client, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    for i in range(3):
        make_done(task, owner, speedup=1 + i / 10)
    make_queued(task, owner)
    paths = ["/api/submissions?per_page=2", "/api/submissions?per_page=2&page=2",
             *[f"/api/submissions/{s.pk}" for s in Submission.objects.filter(user=owner)]]
    kept = [client.get(p, HTTP_AUTHORIZATION=f"Token {key}").content for p in paths]
    again = [client.get(p, HTTP_AUTHORIZATION=f"Token {key}").content for p in paths]
    settings.API_OWN_CACHE_MAX_BYTES = 0  # nothing kept: each answer built as before
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
    first = _get(client, key, path)["elapsed_s"]
    assert _get(client, key, path)["elapsed_s"] == first  # kept
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 0
    assert _get(client, key, path)["elapsed_s"] > first  # too old: built again, the time moved on


def test_only_the_owners_answers_are_kept_and_no_refusal(client, task, owner, other, admin_user):
    mine = make_done(task, owner, speedup=1.4)  # ranked: public
    theirs_key = services.api_token_create(user=other)[1]
    staff_key = services.api_token_create(user=admin_user)[1]
    assert _get(client, theirs_key, f"/api/submissions/{mine.pk}")["id"] == mine.pk
    assert _get(client, staff_key, f"/api/submissions/{mine.pk}")["id"] == mine.pk
    assert client.get("/api/submissions/999999", HTTP_AUTHORIZATION=f"Token {theirs_key}").status_code == 404
    assert client.get("/api/submissions?page=9", HTTP_AUTHORIZATION=f"Token {theirs_key}").status_code == 404
    assert client.get(f"/api/submissions/{mine.pk}").status_code == 200  # anonymous: nothing to key on
    assert list(owncache._entries) == []


def test_a_revoked_token_or_a_deactivated_user_is_refused_at_once(client, task, owner):
    token, key = services.api_token_create(user=owner)
    sub = make_done(task, owner)
    path = f"/api/submissions/{sub.pk}"
    _get(client, key, path)
    assert _kept_for(owner) == 1
    assert services.api_token_revoke(user=owner, token_id=token.pk)
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    token, key = services.api_token_create(user=owner)
    _get(client, key, path)
    get_user_model().objects.filter(pk=owner.pk).update(is_active=False)
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401


def test_the_kept_answers_stay_within_their_bytes(client, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    subs = [make_done(task, owner) for _ in range(10)]
    one = len(client.get(f"/api/submissions/{subs[0].pk}", HTTP_AUTHORIZATION=f"Token {key}").content)
    owncache.clear()
    # room for eight (an answer above an eighth of the room is never kept)
    settings.API_OWN_CACHE_MAX_BYTES = one * 8 + one // 2
    for sub in subs:
        _get(client, key, f"/api/submissions/{sub.pk}")
    assert _kept_for(owner) == 8 and owncache._size["bytes"] <= settings.API_OWN_CACHE_MAX_BYTES
    # the least recently used went first
    assert [path.rsplit("/", 1)[1] for (_, path) in owncache._entries] == [str(s.pk) for s in subs[2:]]


def test_a_matching_etag_is_a_304_and_a_write_makes_a_new_answer(client, task, owner, other, admin_user):
    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner, speedup=1.3)
    paths = ("/api/submissions", f"/api/submissions/{sub.pk}")
    for path in paths:
        first = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
        assert first.status_code == 200 and first["ETag"].startswith('"') and "private" in first["Cache-Control"]
        unchanged = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=first["ETag"])
        assert unchanged.status_code == 304 and unchanged.content == b""
        assert unchanged["ETag"] == first["ETag"] and "private" in unchanged["Cache-Control"]
        stale = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH='"0123"')
        assert stale.status_code == 200 and stale.content == first.content

    etags = {path: client.get(path, HTTP_AUTHORIZATION=f"Token {key}")["ETag"] for path in paths}
    services.submission_disqualify(submission=sub, actor=admin_user, reason="cheats")
    for path, etag in etags.items():
        changed = client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=etag)
        assert changed.status_code == 200 and changed["ETag"] != etag, path
        shown = changed.json()
        assert (shown["results"][0] if "results" in shown else shown)["hidden"] is True

    # another caller: another ETag for the same address, none for someone else's submission
    theirs = services.api_token_create(user=other)[1]
    make_done(task, other, speedup=1.1)
    mine = client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {key}")
    them = client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {theirs}", HTTP_IF_NONE_MATCH=mine["ETag"])
    assert them.status_code == 200 and them["ETag"] != mine["ETag"]
    public = client.get(f"/api/submissions/{make_done(task, owner, speedup=1.2).pk}",
                        HTTP_AUTHORIZATION=f"Token {theirs}")
    assert public.status_code == 200 and "ETag" not in public
    # a revoked token is refused, whatever it matches
    token = services.api_token_create(user=owner)
    etag = client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {token[1]}")["ETag"]
    services.api_token_revoke(user=owner, token_id=token[0].pk)
    assert client.get("/api/submissions", HTTP_AUTHORIZATION=f"Token {token[1]}",
                      HTTP_IF_NONE_MATCH=etag).status_code == 401


def test_an_unfinished_answers_etag_moves_with_its_age(client, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    path = f"/api/submissions/{make_queued(task, owner).pk}"
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 0
    assert "ETag" not in client.get(path, HTTP_AUTHORIZATION=f"Token {key}")
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 1
    etag = client.get(path, HTTP_AUTHORIZATION=f"Token {key}")["ETag"]
    time.sleep(1.1)
    owncache.clear()
    assert client.get(path, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IF_NONE_MATCH=etag).status_code == 200
