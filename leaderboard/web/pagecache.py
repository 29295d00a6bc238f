"""Caching of the public pages: whole responses for visitors without a session, and the parts
that are the same for every viewer (rendered tables, task details, figures) for everyone else.

A cached value belongs to a fingerprint of the data that can change what the pages show: the
newest submission, the newest stored result, the newest audit entry (approve, disqualify, re-run,
ban, unban, publish and withhold all write one), the newest task update and the newest
competition change (a freeze opens code the task boards mark). When the fingerprint moves, the next
request rebuilds the value; requests arriving while it is being rebuilt get the previous value
instead of waiting (or of rebuilding it too: with 100,000 submissions a task page takes about
0.2 s of CPU to build, and 50 clients rebuilding it at once would take the machine down). Only
the very first build of a value is waited for, by one thread per process.

Each process reads the fingerprint at most every WEB_FINGERPRINT_MAX_AGE_S seconds (default 1),
so that under load the public pages cost no database query at all, and rebuilds a value at most
every WEB_REBUILD_MIN_INTERVAL_S seconds (default 5), so that results arriving every second do
not keep the CPU busy rebuilding pages. A value whose last rebuild took long waits longer:
REBUILD_COST_FACTOR times that rebuild's time, at most REBUILD_MAX_INTERVAL_S, so that no one
value's rebuilds take more than about 1 % of a process. A build holds the process's interpreter
lock for most of its time, and with it the event loop that sends every kept answer
(leaderboard/serving/asgi_kept.py): under one new result a second, the softmax board of 2,443 entries
without gzip answered p99 78-134 ms rebuilt every 5 s and 17 ms with no rebuild
(docs/bench/site-load.md). A value's first build in a process does not set the pace: it pays for
imports and templates once. Rebuilds take 10-100 ms on an idle machine, so there a page shows a
change at most about six seconds, plus one rebuild, after it happened; under load, at most about
half a minute. Tests set both intervals to 0.

Values live in this process's memory (no pickling), at most MAX_ENTRIES of them, least recently
used first out: query strings are chosen by visitors.
"""
from __future__ import annotations

import functools
import threading
import time
import urllib.parse
from collections import OrderedDict

from django.conf import settings
from django.db import connection
from django.http import HttpResponse, QueryDict

from leaderboard.models import AuditEntry, Competition, Submission, Task
from leaderboard.serving import layer_mark

MAX_ENTRIES = 512
REBUILD_COST_FACTOR = 100  # a value is rebuilt at most every this many times its last rebuild's time
REBUILD_MAX_INTERVAL_S = 30.0  # ... and at least this often while its data changes

_memo = {"at": float("-inf"), "value": ""}
# key -> (fingerprint, value, built at, the rebuild's seconds: 0 for a first build)
_entries: OrderedDict[str, tuple[str, object, float, float]] = OrderedDict()
_build_locks: dict[str, threading.Lock] = {}
_lock = threading.Lock()
_fingerprint_lock = threading.Lock()


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
        with _lock:
            _memo["at"], _memo["value"] = time.monotonic(), value
        return value
    finally:
        _fingerprint_lock.release()


def _get(key: str):
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            _entries.move_to_end(key)
        return entry


def _put(key: str, fingerprint: str, value, build_s: float) -> None:
    with _lock:
        _entries[key] = (fingerprint, value, time.monotonic(), build_s)
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            old, _ = _entries.popitem(last=False)
            _build_locks.pop(old, None)


def _build_lock(key: str) -> threading.Lock:
    with _lock:
        return _build_locks.setdefault(key, threading.Lock())


def _answers(entry, fingerprint: str, now: float) -> bool:
    """Whether cached() answers with this entry as it is: its data is current, or it was rebuilt
    a moment ago (a change then shows at the next rebuild)."""
    interval = getattr(settings, "WEB_REBUILD_MIN_INTERVAL_S", 5.0)
    if interval > 0:
        interval = max(interval, min(REBUILD_COST_FACTOR * entry[3], REBUILD_MAX_INTERVAL_S))
    return entry[0] == fingerprint or now - entry[2] < interval


def cached(key: str, build, *, fingerprint: str | None = None):
    """build()'s value for the current data fingerprint, built once per process (see above)."""
    fingerprint = fingerprint or data_fingerprint()
    entry = _get(key)
    if entry is not None and _answers(entry, fingerprint, time.monotonic()):
        return entry[1]
    lock = _build_lock(key)
    if entry is not None:
        if not lock.acquire(blocking=False):
            return entry[1]  # someone is rebuilding it: the previous value meanwhile
    else:
        lock.acquire()  # the first build: wait for whoever does it
    try:
        entry = _get(key)
        if entry is not None and entry[0] == fingerprint:
            return entry[1]
        started = time.monotonic()
        try:
            value = build()
        except BaseException:
            if entry is None:
                with _lock:
                    _build_locks.pop(key, None)  # a 404 or an error: keep nothing for this key
            raise
        _put(key, fingerprint, value, time.monotonic() - started if entry is not None else 0.0)
        return value
    finally:
        lock.release()


def servable(key: str) -> tuple[float, bool] | None:
    """What cached() would do for `key` right now, for the ASGI layer that sends the public
    answers it keeps (leaderboard/serving/asgi_kept.py): None when there is no value to answer with, else
    (the value's label: when it was built, whether cached() would first read the fingerprint or
    rebuild). While one request does that, cached() answers the others with this value."""
    max_age = getattr(settings, "WEB_FINGERPRINT_MAX_AGE_S", 1.0)
    if max_age <= 0:
        return None  # every request reads the fingerprint itself (data_fingerprint waits for it)
    now = time.monotonic()
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        return entry[2], now - _memo["at"] >= max_age or not _answers(entry, _memo["value"], now)


def offer(request, response, key: str, value) -> HttpResponse:
    """`response`, which shows cached()'s `value` for `key`; to the ASGI layer (a request it
    marked), with the label under which it may keep the whole answer, if `value` is still the
    entry's."""
    if layer_mark.from_layer(request):
        with _lock:
            entry = _entries.get(key)
            built_at = entry[2] if entry is not None and entry[1] is value else None
        if built_at is not None:
            response[layer_mark.PUBLIC_HEADER] = f"{built_at!r} {key}"
    return response


def clear() -> None:
    with _lock:
        _entries.clear()
        _build_locks.clear()
        _memo["at"], _memo["value"] = float("-inf"), ""


def only_read(request, reads: tuple[str, ...]) -> str:
    """The query string of the parameters a view reads (`reads`, the first value of each, in that
    order), for a cache key: a parameter no view reads (`?x=<random>`) must not make a new entry
    and force a build. The request's GET becomes just those, so the view cannot read another."""
    kept = [(name, request.GET[name]) for name in reads if name in request.GET]
    request.GET = QueryDict(urllib.parse.urlencode(kept))
    return urllib.parse.urlencode(kept)


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
            response = view(request, *args, **kwargs)
            if response.status_code == 200 and not response.streaming and not response.cookies:
                return (response["Content-Type"], response.content)
            raise _NotCacheable(response)

        key = "page:" + request.path + ("?" + query if query else "")
        try:
            value = cached(key, render)
        except _NotCacheable as exc:
            return exc.response
        return offer(request, HttpResponse(value[1], content_type=value[0]), key, value)

    return wrapper


class _NotCacheable(Exception):
    def __init__(self, response):
        super().__init__("not cacheable")
        self.response = response
