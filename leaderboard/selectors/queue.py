"""What the page and the API say about a submission that waits or runs: its place in line in its
queue, and how long an evaluation of its task usually takes on its device. Reads only.

The place is counted in `services.pipeline.fair_order`, the order in which workers claim queued
rows (users in turn, then each user's uploads by arrival), so it is the order that really runs.

Both reads are the same for every waiting submission of a device type (of a task), and each costs
several milliseconds with 100,000 rows: a process reads each at most every QUEUE_READS_MAX_AGE_S
seconds (default 1) and answers everyone from that (a list of 100 of one's submissions, every
page polling its place). Tests set it to 0.
"""
from __future__ import annotations

import statistics
import threading
import time

from django.conf import settings
from django.utils import timezone

from leaderboard.models import Submission
from leaderboard.services.pipeline import fair_order
from leaderboard.services.submissions import QUEUED_PHASE

# the typical duration is the median of this many of the latest verified runs
TYPICAL_OF_LAST = 20
# a place further back than this is said as "more than ..." (the page polls every 2 s)
COUNT_AT_MOST = 1000


_recent_reads: dict[tuple, tuple[float, object]] = {}
_recent_lock = threading.Lock()


def _recent(key: tuple, read):
    """read(), or what it gave in this process less than QUEUE_READS_MAX_AGE_S ago."""
    max_age = getattr(settings, "QUEUE_READS_MAX_AGE_S", 1.0)
    with _recent_lock:
        kept = _recent_reads.get(key)
    if kept is not None and time.monotonic() - kept[0] < max_age:
        return kept[1]
    value = read()
    with _recent_lock:
        _recent_reads[key] = (time.monotonic(), value)
    return value


def _line(device_type: str, now=None) -> dict[int, int]:
    """{submission id: place} of the first COUNT_AT_MOST queued rows of this device type."""
    def read():
        ids = fair_order(device_type=device_type, now=now).values_list("pk", flat=True)[:COUNT_AT_MOST]
        return {pk: place for place, pk in enumerate(ids, 1)}

    return read() if now is not None else _recent(("line", device_type), read)


def queue_position(*, submission: Submission, now=None) -> int | None:
    """1 for the next row a worker of its device type claims; None when it is not queued, or not
    due yet (a retry waiting out its delay), or further back than COUNT_AT_MOST."""
    if submission.status != Submission.Status.QUEUED:
        return None
    return _line(submission.device_type, now).get(submission.pk)


def typical_duration_s(*, task_id: int, mode: str, device_type: str) -> float | None:
    """The median duration (claim to result) of the latest verified runs of this task, mode and
    device type; None before the first."""
    return _recent(("typical", task_id, mode, device_type), lambda: _typical(task_id, mode, device_type))


def _typical(task_id: int, mode: str, device_type: str) -> float | None:
    runs = (Submission.objects
            .filter(task_id=task_id, mode=mode, device_type=device_type, status=Submission.Status.DONE,
                    verdict=Submission.Verdict.VERIFIED, started_at__isnull=False, finished_at__isnull=False)
            .order_by("-finished_at").values_list("started_at", "finished_at")[:TYPICAL_OF_LAST])
    durations = [(end - start).total_seconds() for start, end in runs if end >= start]
    return statistics.median(durations) if durations else None


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def about(seconds: float) -> str:
    """A duration as people say it: "about 40 s", "about 1 min", "about 3 min"."""
    if seconds < 55:
        return f"about {max(5, 5 * round(seconds / 5))} s"
    return f"about {max(1, round(seconds / 60))} min"


def live(*, submission: Submission, now=None) -> dict:
    """The waiting or running submission's `phase` in words (for a queued one its place in line),
    `queue_position` and `line` ("3rd in line"), `elapsed_s` (since upload while queued, since the
    claim while running), and `typical_s` with `typical`, the same in words. Empty once finished."""
    if submission.is_finished:
        return {}
    position = queue_position(submission=submission, now=now)  # None: the line as recently read
    now = now or timezone.now()
    phase, line = submission.phase, ""
    if position is not None:
        line = f"{ordinal(position)} in line"
        phase = f"queued, {line}"
        if submission.phase and submission.phase != QUEUED_PHASE:  # re-queued, retried: say why too
            phase += f" ({submission.phase})"
    since = submission.started_at if submission.status == Submission.Status.RUNNING else submission.created_at
    typical_s = typical_duration_s(task_id=submission.task_id, mode=submission.mode,
                                   device_type=submission.device_type)
    return {
        "phase": phase,
        "queue_position": position,
        "line": line,
        "elapsed_s": (now - since).total_seconds() if since else None,
        "typical_s": typical_s,
        "typical": "" if typical_s is None else f"{submission.mode} runs of this task take {about(typical_s)} here",
    }
