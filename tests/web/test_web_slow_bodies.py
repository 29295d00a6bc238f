"""Slow request bodies cost the web server coroutines, never Django's threads: every body is read
in the event loop, within a deadline and its route's limit, before the request takes a thread
(leaderboard/serving/asgi_body.py). Against the web server as `make run` starts it (scripts/web.sh), with
four threads so that a handful of slow clients would take them all."""
from __future__ import annotations

import socket
import time
import uuid

import pytest
import requests
from django.db import connection

from proc_helpers import site_env, web_server

THREADS = 4


@pytest.fixture
def site(transactional_db, tmp_path):
    env = site_env(ALLOWED_HOSTS="127.0.0.1", WEB_THREADS=str(THREADS), WEB_BODY_DEADLINE_S="4",
                   RATELIMIT_CACHE_PREFIX=f"rl-{uuid.uuid4().hex}:")
    with web_server(env, tmp_path / "web.log", "/static/css/site.css") as url:
        yield url
    connection.close()


def slow_client(url: str, path: str, *, chunked: bool = False, length: int = 1000) -> socket.socket:
    """A client that sends its headers and then one byte of its body."""
    host, port = url.removeprefix("http://").split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: csrftoken={'a' * 32}\r\n"
               f"Content-Type: application/x-www-form-urlencoded\r\n{framing}\r\n\r\n").encode())
    s.sendall(b"1\r\na\r\n" if chunked else b"a")
    return s


def answer(s: socket.socket) -> bytes:
    s.settimeout(15)
    got = b""
    while b"\r\n\r\n" not in got:
        part = s.recv(4096)
        if not part:
            break
        got += part
    return got


def test_twenty_slow_bodies_leave_the_pages_answering(site):
    clients = [slow_client(site, "/accounts/login/") for _ in range(12)]
    clients += [slow_client(site, "/api/submissions", chunked=True) for _ in range(8)]
    try:
        time.sleep(0.5)  # every slow body has reached the server
        for path in ("/accounts/login/", "/healthz", "/api/tasks"):
            t = time.monotonic()
            assert requests.get(site + path, timeout=3).status_code == 200, path
            assert time.monotonic() - t < 3
        # past the deadline each slow client is told why, and its connection ends
        first = answer(clients[0])
        assert first.startswith(b"HTTP/1.1 408"), first[:200]
        chunked = answer(clients[-1])
        assert chunked.startswith(b"HTTP/1.1 408") and b"application/json" in chunked, chunked[:300]
    finally:
        for c in clients:
            c.close()


def test_a_body_over_its_routes_limit_is_refused_before_it_is_read(site):
    # a login form is small: 100 KB is refused, from the Content-Length, without taking a thread
    r = requests.post(site + "/accounts/login/", data={"username": "x" * 100_000, "password": "y"}, timeout=10)
    assert r.status_code == 413
    assert r.status_code == 413 and 'id="too-large"' in r.text  # the site's own page
    # under /api/ the refusal is JSON, in the API's words
    r = requests.post(site + "/api/submissions", data=b"{" + b" " * 600_000 + b"}",
                      headers={"Content-Type": "application/json"}, timeout=10)
    assert r.status_code == 413 and r.json()["code"] == "too_large"


def test_a_chunked_body_within_its_limit_reaches_django_whole(site):
    def gen():
        yield b'{"task": "softmax",'
        yield b' "mode": "test"}'
    r = requests.post(site + "/api/submissions", data=gen(), headers={"Content-Type": "application/json"},
                      timeout=10)
    # read whole and sized: the API sees the fields (no token: 401), not an empty body
    assert r.status_code == 401, r.text
