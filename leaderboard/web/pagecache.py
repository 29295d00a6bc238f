"""Caching of the public pages: whole responses for visitors without a session, and the parts
that are the same for every viewer (rendered tables, task details, figures) for everyone else.

A cached value is keyed by a fingerprint of the data that can change what the pages show: the
newest submission, the newest stored result, the newest audit entry (approve, disqualify, re-run,
ban and unban all write one) and the newest task update. Any of these moving gives a new key, so
a cached fragment is never older than the fingerprint.

Each process reads the fingerprint at most every WEB_FINGERPRINT_MAX_AGE_S seconds (default 1):
the public pages then cost no database query at all under load, and show a change at most that
long after it happened (docs/site-bench.md has the numbers). Tests set it to 0.
"""
from __future__ import annotations

import functools
import hashlib
import threading
import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import HttpResponse

from leaderboard.models import AuditEntry, Submission, Task

TIMEOUT_S = 600
_memo = {"at": float("-inf"), "value": ""}
_lock = threading.Lock()


def _read_fingerprint() -> str:
    sub = Submission._meta.db_table
    audit = AuditEntry._meta.db_table
    task = Task._meta.db_table
    with connection.cursor() as cur:
        # index lookups in one round trip (primary keys, the finished_at index, a tiny table)
        cur.execute(
            f"SELECT (SELECT max(id) FROM {sub}), (SELECT max(finished_at) FROM {sub}),"
            f" (SELECT max(id) FROM {audit}), (SELECT max(updated_at) FROM {task})"
        )
        row = cur.fetchone()
    return "-".join("0" if v is None else str(v.timestamp() if hasattr(v, "timestamp") else v) for v in row)


def data_fingerprint() -> str:
    max_age = getattr(settings, "WEB_FINGERPRINT_MAX_AGE_S", 1.0)
    now = time.monotonic()
    if now - _memo["at"] < max_age:
        return _memo["value"]
    value = _read_fingerprint()
    with _lock:
        _memo["at"], _memo["value"] = now, value
    return value


def cached(key: str, build, *, fingerprint: str | None = None):
    """build() once per data fingerprint (per process with the default local-memory cache)."""
    fingerprint = fingerprint or data_fingerprint()
    # device types have spaces and colons: hash to a key every cache backend accepts
    full_key = "web:" + hashlib.sha256(f"{key}|{fingerprint}".encode()).hexdigest()
    value = cache.get(full_key)
    if value is None:
        value = build()
        cache.set(full_key, value, TIMEOUT_S)
    return value


def anonymous_page(view):
    """Whole-page cache for visitors without a session: the public pages are the same for all of
    them, so the response is kept per URL and data fingerprint. A request carrying a session or
    pending messages always runs the view."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if request.method != "GET" or settings.SESSION_COOKIE_NAME in request.COOKIES or "messages" in request.COOKIES:
            return view(request, *args, **kwargs)
        full_key = "page:" + hashlib.sha256(f"{request.get_full_path()}|{data_fingerprint()}".encode()).hexdigest()
        hit = cache.get(full_key)
        if hit is not None:
            content_type, content = hit
            return HttpResponse(content, content_type=content_type)
        response = view(request, *args, **kwargs)
        if response.status_code == 200 and not response.streaming and not response.cookies:
            cache.set(full_key, (response["Content-Type"], response.content), TIMEOUT_S)
        return response

    return wrapper
