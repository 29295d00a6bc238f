"""A caller's own reads (`GET /api/submissions`, `GET /api/submissions/<id>`) answered in the
ASGI layer in front of Django, when the answer kept for them still holds.

Agents poll their own work. api/owncache keeps those answers under a stamp of the caller's
submissions, read with the token in one query on every request, so that a kept answer is never
older than its data. Inside Django a kept answer still cost a hop into the thread pool, the
middleware and ninja's routing, and a database round trip from a thread that holds the GIL's
other waiters back: 1.0 ms of server CPU a request against 0.5 for a cached page
(docs/bench/site-load.md). Here the same query runs on the event loop (psycopg's async
connection, a few per process from psycopg_pool) and a kept answer goes out as Django sent it:
status, headers and body, stored whole.

Everything else goes to Django as before, and so does every request the layer cannot answer
itself: no token or a malformed one, a Cookie header (the API ignores sessions, but Django's
middleware might not), an unknown or revoked token or an inactive user (Django answers 401), a
token whose last use is more than a minute old (Django records the use), a database that does not
answer, a database that is not PostgreSQL (SQLite has no async driver: owncache keeps the bodies
inside Django there). A request it passes on for a token it checked carries its mark
(owncache.LAYER_MARK); the view then builds the answer and says in a header (owncache.KEEP_HEADER,
taken off here) whether it may be kept, and the layer keeps it under the stamp it read before
Django ran: data that changes after that read moves the stamp, so the next request builds anew.

The key is the caller and everything of the request a body can depend on: scheme, Host, the
proxy's forwarded scheme and host, path and query string.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time

from django.conf import settings

from leaderboard.api import owncache
from leaderboard.models import ApiToken
from leaderboard.services.tokens import USE_RECORDED_EVERY

log = logging.getLogger(__name__)

PATH = re.compile(r"/api/submissions(?:/\d+)?")
MARK = b"x-lb-kept-layer"
KEEP = owncache.KEEP_HEADER.lower().encode()
POOL_SIZE = 4
POOL_TIMEOUT_S = 1.0
RECORDED_S = USE_RECORDED_EVERY.total_seconds()  # an older use goes to Django, which records it
PAUSE_S = 5.0  # after the database failed the layer, requests go straight to Django this long


def _token(headers: list) -> tuple[str | None, dict]:
    """(the Token key of the Authorization header or None, the headers the key depends on)."""
    found, key = {}, None
    for name, value in headers:
        if name in (b"authorization", b"cookie", b"host", b"x-forwarded-proto", b"x-forwarded-host"):
            found[name] = value
    scheme, _, rest = found.get(b"authorization", b"").decode("latin-1").partition(" ")
    if scheme.lower() == "token" and rest.strip() and len(rest.strip()) <= 200:
        key = rest.strip()
    return key, found


class KeptLayer:
    def __init__(self, app):
        self.app = app
        self.on = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
        self._pool = None
        self._pool_lock = asyncio.Lock()
        self._paused_until = 0.0

    async def __call__(self, scope, receive, send):
        if (not self.on or scope["type"] != "http" or scope["method"] != "GET"
                or not PATH.fullmatch(scope["path"]) or settings.API_OWN_CACHE_MAX_BYTES <= 0):
            return await self.app(scope, receive, send)
        key, found = _token(scope["headers"])
        if key is None or b"cookie" in found or time.monotonic() < self._paused_until:
            return await self.app(scope, receive, send)
        try:
            stamped = await self._stamp(ApiToken.hash_key(key))
        except Exception as exc:  # the database: Django answers, with its own handling of it
            log.warning("kept reads: no stamp (%r); Django answers alone for %.0f s", exc, PAUSE_S)
            self._paused_until = time.monotonic() + PAUSE_S
            return await self.app(scope, receive, send)
        if stamped is None:
            return await self.app(scope, receive, send)
        _, user_id, last_used_at, stamp = stamped
        cache_key = (user_id, ("asgi", scope.get("scheme"), found.get(b"host"), found.get(b"x-forwarded-proto"),
                               found.get(b"x-forwarded-host"), scope["path"], scope.get("query_string", b"")))
        recorded = last_used_at is not None and time.time() - last_used_at.timestamp() < RECORDED_S
        kept = owncache.get(cache_key, stamp) if recorded else None
        if kept is not None:
            status, headers, body = kept
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        marked = dict(scope, headers=[*scope["headers"], (MARK, owncache.LAYER_MARK.encode())])
        await self._pass_on(marked, receive, send, cache_key, stamp)

    async def _pass_on(self, scope, receive, send, cache_key, stamp) -> None:
        """Django's answer, sent as it comes with the keep header taken off; kept when it says so."""
        start, chunks, keep = None, [], None

        async def sending(message):
            nonlocal start, keep
            if message["type"] == "http.response.start":
                headers = []
                for name, value in message.get("headers", []):
                    if name.lower() == KEEP:
                        keep = value
                    else:
                        headers.append((name, value))
                message = dict(message, headers=headers)
                start = message
            elif message["type"] == "http.response.body" and keep is not None:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False) and start["status"] == 200:
                    body = b"".join(chunks)
                    owncache.put(cache_key, stamp, (200, start["headers"], body), len(body) + 512,
                                 unfinished=keep == b"unfinished")
            await send(message)

        await self.app(scope, receive, sending)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _stamp(self, key_hash: str):
        """owncache.token_stamp, on the event loop."""
        pool = self._pool or await self._open()
        async with pool.connection(timeout=POOL_TIMEOUT_S) as conn:
            async with conn.cursor() as cur:
                await cur.execute(owncache._token_stamp_sql(), [key_hash], prepare=True)
                return owncache.stamp_of(await cur.fetchone())

    async def _open(self):
        from django.db import connections
        from psycopg_pool import AsyncConnectionPool

        async with self._pool_lock:
            if self._pool is None:
                params = connections["default"].get_connection_params()
                for name in ("cursor_factory", "context", "prepare_threshold"):  # Django's own
                    params.pop(name, None)
                pool = AsyncConnectionPool(kwargs={**params, "autocommit": True, "application_name": "kept-reads"},
                                           min_size=1, max_size=POOL_SIZE, open=False, name="kept-reads")
                try:
                    await pool.open(wait=True, timeout=POOL_TIMEOUT_S)
                except BaseException:
                    await pool.close()  # it would go on trying to connect in the background
                    raise
                self._pool = pool
        return self._pool
