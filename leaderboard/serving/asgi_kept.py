"""Answers kept whole (status, headers, body) and sent by the ASGI layer in front of Django, while
what Django would answer is still the same; everything else goes to Django.

Inside Django a kept answer still costs a hop into the thread pool (a2wsgi: the request goes to a
thread, each message of the answer back to the event loop), the middleware and the routing: a
cached page cost 0.5 ms of server CPU, a caller's kept API read 1.0 ms, because it also made a
database round trip from a thread that then queued for the GIL again behind the others
(docs/bench/site-load.md, "A caller's own reads"). Two kinds are answered here instead:

- **A caller's own reads** (`GET /api/submissions`, `GET /api/submissions/<id>` with a token):
  api/owncache's stamp of the caller's submissions, read with the token in one query, here on the
  event loop through a few async connections per process (psycopg_pool); the answer kept under
  that stamp is sent. Django answers instead: an unknown or revoked token or an inactive user (its
  401), a token whose last use is over a minute old (Django records the use), a database that is
  not PostgreSQL (SQLite has no async driver; owncache keeps the bodies inside Django there), and
  for PAUSE_S after the database failed the layer.
- **Public answers** (a page for a visitor, the API's tasks and boards, for requests without a
  token): web/pagecache's rules, unchanged. The kept answer is sent only while pagecache would
  answer the very value it shows without reading the database or building anything
  (pagecache.servable); when the fingerprint is due to be read or a page to be rebuilt, Django
  does that as before.

A request with a Cookie header always goes to Django (a session changes the pages), so does one
with If-None-Match (a caller's own read carries an ETag, and Django's `condition` decorator on
the view answers a matching one with 304: api/owncache.etag), and so does one that repeats a
header read here: the WSGI bridge hands Django a repeated header as one value, the
values joined with commas (two Authorization headers make a token Django refuses), so the layer
would otherwise answer for a request Django reads otherwise. A request
passed on carries the layer's mark (leaderboard/serving/layer_mark.py); the view then says in a header,
which is taken off here, under what the answer may be kept: for a caller's read, whether it is
theirs and unfinished (kept under the stamp read before Django ran, so data changed after that
read moves the stamp and the next request builds anew); for a public answer, the pagecache entry
it shows. The key is the caller (none for a public answer) and everything of the request a body
can depend on: scheme, Host, the proxy's forwarded scheme and host, path and query string. The
answers share owncache's store and its bound (API_OWN_CACHE_MAX_BYTES).
"""
from __future__ import annotations

import asyncio
import functools
import gzip
import logging
import re
import time
import urllib.parse

from django.conf import settings

from leaderboard.api import owncache
from leaderboard.models import ApiToken
from leaderboard.services.tokens import USE_RECORDED_EVERY
from leaderboard.serving import layer_mark
from leaderboard.web import pagecache

log = logging.getLogger(__name__)

OWN = re.compile(r"/api/submissions(?:/\d+)?")
MARK = (layer_mark.MARK_HEADER.lower().encode(), layer_mark.MARK.encode())
OWN_HEADER = layer_mark.OWN_HEADER.lower().encode()
PUBLIC_HEADER = layer_mark.PUBLIC_HEADER.lower().encode()
POOL_SIZE = 4
POOL_TIMEOUT_S = 1.0
RECORDED_S = USE_RECORDED_EVERY.total_seconds()  # an older use goes to Django, which records it
PAUSE_S = 5.0  # after the database failed the layer, requests go straight to Django this long
_READ = (b"authorization", b"cookie", b"host", b"x-forwarded-proto", b"x-forwarded-host", b"accept-encoding",
         b"if-none-match")
DUE_S = 10.0  # a refresh in Django taking longer than this is let through again
GZIP_MIN_BYTES = 1024
_COMPRESSIBLE = (b"text/", b"application/json")


@functools.lru_cache(maxsize=64)  # clients send a handful of distinct values
def _accepts_gzip(accept_encoding: bytes | None) -> bool:
    """Whether an Accept-Encoding header allows gzip (RFC 9110: `gzip`, `x-gzip` or `*`, with a
    weight above 0; an explicit `gzip;q=0` refuses it)."""
    weights = {}
    for item in (accept_encoding or b"").decode("latin-1").lower().split(","):
        name, _, params = item.strip().partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        weights[name.strip()] = weight
    for name in ("gzip", "x-gzip"):
        if name in weights:
            return weights[name] > 0
    return weights.get("*", 0) > 0


def _own_address(shown: str, path: str, query: bytes) -> bool:
    """Whether the view's cache key (`page:` or `api:` and the address: the path and only the
    query parameters the view reads) is this request's own path and query. A request with another
    parameter (`?x=<random>`) is answered from that same key inside Django, and is not kept here
    under an address of its own: only the parameters a view reads may key an answer."""
    address = urllib.parse.urlsplit(shown.partition(":")[2])
    mine = sorted(urllib.parse.parse_qsl(query.decode("latin-1"), keep_blank_values=True))
    return (urllib.parse.unquote(address.path) == path
            and sorted(urllib.parse.parse_qsl(address.query, keep_blank_values=True)) == mine)


def _vary(headers: list) -> list:
    """A public answer's headers, saying that it comes in two encodings (so that a cache in
    between keeps them apart)."""
    for name, value in headers:
        if name.lower() == b"vary":
            return headers if b"accept-encoding" in value.lower() else [
                (n, v + b", Accept-Encoding" if n.lower() == b"vary" else v) for n, v in headers]
    return [*headers, (b"vary", b"Accept-Encoding")]


def _variants(headers: list, body: bytes) -> tuple:
    """A public answer as kept: (status, headers, body) as sent to a client that does not take
    gzip, then the gzip-compressed one, or None where compressing is not worth it."""
    kind = next((value for name, value in headers if name.lower() == b"content-type"), b"")
    plain = (200, headers, body)
    if len(body) < GZIP_MIN_BYTES or not kind.startswith(_COMPRESSIBLE) or any(
            name.lower() == b"content-encoding" for name, _ in headers):
        return plain, None
    packed = gzip.compress(body, compresslevel=6, mtime=0)
    gz_headers = [(name, value) for name, value in headers if name.lower() != b"content-length"]
    return plain, (200, [*gz_headers, (b"content-encoding", b"gzip"), (b"content-length", str(len(packed)).encode())],
                   packed)


def _token(authorization: bytes) -> str | None:
    """The key of an `Authorization: Token <key>` header, None for anything else."""
    scheme, _, rest = authorization.decode("latin-1").partition(" ")
    key = rest.strip()
    return key if scheme.lower() == "token" and key and len(key) <= 200 else None


async def _send(send, answer: tuple) -> None:
    status, headers, body = answer
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class KeptLayer:
    def __init__(self, app):
        self.app = app
        self.postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
        self._pool = None
        self._pool_lock = asyncio.Lock()
        self._paused_until = 0.0
        self._due: dict[str, float] = {}  # pagecache key -> when a request went to Django to refresh it

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "GET" or settings.API_OWN_CACHE_MAX_BYTES <= 0:
            return await self.app(scope, receive, send)
        found = {}
        for name, value in scope["headers"]:
            if name in _READ:
                if name in found:  # Django reads a repeated header as one (its values joined): it answers
                    return await self.app(scope, receive, send)
                found[name] = value
        if b"cookie" in found or b"if-none-match" in found:  # Django's `condition` answers a 304
            return await self.app(scope, receive, send)
        # what a body can depend on, then the encodings the client takes (a public answer's variant)
        identity = (scope.get("scheme"), found.get(b"host"), found.get(b"x-forwarded-proto"),
                    found.get(b"x-forwarded-host"), scope["path"], scope.get("query_string", b""),
                    found.get(b"accept-encoding"))
        if b"authorization" not in found:
            return await self._public(scope, receive, send, identity)
        key = _token(found[b"authorization"])
        if key is not None and self.postgres and OWN.fullmatch(scope["path"]):
            return await self._own(scope, receive, send, identity, key)
        return await self.app(scope, receive, send)

    async def _public(self, scope, receive, send, identity) -> None:
        """A public answer (a page for a visitor without a session, the API's tasks and boards),
        kept while web/pagecache would answer the same value without a database read."""
        cache_key = (None, ("public", *identity[:-1]))
        kept = owncache.peek(cache_key)
        refreshing = None
        if kept is not None:
            (pagecache_key, built_at), (plain, packed) = kept
            now = pagecache.servable(pagecache_key)
            if now is not None and now[0] == built_at:
                # when pagecache would first read the fingerprint or rebuild, one request goes to
                # Django to do it; the others get this value meanwhile, as inside Django
                due, started = now[1], self._due.get(pagecache_key)
                if not due or (started is not None and time.monotonic() - started < DUE_S):
                    return await _send(send, packed if packed is not None and _accepts_gzip(identity[-1]) else plain)
                refreshing = pagecache_key
                self._due[refreshing] = time.monotonic()

        def label(headers, said):
            if PUBLIC_HEADER not in said or any(name.lower() == b"set-cookie" for name, _ in headers):
                return None
            built_at, _, shown = said[PUBLIC_HEADER].decode("latin-1").partition(" ")
            if not _own_address(shown, scope["path"], scope.get("query_string", b"")):
                return None  # a parameter the view does not read: Django's cache answers it, unkept here
            stamp = (shown, float(built_at))
            again = owncache.peek(cache_key)
            if again is not None and again[0] == stamp:
                return None  # kept already (compressing it again would cost what keeping saves)
            return stamp, False

        try:
            await self._pass_on(scope, receive, send, cache_key, label, kept_as=_variants)
        finally:
            if refreshing is not None:
                self._due.pop(refreshing, None)

    async def _own(self, scope, receive, send, identity, key: str) -> None:
        """A caller's own read, kept while the stamp of their submissions holds."""
        if time.monotonic() < self._paused_until:
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
        cache_key = (user_id, ("own", *identity[:-1]))
        recorded = last_used_at is not None and time.time() - last_used_at.timestamp() < RECORDED_S
        kept = owncache.get(cache_key, stamp) if recorded else None
        if kept is not None:
            return await _send(send, kept)

        def label(headers, said):
            return (stamp, said[OWN_HEADER] == b"unfinished") if OWN_HEADER in said else None

        await self._pass_on(scope, receive, send, cache_key, label)

    async def _pass_on(self, scope, receive, send, cache_key, label, kept_as=None) -> None:
        """Django's answer to the request, marked, sent as it comes without the view's word to
        this layer; kept under the stamp `label(headers, said)` gives ((stamp, unfinished) or None),
        as `kept_as(headers, body)` makes it (on a thread: it may compress) or as it came."""
        scope = dict(scope, headers=[*scope["headers"], MARK])
        start, chunks, said = None, [], {}

        async def sending(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = []
                for name, value in message.get("headers", []):
                    if name.lower() in (OWN_HEADER, PUBLIC_HEADER):
                        said[name.lower()] = value
                    else:
                        headers.append((name, value))
                if PUBLIC_HEADER in said:  # the same headers as the kept answer will have
                    headers = _vary(headers)
                start = message = dict(message, headers=headers)
            elif message["type"] == "http.response.body" and said and start["status"] == 200:
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    keep = label(start["headers"], said)
                    if keep is not None:
                        body = b"".join(chunks)
                        await send(message)
                        if kept_as is None:
                            value, size = (200, start["headers"], body), len(body)
                        else:
                            value = await asyncio.to_thread(kept_as, start["headers"], body)
                            size = sum(len(answer[2]) for answer in value if answer is not None)
                        owncache.put(cache_key, keep[0], value, size + 512, unfinished=keep[1])
                        return
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
                await cur.execute(owncache.token_stamp_sql(), [key_hash], prepare=True)
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
