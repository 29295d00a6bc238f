"""Two layers around a request's body, between the ASGI server and the WSGI bridge (a2wsgi).

ReadBody: every request's body is read here, in the event loop, before the request takes one of
Django's WEB_THREADS threads. The bridge reads a body on the thread that runs the view, so a body
sent at a byte a second held a thread for as long as the client liked: sixteen of them and every
page waited. Here a body must arrive whole within WEB_BODY_DEADLINE_S (20 s unless set: the
largest upload, 0.5 MB, at 25 KB/s; 408 otherwise) and within the
limit of its route (`limit_for`: 413 otherwise, from its Content-Length before a byte is read
where it has one), and all bodies being read at once share BUDGET_BYTES (503 with Retry-After
past it), so slow clients cost coroutines and bounded memory, never threads. Django then gets the
body whole and with its length: a chunked body (Transfer-Encoding, no Content-Length, as curl and
many HTTP libraries stream one) is handed on sized, since the bridge gives Django CONTENT_LENGTH
bytes and none where the header is absent. The refusals here are short pages in the site's words
(JSON under /api/, as the API's own errors); a refusal inside a route's limit (a 5 MB paste into
the upload form is inside /upload/'s) is Django's, with its own page.

DrainBody: read the rest of a request's body before its answer goes out, up to MAX_BYTES and
MAX_S. A client still sending a body the answer did not wait for would otherwise meet a reset
instead of the answer (uvicorn closes a connection with an unread body).
"""
from __future__ import annotations

import asyncio
import functools
import json
import time

from django.conf import settings

from leaderboard.api.upload_body import MAX_BODY

MAX_BYTES = 64 * 1024 * 1024
MAX_S = 30.0
BUDGET_BYTES = 64 * 1024 * 1024  # every body being read at once, together
SMALL = 64 * 1024  # forms: log in, sign up, tokens, publish, audit decisions, competitions


def limit_for(path: str) -> int:
    """The largest body a route takes, in bytes. The upload form's is over what Django's form
    refuses with the form and its limit (DATA_UPLOAD_MAX_MEMORY_SIZE), so that a paste too large
    gets that page; the API's is the upload's (api/upload_body.MAX_BODY, past which it refuses)."""
    if path.startswith("/api/"):
        return MAX_BODY
    if path == "/upload/":
        return 8 * 1024 * 1024
    if path.startswith("/admin/"):
        return settings.DATA_UPLOAD_MAX_MEMORY_SIZE + SMALL
    return SMALL


class ReadBody:
    def __init__(self, app):
        self.app = app
        self.held = 0  # bytes reserved by the bodies being read now

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length, chunked = _declared(scope["headers"])
        if length == 0 and not chunked:
            return await self.app(scope, receive, send)
        limit = limit_for(scope["path"])
        if length is not None and length > limit:
            return await _too_large(scope, receive, send, limit)
        reserve = limit if length is None else length
        if self.held + reserve > BUDGET_BYTES:
            return await _refuse(scope, receive, send, 503, "The site is reading many uploads at once; "
                                 "send this again in a few seconds.", "busy", retry_after=5)
        self.held += reserve
        try:
            got = await _read(receive, limit, time.monotonic() + settings.WEB_BODY_DEADLINE_S)
        finally:
            self.held -= reserve
        if got == "gone":  # the client went away: the app hears it from the server
            return await self.app(scope, receive, send)
        if got == "slow":
            return await _answer(scope, send, 408, f"The request body did not arrive within "
                                 f"{settings.WEB_BODY_DEADLINE_S} s.", "timeout")
        if got == "large":
            return await _too_large(scope, receive, send, limit)
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"transfer-encoding", b"content-length")]
        sized = dict(scope, headers=[*headers, (b"content-length", str(len(got)).encode())])
        await self.app(sized, _replay([{"type": "http.request", "body": got, "more_body": False}], receive), send)


async def _too_large(scope, receive, send, limit: int):
    await _refuse(scope, receive, send, 413, f"The request body is too large: at most {limit:,} bytes.", "too_large")


def _declared(headers) -> tuple[int | None, bool]:
    """(Content-Length, or None when absent or unreadable; whether the body is chunked)."""
    length, chunked = None, False
    for k, v in headers:
        k = k.lower()
        if k == b"content-length":
            length = int(v) if v.strip().isdigit() else None
        elif k == b"transfer-encoding":
            chunked = True
    return length, chunked and length is None


async def _read(receive, limit: int, deadline: float):
    """The whole body as bytes, or "slow" (past the deadline), "large" (past the limit), "gone"."""
    chunks, read = [], 0
    while True:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            return "slow"
        if message["type"] != "http.request":
            return "gone"
        chunks.append(message.get("body", b""))
        read += len(chunks[-1])
        if read > limit:
            return "large"
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _refuse(scope, receive, send, status: int, message: str, code: str, retry_after: int | None = None):
    """A refusal sent after the rest of the body is read and dropped (DrainBody's bounds), so
    that the client reads it instead of a reset."""
    await _drain(receive)
    await _answer(scope, send, status, message, code, retry_after)


async def _answer(scope, send, status: int, message: str, code: str, retry_after: int | None = None):
    if scope["path"].startswith("/api/"):
        body, kind = json.dumps({"error": message, "code": code}).encode(), b"application/json"
    else:
        body, kind = _page(status, message), b"text/html; charset=utf-8"
    headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode()), (b"connection", b"close"),
               (b"cache-control", b"no-store")]
    if retry_after:
        headers.append((b"retry-after", str(retry_after).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@functools.lru_cache(maxsize=16)
def _page(status: int, message: str) -> bytes:
    """The site's page for a refused body, rendered once without a request (the header shows no
    one logged in): the 413 page Django's own refusal gives, or a page that says `message`."""
    from django.template.loader import render_to_string

    if status == 413:
        return render_to_string("errors/413.html", {"limit_kib": settings.SUBMISSION_MAX_BYTES // 1024}).encode()
    titles = {408: "Too slow", 503: "Busy"}
    return render_to_string("errors/body.html", {"title": titles.get(status, "Refused"), "message": message}).encode()


def _replay(messages: list, receive):
    """A receive that gives `messages` first, then the server's own."""
    async def replayed():
        return messages.pop(0) if messages else await receive()
    return replayed


class DrainBody:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state = {"pending": True}

        async def tracked():
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["pending"] = False
            return message

        async def answer(message):
            if message["type"] == "http.response.start" and state["pending"]:
                await _drain(tracked)
            await send(message)

        await self.app(scope, tracked, answer)


async def _drain(receive) -> None:
    read, end = 0, time.monotonic() + MAX_S
    while read <= MAX_BYTES:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, end - time.monotonic()))
        except asyncio.TimeoutError:
            return
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
