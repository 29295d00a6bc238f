"""Read the rest of a request's body before its answer goes out.

Django stops reading a body it refuses (a 5 MB paste into the upload form: 413) and answers at
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
