"""Caching of the public pages and API reads, in Django's cache framework (the "answers" cache:
Redis, shared by every web process): whole responses for visitors without a session, and the
parts that are the same for every viewer (rendered tables, task details, figures) for everyone
else.

A cached value belongs to a fingerprint of the data that can change what the pages show: the
newest submission, the newest stored result, the newest audit entry (approve, disqualify, re-run,
ban, unban, publish and withhold all write one), the newest task update and the newest
competition change (a freeze opens code the task boards mark). When the fingerprint moves, the
next request rebuilds the value; requests arriving while it is being rebuilt get the previous
value instead of waiting (or of rebuilding it too: 50 clients building a task page at once would
take the machine down). One request of the whole site builds a value at a time (a lock in the
cache, `cache.add`); only the very first build of a value is waited for.

Each process reads the fingerprint at most every WEB_FINGERPRINT_MAX_AGE_S seconds (default 1),
so that under load the public pages cost one cache read and no database query, and a value is
rebuilt at most every WEB_REBUILD_MIN_INTERVAL_S seconds (default 5), so that results arriving
every second do not keep the CPU busy rebuilding pages. A value whose last rebuild took long
waits longer: REBUILD_COST_FACTOR times that rebuild's time, at most REBUILD_MAX_INTERVAL_S. A
build holds its process's interpreter lock for most of its time, and with it the other requests
of that process (docs/bench/site-load.md). Tests set both intervals to 0.

Keys are the address with only the query parameters a view reads (`only_read`): `?x=<random>`
keys no new entry. A page is kept with its gzip-compressed bytes, compressed once when built;
a client that takes gzip gets those. When the cache cannot be reached, pages are built for each
request (slowly, but they are served).
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import logging
import threading
import time
import urllib.parse

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.db import connection
from django.http import HttpResponse, QueryDict
from django.utils.cache import patch_vary_headers

from leaderboard.models import AuditEntry, Competition, Submission, Task

log = logging.getLogger(__name__)

REBUILD_COST_FACTOR = 100  # a value is rebuilt at most every this many times its last rebuild's time
REBUILD_MAX_INTERVAL_S = 30.0  # ... and at least this often while its data changes
BUILD_LOCK_S = 60  # a build lock outlives a process that died while building by at most this
FIRST_BUILD_WAIT_S = 30.0  # a request waits this long at most for another's first build
GZIP_MIN_BYTES = 1024

_memo = {"at": float("-inf"), "value": ""}
_fingerprint_lock = threading.Lock()
# the cache's key version this process uses: clear() moves it on (tests change settings that the
# data fingerprint does not follow); the values of an older version age out of the cache
_version = {"n": 1}


def store():
    return caches["answers"]


def kept(key: str):
    """The value kept under `key`, or None (also when the cache cannot be reached)."""
    try:
        return store().get(key, version=_version["n"])
    except Exception as exc:  # Redis away: the caller builds instead
        log.warning("answers cache unreadable: %r", exc)
        return None


def keep(key: str, value, timeout=DEFAULT_TIMEOUT) -> bool:
    """Keeps `value` under `key` (for `timeout` seconds; the cache's own expiry by default)."""
    try:
        store().set(key, value, timeout, version=_version["n"])
        return True
    except Exception as exc:
        log.warning("answers cache unwritable: %r", exc)
        return False


def _read_fingerprint() -> str:
    sub = Submission._meta.db_table
    audit = AuditEntry._meta.db_table
    task = Task._meta.db_table
    competition = Competition._meta.db_table
    with connection.cursor() as cur:
        # index lookups in one round trip (primary keys, the finished_at index, two tiny tables)
        cur.execute(
            f"SELECT (SELECT max(id) FROM {sub}), (SELECT max(finished_at) FROM {sub}),"
            f" (SELECT max(id) FROM {audit}), (SELECT max(updated_at) FROM {task}),"
            f" (SELECT max(updated_at) FROM {competition})"
        )
        row = cur.fetchone()
    return "-".join("0" if v is None else str(v.timestamp() if hasattr(v, "timestamp") else v) for v in row)


def data_fingerprint() -> str:
    max_age = getattr(settings, "WEB_FINGERPRINT_MAX_AGE_S", 1.0)
    now = time.monotonic()
    if now - _memo["at"] < max_age:
        return _memo["value"]
    # one thread reads it; the others keep the previous value meanwhile (if there is one)
    if not _fingerprint_lock.acquire(blocking=not _memo["value"] or max_age <= 0):
        return _memo["value"]
    try:
        if time.monotonic() - _memo["at"] < max_age:
            return _memo["value"]
        value = _read_fingerprint()
        _memo["at"], _memo["value"] = time.monotonic(), value
        return value
    finally:
        _fingerprint_lock.release()


def _key(key: str) -> str:
    """The cache's key: readable, with no space or control character (which a cache key may not
    hold), unless a visitor's address makes it long."""
    key = urllib.parse.quote(key, safe="/:?=&%+-_.~")
    return key if len(key) <= 200 else "long:" + hashlib.sha256(key.encode()).hexdigest()


def _answers(entry, fingerprint: str) -> bool:
    """Whether cached() answers with this entry as it is: its data is current, or it was rebuilt
    a moment ago (a change then shows at the next rebuild)."""
    interval = getattr(settings, "WEB_REBUILD_MIN_INTERVAL_S", 5.0)
    if interval > 0:
        interval = max(interval, min(REBUILD_COST_FACTOR * entry[3], REBUILD_MAX_INTERVAL_S))
    return entry[0] == fingerprint or time.time() - entry[2] < interval


def cached(key: str, build, *, fingerprint: str | None = None):
    """build()'s value for the current data fingerprint, built once for the site (see above)."""
    fingerprint = fingerprint or data_fingerprint()
    key = _key(key)
    entry = kept(key)
    if entry is not None and _answers(entry, fingerprint):
        return entry[1]
    cache, lock, version = store(), key + ":building", _version["n"]
    try:
        building = not cache.add(lock, 1, BUILD_LOCK_S, version=version)
    except Exception:
        building = False
    if building:
        if entry is not None:
            return entry[1]  # someone is rebuilding it: the previous value meanwhile
        deadline = time.monotonic() + FIRST_BUILD_WAIT_S
        while time.monotonic() < deadline:  # the first build: wait for whoever does it
            time.sleep(0.05)
            entry = kept(key)
            if entry is not None:
                return entry[1]
    try:
        started = time.monotonic()
        value = build()
        took = time.monotonic() - started if entry is not None else 0.0  # a first build pays for imports
        keep(key, (fingerprint, value, time.time(), took))
        return value
    finally:
        if not building:
            try:
                cache.delete(lock, version=version)
            except Exception:
                pass


def clear() -> None:
    """Forget the fingerprint, and stop using what this process kept before (for the tests: a
    test also gets a key prefix of its own, tests/conftest.py)."""
    _memo["at"], _memo["value"] = float("-inf"), ""
    _version["n"] += 1


def only_read(request, reads: tuple[str, ...]) -> str:
    """The query string of the parameters a view reads (`reads`, the first value of each, in that
    order), for a cache key: a parameter no view reads (`?x=<random>`) must not make a new entry
    and force a build. The request's GET becomes just those, so the view cannot read another."""
    kept = [(name, request.GET[name]) for name in reads if name in request.GET]
    request.GET = QueryDict(urllib.parse.urlencode(kept))
    return urllib.parse.urlencode(kept)


def packed(content_type: str, body: bytes) -> tuple[str, bytes, bytes | None]:
    """A body as kept: its type, its bytes, and those compressed once with gzip (None when too
    small or not text)."""
    compress = len(body) >= GZIP_MIN_BYTES and content_type.startswith(("text/", "application/json"))
    return content_type, body, gzip.compress(body, compresslevel=6, mtime=0) if compress else None


def _takes_gzip(request) -> bool:
    """Accept-Encoding allows gzip: `gzip` or `*` without a zero weight (RFC 9110)."""
    for item in request.headers.get("Accept-Encoding", "").lower().split(","):
        name, _, params = item.strip().partition(";")
        if name.strip() in ("gzip", "x-gzip", "*"):
            return params.replace(" ", "") not in ("q=0", "q=0.0", "q=0.00", "q=0.000")
    return False


def response(request, value: tuple[str, bytes, bytes | None]) -> HttpResponse:
    """The answer for a value of packed(): compressed for a client that takes gzip."""
    content_type, body, compressed = value
    if compressed is not None and _takes_gzip(request):
        answer = HttpResponse(compressed, content_type=content_type)
        answer["Content-Encoding"] = "gzip"
    else:
        answer = HttpResponse(body, content_type=content_type)
    if compressed is not None:
        patch_vary_headers(answer, ("Accept-Encoding",))
    return answer


def anonymous_page(view=None, *, reads: tuple[str, ...] = ()):
    """Whole-page cache for visitors without a session: the public pages are the same for all of
    them, so the response is kept per path, the query parameters the view reads (`reads`) and the
    data fingerprint. A request carrying a session or pending messages always runs the view; only
    200 responses that set no cookie are kept."""
    if view is None:
        return functools.partial(anonymous_page, reads=reads)

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        query = only_read(request, reads)
        if request.method != "GET" or settings.SESSION_COOKIE_NAME in request.COOKIES or "messages" in request.COOKIES:
            return view(request, *args, **kwargs)

        def render():
            answer = view(request, *args, **kwargs)
            if answer.status_code == 200 and not answer.streaming and not answer.cookies:
                return packed(answer["Content-Type"], answer.content)
            raise _NotCacheable(answer)

        key = "page:" + request.path + ("?" + query if query else "")
        try:
            value = cached(key, render)
        except _NotCacheable as exc:
            return exc.response
        return response(request, value)

    return wrapper


class _NotCacheable(Exception):
    def __init__(self, response):
        super().__init__("not cacheable")
        self.response = response
