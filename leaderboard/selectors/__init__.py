"""Every read the pages, the admin and the API make. Keyword-only, no writes.

Boards, submissions, users and the audit trail here; in modules of their own: competitions
(state, standings, what a freeze waits for), queue (a waiting submission's place in line and the
usual time of an evaluation) and export (a competition's standings as JSON Lines)."""
from __future__ import annotations

from collections import Counter

from django.db.models import Case, Count, F, OuterRef, Q, QuerySet, Subquery, When
from django.db.models.functions import Coalesce

from leaderboard import scoring
from leaderboard.models import AuditEntry, Profile, Submission, Task
from leaderboard.services.opencode import competition_open_reasons

# What may rank: a finished, ranked, verified, visible result of a user who is not banned.
RANKED = Q(
    mode=Submission.Mode.RANKED,
    status=Submission.Status.DONE,
    verdict=Submission.Verdict.VERIFIED,
    hidden=False,
    speedup_vs_compile__isnull=False,
)
NOT_BANNED = ~Q(user__profile__banned=True)


# what a board reads of its entries (the page, the API and whether the code is open): nothing
# else, as building 2,400 full instances was most of a board's cost; the charts read the top
# entries' reports themselves
BOARD_FIELDS = ("user_id", "user__username", "task_id", "mode", "device_type", "speedup_vs_compile",
                "speedup_vs_eager", "pct_of_floor", "median_ms", "noisy", "gpu_name", "created_at", "finished_at",
                "hidden", "code_withheld_at", "published_at", "vs_compile", "vs_compile_low", "vs_compile_high",
                "board_speedup")
# a board's order: by speedup over torch.compile with a tie at 1.00 (scoring.board_speedup), then
# the earlier upload (so ties with torch.compile stand in the order they were uploaded), then the id
BEST_FIRST = [F("board_speedup").desc(), F("created_at").asc(), F("pk").asc()]


def ranked_submissions(*, task: Task | None = None, device_type: str | None = None) -> QuerySet[Submission]:
    qs = Submission.objects.filter(RANKED).filter(NOT_BANNED)
    if task is not None:
        qs = qs.filter(task=task)
    if device_type is not None:
        qs = qs.filter(device_type=device_type)
    return qs


def task_list_with_stats() -> QuerySet[Task]:
    """Tasks with `best_speedup` (best ranked speedup over torch.compile, any device type), the
    device type it was measured on (`best_device_type`), `submission_count` (every submission:
    every mode, test and profile runs too, any status, rejected ones too) and `ranked_count` (the
    verified ranked results among them that rank: not hidden, not a banned user's; any device)."""
    # one subquery per task and figure: the best is the first entry of the sub_task_best index,
    # the count an index-only scan. A join of every submission with its user and profile, grouped
    # by task, took over a second with 100,000 submissions (bench/site_load.py).
    best = ranked_submissions().filter(task=OuterRef("pk")).order_by("-board_speedup", "created_at")
    count = (Submission.objects.filter(task=OuterRef("pk")).order_by().values("task")
             .annotate(n=Count("*")).values("n"))
    ranked = (ranked_submissions().filter(task=OuterRef("pk")).order_by().values("task")
              .annotate(n=Count("*")).values("n"))
    return Task.objects.annotate(
        submission_count=Coalesce(Subquery(count), 0),
        ranked_count=Coalesce(Subquery(ranked), 0),
        best_speedup=Subquery(best.values("speedup_vs_compile")[:1]),
        best_device_type=Subquery(best.values("device_type")[:1]),
        best_vs_compile=Subquery(best.values("vs_compile")[:1]),
    ).order_by(Case(When(track=Task.BUILTIN, then=0), default=1), "track", "name")


def task_tracks(tasks) -> list[dict]:
    """Tasks in their tracks, built-in first, then each added track by name: [{"track", "label",
    "tasks"}]; within a track by problem number (a KernelBench-style name's leading integer),
    then name."""
    groups: dict[str, list] = {}
    for task in tasks:
        groups.setdefault(task.track, []).append(task)

    def number_first(task):
        head = task.name.split("_", 1)[0]
        return (int(head) if head.isdigit() else -1, task.name)

    order = sorted(groups, key=lambda t: (t != Task.BUILTIN, t))
    return [{"track": t, "label": track_label(t), "tasks": sorted(groups[t], key=number_first)} for t in order]


def track_label(track: str) -> str:
    """A track's name as the pages show it."""
    if track == Task.BUILTIN:
        return "Built-in tasks"
    if track.startswith("kernelbench-level") and track[len("kernelbench-level"):].isdigit():
        return f"KernelBench-style, level {track[len('kernelbench-level'):]}"
    return f"Track {track}"


def device_types_for_task(*, task: Task) -> list[str]:
    """Device types to offer for this task: those with ranked entries, plus those it has floors for."""
    # order_by(): with the model's ordering, DISTINCT would also be over created_at (a row per entry)
    ranked = set(ranked_submissions(task=task).values_list("device_type", flat=True).order_by().distinct())
    return sorted(ranked | set(task.floors or {}))


def device_types_with_results(*, task: Task) -> dict[str, int]:
    """{device type: number of ranked entries} for this task."""
    rows = ranked_submissions(task=task).values("device_type").annotate(n=Count("pk")).order_by()
    return {r["device_type"]: r["n"] for r in rows}


def _board(*, task: Task, device_type: str) -> QuerySet[Submission]:
    # the boards' read model names each user's best (services.boards keeps it on every write):
    # ranking every ranked row of the task with a window read about 9,000 of 100,000 rows
    return (Submission.objects.filter(board_entries__task=task, board_entries__device_type=device_type)
            .order_by(*BEST_FIRST))


def leaderboard_for_task(*, task: Task, device_type: str) -> list[Submission]:
    """Best ranked submission per user on one device type, fastest over torch.compile first (a tie
    with torch.compile at 1.00, scoring.board_speedup). Equal standing goes to the earlier upload."""
    # reading (and decoding) every entry's code, logs and report, and building full instances,
    # made a board of 2,400 entries take 0.46 s, 0.05 s of it in SQL
    entries = list(_board(task=task, device_type=device_type).select_related("user").only(*BOARD_FIELDS))
    for rank, entry in enumerate(entries, start=1):
        entry.rank = rank
    return entries


BOARD_ROW_FIELDS = ("pk", "user__username", "speedup_vs_compile", "speedup_vs_eager", "pct_of_floor", "median_ms",
                    "noisy", "gpu_name", "created_at", "hidden", "code_withheld_at", "published_at", "vs_compile",
                    "vs_compile_low", "vs_compile_high")


def leaderboard_rows_for_task(*, task: Task, device_type: str) -> list[dict]:
    """leaderboard_for_task as rows (BOARD_ROW_FIELDS and "rank"), for a reader that needs no
    model instance: building 2,443 instances and their users took half the time of the API's
    board (95 ms against 43)."""
    rows = list(_board(task=task, device_type=device_type).values(*BOARD_ROW_FIELDS))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return rows


def reports_attach(*, entries: list[Submission]) -> None:
    """Give these board entries (which leave reports out) their reports, read in one query."""
    reports = dict(Submission.objects.filter(pk__in=[e.pk for e in entries]).values_list("pk", "report"))
    for entry in entries:
        entry.report = reports.get(entry.pk)


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


# what a summary of a submission (the API's list) never reads: the bulky columns, and the task's
# own beyond its name; the JSON among them cost a fifth of a page of 100 to decode
SUMMARY_DEFERRED = ("source", "report", "logs", "error", "error_detail", "reasons", "reason_codes", "versions",
                    *(f"task__{name}" for name in ("description", "signature", "reference_source", "input_names",
                                                   "test_shapes", "bench_shapes", "tolerance", "floors",
                                                   "calibration")))


def submission_summaries_for_user(*, user) -> QuerySet[Submission]:
    """A user's submissions for a list of summaries (leaderboard/api/views.py, submission_json
    with summary=True)."""
    return Submission.objects.filter(user=user).select_related("task").defer(*SUMMARY_DEFERRED)


def submission_is_public(*, submission: Submission) -> bool:
    """A result every visitor may read: an entry on a leaderboard, or one whose code is open.
    Test runs, rejected and flagged results stay between their owner and staff."""
    if code_open_reason(submission=submission):
        return True
    if not submission.is_ranked or submission.speedup_vs_compile is None:
        return False
    return not Profile.objects.filter(user_id=submission.user_id, banned=True).exists()


def submission_for_viewer(*, submission_id: int, user) -> Submission | None:
    """The submission if this user may see its page (owner, staff, or a public entry), else None."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    if sub is None or not (sub.can_view(user) or submission_is_public(submission=sub)):
        return None
    return sub


def code_open_reason(*, submission: Submission) -> str:
    """Why this submission's code is open to every visitor, in words; "" while it is not.
    Every reason code opens for goes here (an owner's publication, an entry of a closed
    competition's standings), so every page asks one place. Staff withholding wins over both."""
    return code_open_reasons(submissions=[submission])[submission.pk]


def code_open_reasons(*, submissions) -> dict[int | None, str]:
    """code_open_reason of each submission, {id: reason or ""}, in at most one query however many
    there are (a board asks for every row)."""
    submissions = list(submissions)
    closed = [s for s in submissions if not s.code_withheld_at and not s.published_at]
    by_competition = competition_open_reasons(submissions=closed)
    reasons = {}
    for s in submissions:
        if s.code_withheld_at:
            reasons[s.pk] = ""
        elif s.published_at:
            reasons[s.pk] = f"published by its owner on {s.published_at:%Y-%m-%d}"
        else:
            reasons[s.pk] = by_competition.get(s.pk, "")
    return reasons


def code_visible(*, submission: Submission, user) -> bool:
    """The code and the logs: the owner and staff, or anyone once the code is open."""
    return submission.can_view(user) or bool(code_open_reason(submission=submission))


def flagged_queue() -> QuerySet[Submission]:
    """Ranked results the evaluator flagged, waiting for an admin's decision. A flagged test or
    profile run never ranks, so no decision on it changes a board: it is not in the queue (the
    admin's submission list still finds it)."""
    return (
        Submission.objects.filter(status=Submission.Status.DONE, verdict=Submission.Verdict.FLAGGED, hidden=False,
                                  mode=Submission.Mode.RANKED)
        .select_related("task", "user")
        .order_by("created_at")
    )


def audit_for_submission(*, submission: Submission) -> QuerySet[AuditEntry]:
    return AuditEntry.objects.filter(submission=submission).select_related("actor").order_by("created_at")


def shape_rows(*, submission: Submission) -> list[dict]:
    """Per benchmark shape of a result: the report's row plus the floor used, % of it, and how
    widely the timed calls spread (`band`, `noisy`)."""
    report = submission.typed_report
    rows = []
    for row in report.shapes if report else ():
        floor = scoring.floor_ms_for(task=submission.task, device_type=submission.device_type,
                                     shape=row.shape, report_floor_ms=row.floor_ms)
        stored = row.to_json()
        band = scoring.widest_band(stored)
        # the judge measures a GPU's ceilings itself; where its floor differs from the published
        # one the page says which one the below-floor check used
        differs = bool(floor and row.floor_ms and abs(row.floor_ms - floor) > 0.02 * floor)
        rows.append({**stored, "floor_ms": floor, "judge_floor_ms": row.floor_ms if differs else None,
                     "pct_of_floor": scoring.pct_of_floor(floor, row.candidate_ms),
                     "band_pct": band * 100 if band is not None else None,
                     "noisy": scoring.shape_is_noisy(stored)})
    return rows


def calibration_for_task(*, task: Task, device_type: str) -> dict:
    """What the pages say about the ruler on this device type: the stored readings, whether they
    are within the bound and the bound itself (services.task_record_calibration), or none."""
    entry = task.calibration_for(device_type)
    return {"measured": True, **entry} if entry else {"measured": False}


def tie_bands_for_task(*, task: Task, device_types) -> list[dict]:
    """The tie rule's band (scoring.calibration_band) on each device type the task has results
    on, a board for, or a calibration of: [{"device_type", "band", "source", "compile_vs_compile"}],
    in the order given, then the calibrated ones not among them."""
    order = list(dict.fromkeys([*device_types, *sorted(task.calibration or {})]))
    out = []
    for device_type in order:
        if scoring.device_kind(device_type) not in scoring.CALIBRATION_TOLERANCE:
            continue
        entry = task.calibration_for(device_type)
        band = scoring.calibration_band(device_type=device_type, calibration=entry)
        out.append({"device_type": device_type, **band,
                    "compile_vs_compile": (entry or {}).get("compile_vs_compile")})
    return out


def audit_queue(*, reason_code: str = "") -> list[Submission]:
    """The review queue, oldest first (the longest wait on top), optionally one reason code only."""
    # the report stays unread; the one key of it the reasons' words need comes along
    # (leaderboard.web.result.own_kernels)
    queue = (flagged_queue().defer("source", "logs", "report")
             .annotate(kernels_launched=F("report__kernels_launched")))
    # filtered here, not in SQL: JSON containment differs between PostgreSQL and SQLite, and the
    # queue is short
    return [s for s in queue if not reason_code or reason_code in (s.reason_codes or [])]


def infrastructure_failures(*, limit: int = 50) -> list[Submission]:
    """Evaluations that could not run (the judge, the box or the worker failed), the latest
    failure first: failed for good, being retried, or finished on a later attempt."""
    rows = (Submission.objects.filter(error_at__isnull=False).select_related("task", "user")
            .defer("source", "logs", "report").order_by("-error_at")[:limit])
    for row in rows:
        lines = [line for line in row.error_detail.splitlines() if line.strip()]
        row.error_last_line = lines[-1].strip()[:200] if lines else ""
    return list(rows)


REJECTED_WINDOW = 500  # the latest rejections the console reads; filters apply within them


def rejected_recent(*, reason_code: str = "", username: str = "", limit: int = 100) -> list[Submission]:
    """Who tried what: the latest rejected evaluations (every mode: a cheat tried in test mode is
    still tried), newest first, optionally one reason code or one user only."""
    rows = (Submission.objects.filter(status=Submission.Status.DONE, verdict=Submission.Verdict.REJECTED)
            .select_related("task", "user").defer("source", "logs", "report")
            .annotate(kernels_launched=F("report__kernels_launched"))  # what the reasons' words read
            .order_by("-finished_at", "-pk"))
    if username:
        rows = rows.filter(user__username=username)
    # filtered here, not in SQL: JSON containment differs between PostgreSQL and SQLite
    picked = [s for s in rows[:REJECTED_WINDOW] if not reason_code or reason_code in (s.reason_codes or [])]
    return picked[:limit]


def rejected_by_user(*, limit: int = 20) -> list[tuple[str, int, list[str]]]:
    """(user, how many of the latest rejections are theirs, their reason codes, most frequent
    first), the users with the most first."""
    counts: Counter[str] = Counter()
    codes: dict[str, Counter[str]] = {}
    rows = (Submission.objects.filter(status=Submission.Status.DONE, verdict=Submission.Verdict.REJECTED)
            .order_by("-finished_at", "-pk").values_list("user__username", "reason_codes")[:REJECTED_WINDOW])
    for name, reason_codes in rows:
        counts[name] += 1
        codes.setdefault(name, Counter()).update(set(reason_codes or []))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return [(name, n, [c for c, _ in sorted(codes[name].items(), key=lambda kv: (-kv[1], kv[0]))])
            for name, n in ranked]


def audit_queue_reasons() -> list[tuple[str, int]]:
    """(reason code, how many queued submissions carry it), most frequent first."""
    counts: dict[str, int] = {}
    for codes in flagged_queue().values_list("reason_codes", flat=True):
        for code in set(codes or []):
            counts[code] = counts.get(code, 0) + 1
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))


def earlier_submissions(*, submission: Submission, limit: int = 20) -> list[Submission]:
    """The owner's earlier submissions to the same task, newest first."""
    return list(
        Submission.objects.filter(user_id=submission.user_id, task_id=submission.task_id,
                                  created_at__lt=submission.created_at)
        .order_by("-created_at")
        .defer("logs", "report")[:limit]
    )
