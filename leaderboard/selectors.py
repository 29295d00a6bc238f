"""Every read the pages, the admin and the API make. Keyword-only, no writes."""
from __future__ import annotations

from django.db.models import Count, F, Max, Q, QuerySet, Window
from django.db.models.functions import RowNumber

from leaderboard.models import AuditEntry, Submission, Task

# What may rank: a finished, ranked, verified, visible result of a user who is not banned.
RANKED = Q(
    mode=Submission.Mode.RANKED,
    status=Submission.Status.DONE,
    verdict=Submission.Verdict.VERIFIED,
    hidden=False,
    speedup_vs_compile__isnull=False,
)
NOT_BANNED = ~Q(user__profile__banned=True)


def ranked_submissions(*, task: Task | None = None, device_type: str | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.filter(RANKED).filter(NOT_BANNED)
    if task is not None:
        qs = qs.filter(task=task)
    if device_type is not None:
        qs = qs.filter(device_type=device_type)
    return qs


def task_list_with_stats() -> QuerySet[Task]:
    """Tasks with `best_speedup` (best ranked speedup over torch.compile, any device type) and
    `submission_count` (every submission, any status)."""
    ranked = Q(submissions__mode="ranked", submissions__status="done", submissions__verdict="verified",
               submissions__hidden=False) & ~Q(submissions__user__profile__banned=True)
    return Task.objects.annotate(
        submission_count=Count("submissions"),
        best_speedup=Max("submissions__speedup_vs_compile", filter=ranked),
    ).order_by("name")


def device_types_for_task(*, task: Task) -> list[str]:
    """Device types to offer for this task: those with ranked entries, plus those it has floors for."""
    ranked = set(ranked_submissions(task=task).values_list("device_type", flat=True).distinct())
    return sorted(ranked | set(task.floors or {}))


def leaderboard_for_task(*, task: Task, device_type: str) -> list[Submission]:
    """Best ranked submission per user on one device type, fastest over torch.compile first.
    Ties go to the earlier submission."""
    best_first = [F("speedup_vs_compile").desc(), F("created_at").asc(), F("pk").asc()]
    qs = (
        ranked_submissions(task=task, device_type=device_type)
        .select_related("user")
        # the page shows neither: 100k rows of code and logs made the rebuild 2.4x slower (bench)
        .defer("source", "logs")
        .annotate(row=Window(RowNumber(), partition_by=[F("user_id")], order_by=best_first))
        .filter(row=1)
        .order_by(*best_first)
    )
    entries = list(qs)
    for rank, entry in enumerate(entries, start=1):
        entry.rank = rank
    return entries


def submission_history_for_task(*, task: Task, device_type: str, limit: int = 2000) -> list[dict]:
    """Ranked results over time (for the speedup-over-time chart), oldest first, the latest `limit`."""
    rows = (
        ranked_submissions(task=task, device_type=device_type)
        .order_by("-created_at")
        .values("pk", "created_at", "speedup_vs_compile", "speedup_vs_eager", "pct_of_floor", "user__username")[:limit]
    )
    return list(reversed(rows))


def submissions_for_user(*, user) -> QuerySet[Submission]:
    return Submission.objects.filter(user=user).select_related("task").defer("source", "report", "logs")


def submission_for_viewer(*, submission_id: int, user) -> Submission | None:
    """The submission if this user may see it (its owner or staff), else None."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    if sub is None or not sub.can_view(user):
        return None
    return sub


def flagged_queue() -> QuerySet[Submission]:
    """Results the evaluator flagged, waiting for an admin's decision."""
    return (
        Submission.objects.filter(status=Submission.Status.DONE, verdict=Submission.Verdict.FLAGGED, hidden=False)
        .select_related("task", "user")
        .order_by("created_at")
    )


def audit_for_submission(*, submission: Submission) -> QuerySet[AuditEntry]:
    return AuditEntry.objects.filter(submission=submission).select_related("actor").order_by("created_at")


# a side whose timed calls spread wider than this (p90 - p10, relative to the median) marks the
# run noisy: on session 4's H200 a quiet run's widest band was ~15 %, a disturbed one's 35-50 %
NOISY_BAND = 0.25


def _widest_band(row: dict) -> float | None:
    """The widest (p90 - p10) / median over candidate, eager and compile; None for reports that
    carry no percentiles (before session 4)."""
    bands = []
    for side in ("candidate", "eager", "compile"):
        lo, mid, hi = (row.get(f"{side}_p10_ms"), row.get(f"{side}_ms"), row.get(f"{side}_p90_ms"))
        if lo is not None and hi is not None and mid:
            bands.append((hi - lo) / mid)
    return max(bands) if bands else None


def shape_rows(*, submission: Submission) -> list[dict]:
    """Per benchmark shape of a result: the report's row plus the floor used, % of it, and how
    widely the timed calls spread (`band`, `noisy`)."""
    from leaderboard.services import floor_ms_for

    report = submission.report or {}
    rows = []
    for row in report.get("shapes") or []:
        floor = floor_ms_for(task=submission.task, device_type=submission.device_type,
                             shape=row.get("shape"), report_floor_ms=row.get("floor_ms"))
        cand = row.get("candidate_ms")
        band = _widest_band(row)
        rows.append({**row, "floor_ms": floor,
                     "pct_of_floor": floor / cand * 100 if floor and cand and cand > 0 else None,
                     "band_pct": band * 100 if band is not None else None,
                     "noisy": band is not None and band > NOISY_BAND})
    return rows


def calibration_for_task(*, task: Task, device_type: str) -> dict:
    """What the pages say about the ruler on this device type: the stored readings, whether they
    are within the target and the target itself (services.task_record_calibration), or none."""
    entry = task.calibration_for(device_type)
    return {"measured": True, **entry} if entry else {"measured": False}
