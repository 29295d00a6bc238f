"""A caller's reads of their own work in the API (their list of submissions, one of their
submissions), kept in Django's cache framework (the "answers" cache: Redis, shared by every web
process) under a stamp of that caller's submissions, and sent with an ETag: a client that sends
it back (If-None-Match) gets 304 Not Modified while the answer holds, through Django's
`condition` decorator on the two views. An agent polling its own results then costs one database
round trip and one cache read per request instead of a dozen queries and a page of model
instances.

The stamp is read with the token check, in one round trip of index lookups, so a kept answer is
never older than the data it shows. It has the user's newest submission id (an upload; an import
of finished results: index sub_user_id) and sums up the user's unfinished submissions (the
partial index sub_user_active): their number, how many run, their attempts, their newest
heartbeat and newest enqueue time. A claim starts a run, each phase moves the heartbeat
(services.pipeline), a finish leaves the set, a re-queue or a retry moves the status and the
enqueue time; submissions are never deleted (the admin allows no deletion). It adds, for
everyone, the newest audit entry, task update and competition change: an audit decision, a
publish or withhold, a re-run, a freeze each write one of those.

Two things move without the user's rows moving: an unfinished submission's place in line and its
time elapsed. An answer that names an unfinished submission is kept API_OWN_UNFINISHED_MAX_AGE_S
(default 2 s; 0 keeps none), the cache's own expiry. Someone else's submission (a public one, or
staff reading anyone's) is not kept, and has no ETag: its owner's rows are not in the caller's
stamp. Nor is a profile run's (it names its stored .ncu-rep, whose rows the stamp does not
follow).

The key is the caller, the stamp, and the address with only the query parameters the view reads
(`?x=<random>` keys no new answer). When the cache cannot be reached, answers are built."""
from __future__ import annotations

import functools
import hashlib
from datetime import timezone as dt_timezone

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.contrib.auth import get_user_model
from django.db import connection
from django.http import HttpResponse
from django.utils import timezone
from django.utils.cache import quote_etag

from leaderboard.models import ApiToken, AuditEntry, Competition, Submission, Task
from leaderboard.web import pagecache


@functools.cache
def token_stamp_sql() -> str:
    """The token check and the stamp (above) in one query."""
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


def token_stamp(key_hash: str) -> tuple[int, int, object, tuple] | None:
    """(token id, user id, the token's last use, the user's stamp) for the token with this hash
    and an active user, None for no such token: the API's token check and the stamp in one round
    trip, with no model built (auth.TokenAuth with `stamped`)."""
    with connection.cursor() as cur:
        cur.execute(token_stamp_sql(), [key_hash])
        row = cur.fetchone()
    if row is None:
        return None
    last_used_at = row[2]
    if last_used_at is not None and timezone.is_naive(last_used_at):  # SQLite's raw rows: UTC, naive
        last_used_at = timezone.make_aware(last_used_at, dt_timezone.utc)
    return row[0], row[1], last_used_at, tuple(row[3:])


class Built:
    """What a build returns: the body, whether the caller owns everything in it, and whether it
    names an unfinished submission."""

    def __init__(self, body: bytes, *, own: bool, unfinished: bool):
        self.body, self.own, self.unfinished = body, own, unfinished


def _key(request, reads: tuple[str, ...]) -> str | None:
    """The cache key of this request's answer (also its ETag), None without a stamp (no token).
    Read once per request: the ETag check and the view both ask."""
    if "_lb_own_key" not in request.__dict__:
        stamped = getattr(request, "lb_stamp", None)
        key = None
        if stamped is not None:
            user_id, stamp = stamped
            query = pagecache.only_read(request, reads)
            address = request.build_absolute_uri(request.path) + ("?" + query if query else "")
            digest = hashlib.sha256(repr((stamp, address)).encode()).hexdigest()[:32]
            key = f"own:{user_id}:{digest}"
        request._lb_own_key = key
    return request._lb_own_key


def _kept(request, reads: tuple[str, ...]) -> bytes | None:
    if "_lb_own_kept" not in request.__dict__:
        key = _key(request, reads)
        kept = None
        if key is not None:
            kept = pagecache.kept(key)  # None also when the cache cannot be reached: built
        request._lb_own_kept = kept
    return request._lb_own_kept


def etag(reads: tuple[str, ...] = ()):
    """The etag_func of Django's `condition` for a view that answers with answer(): the key of
    a kept answer (so a match is a 304 without building anything), else None."""
    def of(request, *args, **kwargs):
        return _key(request, reads) if _kept(request, reads) is not None else None

    return of


def answer(request, build, reads: tuple[str, ...] = ()) -> HttpResponse:
    """The caller's answer for this address: kept, while its stamp holds, else built by
    `build() -> Built` (which raises the API's refusals, never kept) and kept if it is all the
    caller's own. A kept answer carries its ETag."""
    key = _key(request, reads)
    body = _kept(request, reads)
    if body is None:
        built = build()
        body = built.body
        max_age = settings.API_OWN_UNFINISHED_MAX_AGE_S if built.unfinished else DEFAULT_TIMEOUT
        if key is None or not built.own or max_age == 0 or not pagecache.keep(key, body, max_age):
            return _response(body)
    response = _response(body)
    response["ETag"] = quote_etag(key)
    return response


def _response(body: bytes) -> HttpResponse:
    return HttpResponse(body, content_type="application/json")
