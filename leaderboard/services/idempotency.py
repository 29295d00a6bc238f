"""Uploads under an `Idempotency-Key`: a client that sends one upload twice with the same key (a
retry after a lost answer, two racing retries) makes one submission; the second request gets the
first one's submission.

The key is stored first, in the transaction that creates the submission, under a unique (user,
key): a second request with the key waits on that insert until the first commits, then fails it
and reads the first one's row; if the first rolls back (a refused upload) the second goes on as
the first. A key counts for IDEMPOTENCY_TTL; older ones are ignored, and deleted when their user
next uploads under a key."""
from __future__ import annotations

import hashlib
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from leaderboard.models import IdempotencyKey, Submission
from leaderboard.services.errors import KeyReused
from leaderboard.services.submissions import submission_create

IDEMPOTENCY_TTL = timedelta(hours=24)


def upload_fingerprint(*, task: str, mode: str, filename: str, source: bytes | str) -> str:
    """SHA-256 of an upload as the client sent it: the same four fields give the same value."""
    digest = hashlib.sha256()
    for text in (task, mode, filename):
        digest.update(str(text).encode("utf-8", "surrogatepass") + b"\0")
    digest.update(source if isinstance(source, bytes) else source.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _first(*, user, key: str, fingerprint: str) -> Submission | None:
    """The submission made under this user's key within the TTL; KeyReused if it came from
    another upload."""
    row = (IdempotencyKey.objects.select_related("submission__task")
           .filter(user=user, key=key, created_at__gte=timezone.now() - IDEMPOTENCY_TTL).first())
    if row is None or row.submission is None:
        return None
    if row.fingerprint != fingerprint:
        raise KeyReused(
            f"The Idempotency-Key {key[:64]!r} was sent with another upload (submission #{row.submission_id}) "
            "in the last 24 hours: send a new key for a new upload, or this upload unchanged to get that "
            "submission again.", code="idempotency_key_reused", params={"submission": row.submission_id})
    return row.submission


def submission_create_once(*, user, key: str, task: str, source: bytes | str, filename: str,
                           mode: str) -> tuple[Submission, bool]:
    """(the new submission, True), or (the one this user made under `key` within the TTL, False).
    Raises KeyReused when that one came from another upload, and what submission_create raises."""
    fingerprint = upload_fingerprint(task=task, mode=mode, filename=filename, source=source)
    first = _first(user=user, key=key, fingerprint=fingerprint)
    if first is not None:
        return first, False
    try:
        with transaction.atomic():
            IdempotencyKey.objects.filter(user=user, created_at__lt=timezone.now() - IDEMPOTENCY_TTL).delete()
            row = IdempotencyKey.objects.create(user=user, key=key, fingerprint=fingerprint)
            submission = submission_create(user=user, task=task, source=source, filename=filename, mode=mode)
            row.submission = submission
            row.save(update_fields=["submission"])
    except IntegrityError:
        # another request with this key committed first: its submission is the answer
        first = _first(user=user, key=key, fingerprint=fingerprint)
        if first is None:
            raise
        return first, False
    return submission, True
