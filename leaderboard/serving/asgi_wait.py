"""`GET /api/submissions/<id>?wait=S`, held in the ASGI layer in front of Django.

Every answer comes from Django as for any request, with `wait` taken out of the query: the view
authenticates, decides what the caller may read and answers. Only an answer of 200 that says
`"finished": false` is held: the layer waits (leaderboard/serving/finish_wait.py) and asks Django again
when the submission's finish is announced (or a slice of time passes), until an answer is not
that or S seconds pass, and sends the last answer. Everything the client reads is Django's; the
layer only decides when. A waiter costs Django one request at the start and one per wake.

Why here and not in an async view: Django runs a request's sync parts (middleware, the token
check) on a thread of that request's own, which it keeps until the request ends, so a waiting
view would hold one idle thread per client. Between its requests to Django a waiter is a
coroutine and an asyncio event (the process listens on one Redis connection for all of them), with
no thread and no database connection.

A value of `wait` that is not a whole number from 1 to 60 goes to Django untouched, whose 400
names the bounds (and 0 is answered at once).
"""
from __future__ import annotations

import asyncio
import json
import logging
import re
from urllib.parse import parse_qsl, urlencode

from leaderboard.serving import finish_wait

log = logging.getLogger(__name__)

PATH = re.compile(r"/api/submissions/(\d+)")
WAIT_MAX_S = 60  # the view's bound too (leaderboard/api/views.py)


def _wait_seconds(query: list[tuple[str, str]]) -> int | None:
    values = [v for k, v in query if k == "wait"]
    if len(values) != 1 or not re.fullmatch(r"\d{1,2}", values[0]):
        return None
    seconds = int(values[0])
    return seconds if 1 <= seconds <= WAIT_MAX_S else None


class WaitLayer:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        match = PATH.fullmatch(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None or scope["method"] != "GET":
            return await self.app(scope, receive, send)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        seconds = _wait_seconds(query)
        if seconds is None:
            return await self.app(scope, receive, send)
        inner = dict(scope, query_string=urlencode([(k, v) for k, v in query if k != "wait"]).encode())
        # the client's (empty) GET body; from here on `receive` only says when the client leaves
        await receive()
        answer: list[dict] = []

        async def settled() -> bool:
            """Django's answer now; True unless it is a 200 saying "finished": false."""
            answer[:] = await _ask(self.app, inner)
            return not _unfinished(answer)

        # the first answer is read after the waiter is registered, so that a finish between the
        # two cannot be missed; the answer sent is the last one read
        gone = asyncio.ensure_future(_left(receive))
        waiting = asyncio.ensure_future(finish_wait.wait(int(match.group(1)), seconds, settled))
        try:
            await asyncio.wait({gone, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (gone, waiting):
                task.cancel()
        if not waiting.done() or waiting.cancelled():
            return  # the client left: nobody to answer
        if waiting.exception() is not None:  # the waiting failed (Redis, a bug): answer at once
            log.warning("waiting on %s failed: %r", scope["path"], waiting.exception())
            answer[:] = await _ask(self.app, inner)
        await _replay(answer, send)


async def _left(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _ask(app, scope) -> list[dict]:
    """Django's whole answer to `scope` (a GET without a body), as the messages it sent."""
    sent: list[dict] = []
    asked = False
    never = asyncio.get_running_loop().create_future()

    async def receive():
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return await never  # Django's disconnect listener: this client is not going anywhere

    async def send(message):
        sent.append(message)

    try:
        await app(scope, receive, send)
    finally:
        never.cancel()
    return sent


def _unfinished(answer: list[dict]) -> bool:
    if not answer or answer[0].get("status") != 200:
        return False
    body = b"".join(m.get("body", b"") for m in answer if m["type"] == "http.response.body")
    try:
        return json.loads(body).get("finished") is False
    except (ValueError, AttributeError):
        return False


async def _replay(answer: list[dict], send) -> None:
    for message in answer:
        await send(message)
