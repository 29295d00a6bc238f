"""Two layers around a request's body, between the ASGI server and the WSGI bridge (a2wsgi).

SizedBody: a body sent without Content-Length (Transfer-Encoding: chunked, as curl and many HTTP
libraries send a streamed body) is read here and handed on with its length. The bridge gives
Django a body of CONTENT_LENGTH bytes, none where the header is absent, so Django would see an
empty body and answer as if nothing was sent. Past SIZED_MAX_BYTES the part read so far goes on
with that length, which is over every limit of the site: Django refuses it (413) and DrainBody
reads the rest.

DrainBody: read the rest of a request's body before its answer goes out. Django stops reading a body it refuses (a 5 MB paste into the upload form: 413) and answers at
once. uvicorn then closes the connection with the rest of the body unread, and a client still
sending it meets a reset instead of the site's page. So when the answer starts and the body has
not been read to its end, this layer reads and drops the rest first: up to MAX_BYTES and MAX_S,
past which the client gets the reset after all (a proxy in front, as in a deployment, refuses
such a body itself).
"""
from __future__ import annotations

import asyncio
import time

MAX_BYTES = 64 * 1024 * 1024
MAX_S = 30.0
SIZED_MAX_BYTES = 8 * 1024 * 1024  # over every body the site accepts (an upload's is at most 0.5 MB)


class SizedBody:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not _chunked(scope["headers"]):
            return await self.app(scope, receive, send)
        chunks, read, message = [], 0, {"type": "http.request", "body": b"", "more_body": True}
        while message.get("more_body", False) and read <= SIZED_MAX_BYTES:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: the app hears it
                return await self.app(scope, _replay([message], receive), send)
            chunks.append(message.get("body", b""))
            read += len(chunks[-1])
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"transfer-encoding", b"content-length")]
        sized = dict(scope, headers=[*headers, (b"content-length", str(read).encode())])
        whole = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(sized, _replay([whole], receive), send)


def _chunked(headers) -> bool:
    names = {k.lower() for k, _ in headers}
    return b"transfer-encoding" in names and b"content-length" not in names


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
