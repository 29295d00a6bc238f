"""Answers kept by the ASGI layer in front of Django (leaderboard/serving/asgi_kept.py): a kept answer goes
out without Django running, exactly as Django sent it; a caller's own read shows every change in
the very next answer, a public one follows pagecache's rules and goes compressed to a client that
takes gzip. The layer, Django behind it on a2wsgi's threads and PostgreSQL are the real ones, in
this process; the count of requests that reached Django tells which answered."""
from __future__ import annotations

import asyncio
import json
import threading
from urllib.parse import quote

import pytest
from a2wsgi import WSGIMiddleware
from django.contrib.auth import get_user_model
from django.core.wsgi import get_wsgi_application
from django.db import connection, connections

from leaderboard import services
from leaderboard.api import owncache
from leaderboard.models import ApiToken
from leaderboard.serving.asgi_body import DrainBody
from leaderboard.serving.asgi_kept import KeptLayer
from site_helpers import H200, every_change_shows, make_done, make_queued

pytestmark = [pytest.mark.django_db(transaction=True)]


THREADS = 2  # Django's, behind the layer


class Site:
    """The layer over Django, served on an event loop of its own thread; get() from the test."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.django_requests = 0
        self.wsgi = WSGIMiddleware(get_wsgi_application(), workers=THREADS)
        django_app = DrainBody(self.wsgi)

        async def counted(scope, receive, send):
            self.django_requests += 1
            await django_app(scope, receive, send)

        self.layer = KeptLayer(counted)

    def get(self, path: str, key: str | None = None, headers: tuple = ()) -> tuple[int, dict, bytes]:
        return asyncio.run_coroutine_threadsafe(self._get(path, key, headers), self.loop).result(30)

    async def _get(self, path, key, headers):
        path, _, query = path.partition("?")
        sent, asked = [], []
        never = self.loop.create_future()

        async def receive():
            if not asked:
                asked.append(True)
                return {"type": "http.request", "body": b"", "more_body": False}
            return await never

        async def send(message):
            sent.append(message)

        extra = [(b"authorization", f"Token {key}".encode())] if key else []
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
                 "root_path": "", "headers": [(b"host", b"testserver"), *extra, *headers],
                 "client": ("127.0.0.1", 40000), "server": ("testserver", 80)}
        try:
            await self.layer(scope, receive, send)
        finally:
            never.cancel()
        start = sent[0]
        body = b"".join(m.get("body", b"") for m in sent[1:])
        return start["status"], {k.decode().lower(): v.decode() for k, v in start["headers"]}, body

    def close(self):
        asyncio.run_coroutine_threadsafe(self.layer.close(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        # each of Django's threads closes its database connection (one task each: they meet at
        # the barrier), so that none outlives the test and the test database can be dropped
        meet = threading.Barrier(THREADS)

        def close_mine():
            meet.wait(30)
            connections.close_all()

        for done in [self.wsgi.executor.submit(close_mine) for _ in range(THREADS)]:
            done.result(60)
        self.wsgi.executor.shutdown(wait=True)


@pytest.fixture
def site(require_postgres, settings):
    # an unfinished answer kept for an hour: what shows below shows through the stamp, not an age
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 3600
    owncache.clear()
    site = Site()
    yield site
    site.close()
    owncache.clear()


def _json(site, key, path) -> dict:
    status, _, body = site.get(path, key)
    assert status == 200, body
    return json.loads(body)


def test_a_repeat_is_answered_before_django_exactly_as_django_answered(site, task, owner):
    key = services.api_token_create(user=owner)[1]
    done = make_done(task, owner, speedup=1.3)
    make_queued(task, owner)
    for path in (f"/api/submissions/{done.pk}", "/api/submissions?per_page=1&page=2"):
        before = site.django_requests
        first = site.get(path, key)
        assert site.django_requests == before + 1
        assert first[0] == 200 and "x-lb-keep" not in first[1]  # the view's word to the layer stays here
        assert first[1]["content-type"] == "application/json" and first[1]["x-frame-options"] == "DENY"
        assert "private" in first[1]["cache-control"]  # the caller's: no shared cache keeps it
        again = site.get(path, key)
        assert site.django_requests == before + 1, "the repeat reached Django"
        assert again == first  # status, every header, body


def test_every_change_shows_in_the_next_answer(site, task, owner, admin_user):
    key = services.api_token_create(user=owner)[1]
    done = make_done(task, owner, speedup=1.3)
    waiting = make_queued(task, owner)
    detail, listing = f"/api/submissions/{waiting.pk}", "/api/submissions"
    assert _json(site, key, listing)["count"] == 2
    assert _json(site, key, detail)["status"] == "queued"
    kept = site.django_requests
    assert _json(site, key, listing)["count"] == 2 and _json(site, key, detail)["status"] == "queued"
    assert site.django_requests == kept

    every_change_shows(lambda path: _json(site, key, path), task=task, owner=owner, admin_user=admin_user,
                       waiting=waiting, done=done)


def test_a_revoked_token_or_a_deactivated_user_is_refused_at_once(site, task, owner):
    token, key = services.api_token_create(user=owner)
    path = f"/api/submissions/{make_done(task, owner).pk}"
    _json(site, key, path)
    _json(site, key, path)
    assert services.api_token_revoke(user=owner, token_id=token.pk)
    status, headers, body = site.get(path, key)
    assert status == 401 and json.loads(body)["code"] == "bad_token"
    token, key = services.api_token_create(user=owner)
    _json(site, key, path)
    get_user_model().objects.filter(pk=owner.pk).update(is_active=False)
    assert site.get(path, key)[0] == 401


def test_a_request_with_two_authorization_headers_gets_djangos_refusal(site, task, owner, other):
    """The WSGI bridge hands Django both values joined ("Token a,Token b"), a token it refuses: the
    layer answers such a request neither from a kept answer nor by keeping one."""
    path = f"/api/submissions/{make_done(task, owner).pk}"
    owner_key, other_key = (services.api_token_create(user=u)[1] for u in (owner, other))
    _json(site, owner_key, path)
    assert site.get(path, owner_key)[0] == 200  # kept: the owner's answer is there to be sent
    for first in (other_key, "lb_no-such-token", owner_key):
        before = site.django_requests
        status, headers, body = site.get(path, None, ((b"authorization", f"Token {first}".encode()),
                                                      (b"authorization", f"Token {owner_key}".encode())))
        assert site.django_requests == before + 1 and status == 401, (first, body)
        assert json.loads(body)["code"] == "bad_token"


def test_others_reads_refusals_and_sessions_go_to_django(site, task, owner, other, admin_user):
    mine = make_done(task, owner, speedup=1.4)  # ranked: public
    theirs_key = services.api_token_create(user=other)[1]
    staff_key = services.api_token_create(user=admin_user)[1]
    owner_key = services.api_token_create(user=owner)[1]
    asks = [(f"/api/submissions/{mine.pk}", theirs_key, ()), (f"/api/submissions/{mine.pk}", staff_key, ()),
            ("/api/submissions/999999", theirs_key, ()), ("/api/submissions?page=9", theirs_key, ()),
            (f"/api/submissions/{mine.pk}", None, ()),
            # a cookie, and a client's own copy of the layer's mark
            (f"/api/submissions/{mine.pk}", owner_key, ((b"cookie", b"sessionid=x"),)),
            (f"/api/submissions/{mine.pk}", owner_key, ((b"x-lb-kept-layer", b"guess"),)),
            (f"/api/submissions/{mine.pk}", "lb_no-such-token", ())]
    for path, key, headers in asks:
        before = site.django_requests
        first = site.get(path, key, headers)
        second = site.get(path, key, headers)
        assert site.django_requests == before + 2, (path, headers)
        assert first[0] == second[0] and "x-lb-keep" not in first[1] and "x-lb-keep" not in second[1]


def test_a_use_of_the_token_is_recorded_through_django(site, task, owner):
    token, key = services.api_token_create(user=owner)
    path = f"/api/submissions/{make_done(task, owner).pk}"
    _json(site, key, path)
    _json(site, key, path)
    used = ApiToken.objects.get(pk=token.pk).last_used_at
    assert used is not None
    # a use over a minute ago: the next request goes to Django, which records it
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=used.replace(year=used.year - 1))
    before = site.django_requests
    _json(site, key, path)
    assert site.django_requests == before + 1
    assert ApiToken.objects.get(pk=token.pk).last_used_at >= used


def test_an_unfinished_answer_is_kept_at_most_its_age(site, task, owner, settings):
    key = services.api_token_create(user=owner)[1]
    path = f"/api/submissions/{make_queued(task, owner).pk}"
    first = _json(site, key, path)["elapsed_s"]
    assert _json(site, key, path)["elapsed_s"] == first
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 0
    assert _json(site, key, path)["elapsed_s"] > first


def test_when_the_database_fails_the_layer_django_answers(site, task, owner):
    key = services.api_token_create(user=owner)[1]
    path = f"/api/submissions/{make_done(task, owner).pk}"
    first = site.get(path, key)
    site.get(path, key)
    with connection.cursor() as cur:  # the layer's own connections end under it
        cur.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'kept-reads'")
        assert cur.rowcount >= 1
    before = site.django_requests
    assert site.get(path, key) == first
    assert site.django_requests == before + 1


# --- public answers: pagecache's rules, one layer out ------------------------------------------


def test_public_answers_are_sent_while_pagecache_would_send_the_same(site, task, owner, settings):
    from leaderboard.web import pagecache

    settings.WEB_FINGERPRINT_MAX_AGE_S, settings.WEB_REBUILD_MIN_INTERVAL_S = 3600, 0
    pagecache.clear()
    make_done(task, owner, speedup=1.25)
    for path in ("/", f"/tasks/{task.name}/", "/api/tasks", f"/api/tasks/{task.name}/leaderboard"):
        before = site.django_requests
        first = site.get(path)
        assert first[0] == 200 and "x-lb-public" not in first[1], (path, first[0])
        assert site.django_requests == before + 1
        assert site.get(path) == first, path
        assert site.django_requests == before + 1, f"the repeat of {path} reached Django"
        # a visitor with a session, or a caller with a token: Django
        site.get(path, headers=((b"cookie", b"sessionid=x"),))
        site.get(path, services.api_token_create(user=owner)[1])
        assert site.django_requests == before + 3


def test_a_new_result_shows_when_pagecache_shows_it(site, task, owner, other, settings):
    from leaderboard.web import pagecache

    settings.WEB_FINGERPRINT_MAX_AGE_S, settings.WEB_REBUILD_MIN_INTERVAL_S = 3600, 0
    pagecache.clear()
    make_done(task, owner, speedup=1.25)
    board = f"/api/tasks/{task.name}/leaderboard?device={quote(H200)}"
    assert [e["user"] for e in json.loads(site.get(board)[2])["entries"]] == ["owner"]
    make_done(task, other, speedup=1.5)
    # the fingerprint is not read again within its age: pagecache, and so the layer, show the board as it was
    assert [e["user"] for e in json.loads(site.get(board)[2])["entries"]] == ["owner"]
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0  # read at once: the next answer is the new board
    before = site.django_requests
    assert [e["user"] for e in json.loads(site.get(board)[2])["entries"]] == ["other", "owner"]
    assert site.django_requests == before + 1


def test_a_public_answer_goes_compressed_to_a_client_that_takes_gzip(site, task, owner, settings):
    import gzip

    from leaderboard.web import pagecache

    settings.WEB_FINGERPRINT_MAX_AGE_S, settings.WEB_REBUILD_MIN_INTERVAL_S = 3600, 0
    pagecache.clear()
    for n in range(8):  # a board of over a kilobyte: worth compressing
        make_done(task, get_user_model().objects.create_user(f"entrant{n}"), speedup=1 + n / 10)
    path = f"/api/tasks/{task.name}/leaderboard?device={quote(H200)}"
    plain = site.get(path)
    assert len(plain[2]) > 1024
    assert plain[1]["vary"] == "Accept-Encoding" and "content-encoding" not in plain[1]
    for accept, packed in (("gzip, deflate, br", True), ("*", True), ("br;q=1.0, gzip;q=0.5", True),
                           ("gzip;q=0", False), ("identity", False), ("*;q=0", False), ("x-gzip", True)):
        status, headers, body = site.get(path, headers=((b"accept-encoding", accept.encode()),))
        assert status == 200 and headers["vary"] == "Accept-Encoding", accept
        if packed:
            assert headers["content-encoding"] == "gzip" and int(headers["content-length"]) == len(body), accept
            assert gzip.decompress(body) == plain[2] and len(body) < len(plain[2]), accept
        else:
            assert (status, headers, body) == plain, accept


def test_a_parameter_no_view_reads_keys_no_new_answer(site, task, owner, settings):
    """`?x=<random>` on a public page or read: neither Django's page cache nor the layer keeps an
    entry for it, so it forces no build; the parameters a view reads still key their answers."""
    from leaderboard.web import pagecache

    settings.WEB_FINGERPRINT_MAX_AGE_S, settings.WEB_REBUILD_MIN_INTERVAL_S = 3600, 0
    pagecache.clear()
    make_done(task, owner, speedup=1.25)
    device = "cpu"
    for path in ("/", f"/tasks/{task.name}/?device={device}", "/api/tasks",
                 f"/api/tasks/{task.name}/leaderboard?device={device}"):
        first = site.get(path)
        assert first[0] == 200, path
        keys = set(pagecache._entries)
        joiner = "&" if "?" in path else "?"
        for n in range(5):
            again = site.get(f"{path}{joiner}x={n}{'a' * n}")
            assert again[0] == 200 and again[2] == first[2], path
        assert set(pagecache._entries) == keys, f"{path}: an unread parameter made a cache entry"
        kept = site.django_requests
        site.get(f"{path}{joiner}x=0")
        assert site.django_requests == kept + 1, "an unread parameter's answer was kept by the layer"
        site.get(path)
        assert site.django_requests == kept + 1, "the view's own address is still kept"
    # a parameter the view reads keys its own answer
    other = site.get(f"/api/tasks/{task.name}/leaderboard?device=no-such-device")
    assert other[0] == 400


def test_a_kept_answer_carries_its_etag_and_a_matching_one_is_djangos_304(site, task, owner, admin_user):
    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner, speedup=1.3)
    for path in ("/api/submissions", f"/api/submissions/{sub.pk}"):
        first = site.get(path, key)
        assert first[0] == 200 and first[1]["etag"].startswith('"')
        asked = site.django_requests
        kept = site.get(path, key)
        assert site.django_requests == asked and kept[1]["etag"] == first[1]["etag"]  # sent by the layer
        unchanged = site.get(path, key, headers=((b"if-none-match", first[1]["etag"].encode()),))
        assert unchanged[0] == 304 and unchanged[2] == b"" and site.django_requests == asked + 1
        assert "private" in unchanged[1]["cache-control"]
    etag = site.get(f"/api/submissions/{sub.pk}", key)[1]["etag"]
    services.submission_disqualify(submission=sub, actor=admin_user, reason="cheats")
    changed = site.get(f"/api/submissions/{sub.pk}", key, headers=((b"if-none-match", etag.encode()),))
    assert changed[0] == 200 and changed[1]["etag"] != etag and json.loads(changed[2])["hidden"] is True
