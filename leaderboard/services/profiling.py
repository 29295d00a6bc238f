"""Profile mode on the site: its own rate limit, the stored .ncu-rep, and who may have it.

A profile runs its owner's kernel under a profiler (evaluator/judge/profile.py; docs/profile.md) and is
never ranked. Profiles are counted per account in Redis by django-ratelimit, the library and
cache of the login and sign-up throttles (leaderboard/web/throttle.py), on top of the hourly
upload limit every submission counts against. The .ncu-rep came out of the submission's own
process: the site stores it as bytes and hands it back to the owner and staff, never opens it.
"""
from __future__ import annotations

import hashlib
import logging

from django.conf import settings

from leaderboard.models import Submission
from leaderboard.models.profile import ProfileFile

log = logging.getLogger(__name__)

GROUP = "profile-runs"
PERIOD_WORDS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


def _per(rate: str) -> str:
    """"10/h" -> "hour", "5/15m" -> "15 minutes" (django-ratelimit's rate syntax)."""
    period = rate.partition("/")[2].strip()
    digits = period.rstrip("smhd")
    unit = PERIOD_WORDS.get(period[len(digits):] or "s", "second")
    return f"{digits} {unit}s" if digits and digits != "1" else unit


def check_rate(*, user) -> None:
    """Count one profile run of this account; RateLimited once its limit is passed. A counter that
    cannot be reached refuses every profile: a limit that cannot count must not let runs through."""
    from django_ratelimit import ALL
    from django_ratelimit.core import get_usage

    from leaderboard.services.errors import RateLimited

    rate = settings.PROFILES_PER_USER
    try:
        usage = get_usage(None, group=GROUP, key=lambda group, request: str(user.pk), rate=rate,
                          method=ALL, increment=True)
    except Exception as exc:  # the cache's errors vary by client library
        log.warning("profile limit: cannot reach its counters (%s): refusing", type(exc).__name__)
        usage = {"count": 0, "limit": 0, "should_limit": True, "time_left": -1}
    if usage is None or not usage["should_limit"]:  # None: throttling is off (RATELIMIT_ENABLE)
        return
    if usage["time_left"] < 0:
        raise RateLimited("Profile runs cannot be counted right now, so none is accepted. Try again in a "
                          "minute; test and ranked uploads are not affected.", code="rate_limited",
                          params={"retry_after_s": 60})
    minutes = max(1, (usage["time_left"] + 59) // 60)
    raise RateLimited(
        f"Profile limit reached: {usage['limit']} profile run{'s' if usage['limit'] != 1 else ''} per "
        f"{_per(rate)}. Try again in {minutes} "
        f"minute{'s' if minutes != 1 else ''}; test and ranked uploads are not affected.",
        code="rate_limited", params={"retry_after_s": max(1, usage["time_left"])})


def profile_file_store(*, submission: Submission, data: bytes | None) -> None:
    """Keep the .ncu-rep a profile run brought back, replacing an earlier run's; no file (or not a
    profile) removes it, so a re-run never shows the previous run's file."""
    from evaluator import PROFILE_FILE_MAX_BYTES

    if not data or submission.mode != Submission.Mode.PROFILE or len(data) > PROFILE_FILE_MAX_BYTES:
        ProfileFile.objects.filter(submission=submission).delete()
        return
    ProfileFile.objects.update_or_create(
        submission=submission,
        defaults={"data": bytes(data), "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})


def profile_file_for_viewer(*, submission_id: int, user) -> ProfileFile | None:
    """The stored .ncu-rep of a finished profile run, for its owner and staff; None otherwise (a
    published submission opens its code, not its profile)."""
    submission = Submission.objects.filter(pk=submission_id).only("pk", "user_id", "mode", "status").first()
    if (submission is None or not submission.can_view(user) or submission.mode != Submission.Mode.PROFILE
            or submission.status != Submission.Status.DONE):
        return None
    return ProfileFile.objects.filter(submission=submission).first()


def profile_file_size(*, submission: Submission) -> int | None:
    return ProfileFile.objects.filter(submission=submission).values_list("size", flat=True).first()
