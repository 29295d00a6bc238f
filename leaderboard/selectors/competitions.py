"""Reads for competitions: their state, standings, what the freeze waits for, late submissions,
removals. Keyword-only, no writes (leaderboard/services/competitions.py writes; why a competition opens
code is leaderboard/services/opencode.py's)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import F, Q, QuerySet, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from leaderboard.models import AuditEntry, Competition, CompetitionEntry, Submission, Task
from leaderboard.selectors import BEST_FIRST, NOT_BANNED, ranked_submissions

UPCOMING, OPEN, SETTLING, FROZEN = "upcoming", "open", "settling", "frozen"
PENDING = (Submission.Status.QUEUED, Submission.Status.RUNNING)


def competition_state(*, competition: Competition, now=None) -> str:
    """upcoming, open, settling (closed, some results still to come) or frozen."""
    now = now or timezone.now()
    if competition.frozen_at:
        return FROZEN
    if now < competition.opens_at:
        return UPCOMING
    if now < competition.closes_at:
        return OPEN
    return SETTLING


def competition_list(*, now=None) -> list[Competition]:
    """Open ones first (closing soonest first), then upcoming, then the closed, newest first."""
    now = now or timezone.now()
    items = list(Competition.objects.prefetch_related("tasks"))
    for c in items:
        c.state = competition_state(competition=c, now=now)

    def key(c):
        if c.state == OPEN:
            return (0, c.closes_at.timestamp())
        if c.state == UPCOMING:
            return (1, c.opens_at.timestamp())
        return (2, -c.closes_at.timestamp())

    return sorted(items, key=key)


def _window_start(competition: Competition):
    """Where the window really starts: its opening, or its creation if that came later. Nothing
    uploaded before the competition existed counts, whatever its opening time says."""
    return max(competition.opens_at, competition.created_at or competition.opens_at)


def _in_window(competition: Competition) -> Q:
    return Q(created_at__gte=_window_start(competition), created_at__lt=competition.closes_at)


def _device_filter(competition: Competition) -> Q:
    # a GPU run may be queued as "cuda" and stored under its GPU's name
    return Q(device_type__in=sorted(_device_types_matched(competition)))


def _window_ranked(competition: Competition) -> QuerySet[Submission]:
    """Ranked submissions to the competition's tasks and devices uploaded inside its window."""
    return Submission.objects.filter(_in_window(competition), _device_filter(competition),
                                     mode=Submission.Mode.RANKED, task__in=competition.tasks.all())


def evaluating_count(*, competition: Competition) -> int:
    """Ranked submissions uploaded inside the window that are still queued or running."""
    return _window_ranked(competition).filter(status__in=PENDING).count()


def awaiting_review(*, competition: Competition) -> list[Submission]:
    """Ranked results uploaded inside the window that the evaluator flagged and staff have not
    decided on yet: an approval would put them in the standings, so the freeze waits for them.
    Oldest first."""
    return list(
        _window_ranked(competition)
        .filter(NOT_BANNED, status=Submission.Status.DONE, verdict=Submission.Verdict.FLAGGED, hidden=False)
        .select_related("user", "task").defer("source", "logs", "report").order_by("created_at", "pk")
    )


def pending_count(*, competition: Competition) -> int:
    """What the freeze waits for: window results still being evaluated or awaiting review."""
    return evaluating_count(competition=competition) + len(awaiting_review(competition=competition))


def reviews_holding(*, now=None) -> dict[int, list[Competition]]:
    """{submission id: the competitions not yet frozen whose standings its review decides}, for
    the audit console: the flagged results inside the window of an open or closed competition."""
    now = now or timezone.now()
    found: dict[int, list[Competition]] = {}
    for competition in Competition.objects.filter(frozen_at__isnull=True, opens_at__lte=now).order_by("closes_at"):
        for sub in awaiting_review(competition=competition):
            found.setdefault(sub.pk, []).append(competition)
    return found


def live_standings(*, competition: Competition, task: Task, device_type: str) -> list[Submission]:
    """Each user's best ranked submission uploaded inside the window, fastest first (ties to the
    earlier upload), computed from the submissions as they are now."""
    qs = (
        ranked_submissions(task=task, device_type=device_type)
        .filter(_in_window(competition))
        .select_related("user")
        .defer("source", "logs")
        .annotate(row=Window(RowNumber(), partition_by=[F("user_id")], order_by=BEST_FIRST))
        .filter(row=1)
        .order_by(*BEST_FIRST)
    )
    return list(qs)


@dataclass
class Board:
    """The standings of one task on one device type."""

    task: Task
    device_type: str
    rows: list[dict] = field(default_factory=list)
    removed: list[dict] = field(default_factory=list)  # frozen entries a disqualification took out


def _row(rank: int, submission_id: int, user, speedups, when) -> dict:
    return {"rank": rank, "submission_id": submission_id, "username": user.get_username(),
            "speedup_vs_compile": speedups[0], "speedup_vs_eager": speedups[1], "pct_of_floor": speedups[2],
            "date": when}


def _frozen_board(competition: Competition, task: Task, device_type: str) -> Board:
    board = Board(task=task, device_type=device_type)
    entries = (CompetitionEntry.objects.filter(competition=competition, task=task, device_type=device_type)
               .select_related("user", "submission").order_by("rank"))
    disqualified = disqualifications([e.submission_id for e in entries if e.submission.hidden])
    for entry in entries:
        speedups = (entry.speedup_vs_compile, entry.speedup_vs_eager, entry.pct_of_floor)
        if entry.submission.hidden:
            audit = disqualified.get(entry.submission_id)
            board.removed.append({
                **_row(entry.rank, entry.submission_id, entry.user, speedups, entry.submission.created_at),
                "removed_at": audit.created_at if audit else None,
                "removed_by": audit.actor.get_username() if audit and audit.actor else "",
                "reason": audit.reason if audit else "",
            })
        else:
            board.rows.append(_row(len(board.rows) + 1, entry.submission_id, entry.user, speedups,
                                   entry.submission.created_at))
            board.rows[-1]["rank_at_freeze"] = entry.rank
    return board


def disqualifications(submission_ids: list[int]) -> dict[int, AuditEntry]:
    """The latest disqualification of each submission: who, when, why."""
    found = {}
    rows = (AuditEntry.objects.filter(submission_id__in=submission_ids, action=AuditEntry.Action.DISQUALIFY)
            .select_related("actor").order_by("created_at"))
    for audit in rows:
        found[audit.submission_id] = audit
    return found


def standings(*, competition: Competition) -> list[Board]:
    """Per task and device type: the frozen standings once frozen, else the live ones."""
    boards = []
    for task in competition.tasks.order_by("name"):
        for device_type in competition.device_types:
            if competition.frozen_at:
                boards.append(_frozen_board(competition, task, device_type))
                continue
            board = Board(task=task, device_type=device_type)
            for rank, s in enumerate(live_standings(competition=competition, task=task, device_type=device_type), 1):
                speedups = (s.speedup_vs_compile, s.speedup_vs_eager, s.pct_of_floor)
                board.rows.append(_row(rank, s.pk, s.user, speedups, s.created_at))
            boards.append(board)
    return boards


def _late_until(competition: Competition):
    """The end of the grace period after the close: an upload before it is "after the deadline"
    of this competition; a later one has nothing more to do with it."""
    return competition.closes_at + timedelta(days=settings.COMPETITION_LATE_DAYS)


def after_deadline(*, competition: Competition, limit: int = 50) -> list[Submission]:
    """Ranked results uploaded within the grace period after the close to the competition's tasks
    and devices: they rank on the permanent boards (so every visitor may see them), never in the
    standings. Newest first."""
    return list(
        ranked_submissions()
        .filter(_device_filter(competition), task__in=competition.tasks.all(),
                created_at__gte=competition.closes_at, created_at__lt=_late_until(competition))
        .select_related("user", "task").defer("source", "logs", "report")
        .order_by("-created_at")[:limit]
    )


def competitions_for_submission(*, submission: Submission) -> list[dict]:
    """The competitions a ranked submission was uploaded for: {"competition", "late"} each. In
    time: uploaded inside the window while the competition existed. Late: uploaded within the
    grace period after the close (evaluated and shown, never in the standings)."""
    if submission.mode != Submission.Mode.RANKED:
        return []
    when = submission.created_at
    candidates = Competition.objects.filter(tasks=submission.task, opens_at__lte=when, created_at__lte=when)
    return [
        {"competition": c, "late": when >= c.closes_at}
        for c in candidates.order_by("opens_at")
        if submission.device_type in _device_types_matched(c) and when < _late_until(c)
    ]


def open_for_upload(*, device_type: str, now=None) -> list[Competition]:
    """The competitions a ranked upload made now on this device type enters, closing soonest
    first, each with `task_list` (its tasks by name): what the upload form tells the uploader."""
    now = now or timezone.now()
    found = []
    for c in Competition.objects.filter(opens_at__lte=now, closes_at__gt=now).order_by("closes_at"):
        if device_type in _device_types_matched(c):
            c.task_list = list(c.tasks.order_by("name"))
            found.append(c)
    return found


def _device_types_matched(competition: Competition) -> set[str]:
    return {*competition.device_types, *(d.split(":", 1)[0] for d in competition.device_types)}


def frozen_entries(*, competition: Competition) -> QuerySet[CompetitionEntry]:
    """Every entry of the frozen standings, removed ones included, in standings order."""
    return (CompetitionEntry.objects.filter(competition=competition)
            .select_related("task", "user", "submission").order_by("task__name", "device_type", "rank"))
