"""A caller's reads of their own work in the API (their list of submissions, one of their
submissions), kept per process under a stamp of that caller's submissions. An agent polling its
own results then costs one database round trip per request instead of a dozen queries and a
page of model instances (docs/bench/site-load.md).

The stamp is read on every request, in one round trip of index lookups, so a kept answer is never
older than the data it shows. It has the user's newest submission id (an upload; an import of
finished results: index sub_user_id) and sums up the user's unfinished submissions (the partial
index sub_user_active): their number, how many run, their attempts, their newest heartbeat and
newest enqueue time. A claim starts a run, each phase moves the heartbeat (services.pipeline), a
finish leaves the set, a re-queue or a retry moves the status and the enqueue time; submissions
are never deleted (the admin allows no deletion). It adds, for everyone, the newest audit entry,
task update and competition change: an audit decision, a publish or withhold, a re-run, a freeze
each write one of those.

Two things move without the user's rows moving: an unfinished submission's place in line and its
time elapsed. An answer that names an unfinished submission is kept at most
API_OWN_UNFINISHED_MAX_AGE_S (default 2 s). Someone else's submission (a public one, or staff
reading anyone's) is not kept: its owner's rows are not in the caller's stamp. Nor is a profile
run's (it names its stored .ncu-rep, whose rows the stamp does not follow).

Values live in this process's memory, least recently used out first, at most
API_OWN_CACHE_MAX_BYTES of answers (default 32 MiB). Under the ASGI server the answers are kept
whole (status, headers, body) one layer further out, in front of Django (leaderboard/serving/asgi_kept.py),
which reads the same stamp and uses this store; a request it passes on carries its mark, and the
view then says in a header whether the answer may be kept instead of keeping the body here."""
from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections import OrderedDict
from datetime import timezone as dt_timezone

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import HttpResponse
from django.utils import timezone

from leaderboard.models import ApiToken, AuditEntry, Competition, Submission, Task
from leaderboard.serving import layer_mark

# key -> (stamp, built at (monotonic) when it names an unfinished submission else None, value, size)
_entries: OrderedDict[tuple, tuple[tuple, float | None, object, int]] = OrderedDict()
_size = {"bytes": 0}
_lock = threading.Lock()


@functools.cache
def token_stamp_sql() -> str:
    """The token check and the stamp (above) in one query: built once, it is the same text on
    every request (and so one prepared statement per connection)."""
    sub, token = Submission._meta.db_table, ApiToken._meta.db_table
    return (
        "SELECT t.id, t.user_id, t.last_used_at,"
        " count(s.id), sum(CASE WHEN s.status = 'running' THEN 1 ELSE 0 END), sum(s.attempts),"
        " max(s.heartbeat_at), max(s.enqueued_at),"
        f" (SELECT max(n.id) FROM {sub} n WHERE n.user_id = t.user_id),"
        f" (SELECT max(id) FROM {AuditEntry._meta.db_table}), (SELECT max(updated_at) FROM {Task._meta.db_table}),"
        f" (SELECT max(updated_at) FROM {Competition._meta.db_table})"
        f" FROM {token} t JOIN {get_user_model()._meta.db_table} u ON u.id = t.user_id AND u.is_active"
        f" LEFT JOIN {sub} s ON s.user_id = t.user_id AND s.status IN ('queued', 'running')"
        " WHERE t.key_hash = %s GROUP BY t.id, t.user_id, t.last_used_at"
    )


def _fetchone(sql: str, params: list):
    """One row of a query this module runs on every request. On PostgreSQL as a prepared
    statement of the connection: planning it took four times as long as running it, and Django's
    cursors bind on the client side, which prepares nothing."""
    if connection.vendor != "postgresql":
        with connection.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchone()
    import psycopg

    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:  # Django's None turns preparing off on the connection; a
        raw.prepare_threshold = 2**31  # threshold no query reaches prepares only what asks to be
    with psycopg.Cursor(raw) as cur:
        cur.execute(sql, params, prepare=True)
        return cur.fetchone()


def token_stamp(key_hash: str) -> tuple[int, int, object, tuple] | None:
    """(token id, user id, the token's last use, the user's stamp) for the token with this hash
    and an active user, None for no such token: the API's token check and the stamp in one round
    trip, with no model built (auth.TokenAuth with `stamped`)."""
    return stamp_of(_fetchone(token_stamp_sql(), [key_hash]))


def stamp_of(row) -> tuple[int, int, object, tuple] | None:
    """token_stamp's answer from the row of token_stamp_sql()."""
    if row is None:
        return None
    last_used_at = row[2]
    if last_used_at is not None and timezone.is_naive(last_used_at):  # SQLite's raw rows: UTC, naive
        last_used_at = timezone.make_aware(last_used_at, dt_timezone.utc)
    return row[0], row[1], last_used_at, tuple(row[3:])


def get(key: tuple, stamp: tuple):
    """The value kept under `key`, if it was kept under this stamp (and, naming an unfinished
    submission, not longer ago than API_OWN_UNFINISHED_MAX_AGE_S); else None."""
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        stale = entry[1] is not None and time.monotonic() - entry[1] >= settings.API_OWN_UNFINISHED_MAX_AGE_S
        if entry[0] != stamp or stale:
            _drop(key)
            return None
        _entries.move_to_end(key)
        return entry[2]


def peek(key: tuple):
    """(the stamp, the value) kept under `key`, unchecked, or None: for a caller that checks the
    stamp itself (the ASGI layer's public answers)."""
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        _entries.move_to_end(key)
        return entry[0], entry[2]


def _drop(key: tuple) -> None:
    entry = _entries.pop(key, None)
    if entry is not None:
        _size["bytes"] -= entry[3]


def put(key: tuple, stamp: tuple, value, size: int, unfinished: bool) -> None:
    """Keeps `value` (`size` bytes) under `key` and the stamp read before it was built."""
    limit = settings.API_OWN_CACHE_MAX_BYTES
    if size > limit // 8:
        return
    with _lock:
        _drop(key)
        _entries[key] = (stamp, time.monotonic() if unfinished else None, value, size)
        _size["bytes"] += size
        while _size["bytes"] > limit:
            _drop(next(iter(_entries)))


def clear() -> None:
    with _lock:
        _entries.clear()
        _size["bytes"] = 0


class Built:
    """What a build returns: the body, whether the caller owns everything in it, and whether it
    names an unfinished submission."""

    def __init__(self, body: bytes, *, own: bool, unfinished: bool):
        self.body, self.own, self.unfinished = body, own, unfinished


def answer(request, build) -> HttpResponse:
    """The caller's answer for this address: kept, when its stamp still holds, else built by
    `build() -> Built` (which raises the API's refusals, never kept). The stamp comes with the
    token check (request.lb_stamp: user id, stamp; auth.TOKEN_STAMPED); without a token nothing
    is kept. A request the ASGI layer passed on is built, and the answer says whether the layer
    may keep it."""
    stamped = getattr(request, "lb_stamp", None)
    if stamped is None or settings.API_OWN_CACHE_MAX_BYTES <= 0:
        return _response(build().body)
    if layer_mark.from_layer(request):
        built = build()
        response = _response(built.body)
        if built.own:
            response[layer_mark.OWN_HEADER] = "unfinished" if built.unfinished else "finished"
        return response
    user_id, stamp = stamped
    key = (user_id, request.build_absolute_uri())
    body = get(key, stamp)
    if body is None:
        built = build()
        body = built.body
        if built.own:
            put(key, stamp, body, len(body), built.unfinished)
    return _response(body)


def _response(body: bytes) -> HttpResponse:
    return HttpResponse(body, content_type="application/json")


def etag(request, *args, submission_id: int | None = None, **kwargs) -> str | None:
    """The ETag of the caller's own answer at this address, for Django's `condition` on the two
    views (a matching If-None-Match is a 304, with no build): the caller, their stamp and the
    address, so any write that moves the stamp gives a new one. While the caller has unfinished
    submissions it also moves every API_OWN_UNFINISHED_MAX_AGE_S (their place in line and time
    elapsed move without the stamp), and with that age at 0 there is none. None, and so no ETag,
    for an answer that is not all the caller's own (someone else's submission, a profile run:
    the stamp does not follow them) and without a token."""
    stamped = getattr(request, "lb_stamp", None)
    if stamped is None:
        return None
    user_id, stamp = stamped
    age = settings.API_OWN_UNFINISHED_MAX_AGE_S
    if stamp[0] and age <= 0:
        return None
    if submission_id is not None and not Submission.objects.filter(
            pk=submission_id, user_id=user_id).exclude(mode=Submission.Mode.PROFILE).exists():
        return None
    moment = int(time.time() // age) if stamp[0] else 0
    return hashlib.sha256(repr((user_id, stamp, moment, request.build_absolute_uri())).encode()).hexdigest()[:32]
