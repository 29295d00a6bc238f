"""The evaluation pipeline's writes: sending the message, claiming a row, the heartbeat, storing
a result, and the repair job that finds rows whose worker or message was lost.

Every write after the claim is conditional on the claim token, so a worker whose claim was
re-queued meanwhile changes nothing.
"""
from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from evaluator import verdict_word
from leaderboard import scoring
from leaderboard.celery import app
from leaderboard.models import LOGS_MAX_CHARS, Submission
from leaderboard.routing import EVALUATE_TASK, eval_queue_for
from leaderboard.serving import finish_wait
from leaderboard.services.boards import board_entries_refresh

log = logging.getLogger(__name__)


def submission_enqueue(*, submission: Submission) -> bool:
    """Send the evaluation message, by the task's name. A broker that is down is logged, not
    raised: the row stays queued and the stuck-submission job sends it again."""
    try:
        app.send_task(
            EVALUATE_TASK,
            args=[submission.pk],
            task_id=submission.celery_task_id,
            queue=eval_queue_for(submission.device_type),
            retry=True,
            retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5},
        )
        return True
    except Exception as exc:  # the broker's errors vary by transport; the reaper resends
        log.warning("could not enqueue submission %s: %s", submission.pk, exc)
        return False


def submission_claim(*, submission_id: int, worker: str = "") -> Submission | None:
    """Take a queued submission for evaluation. Only one caller ever wins: the update is
    conditional on status=queued, so a duplicate message finds nothing to do."""
    token = uuid.uuid4().hex
    now = timezone.now()
    won = Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED).update(
        status=Submission.Status.RUNNING,
        phase="starting sandbox",
        claim_token=token,
        worker=worker[:200],
        attempts=F("attempts") + 1,
        started_at=now,
        heartbeat_at=now,
        error="",
    )
    if won != 1:
        return None
    return Submission.objects.select_related("task").get(pk=submission_id)


def fair_order(*, device_type: str, now=None):
    """Queued submissions of one device type that are due, in the order a worker takes them: users
    in turn (the user whose last evaluation started longest ago, or never, first), then each user's
    own uploads by arrival. One user's burst thus waits behind everyone else's next upload."""
    now = now or timezone.now()
    last_start = (Submission.objects.filter(user=OuterRef("user_id"), started_at__isnull=False)
                  .order_by("-started_at").values("started_at")[:1])
    return (Submission.objects
            .filter(status=Submission.Status.QUEUED, device_type=device_type)
            .filter(Q(enqueued_at__lte=now) | Q(enqueued_at__isnull=True))
            .annotate(user_last_start=Subquery(last_start))
            .order_by(F("user_last_start").asc(nulls_first=True), "created_at", "pk"))


def submission_claim_next(*, submission_id: int, message_id: str = "", worker: str = "") -> Submission | None:
    """What a worker runs for the message of `submission_id`: the first submission in fair order
    (of the same device type), which need not be the message's own.

    Every queued row keeps the id of a message that is in the broker: when this message runs
    another row, the two rows swap message ids, so the stuck-submission job sees nothing lost."""
    own = Submission.objects.filter(pk=submission_id).values("device_type").first()
    if own is None:
        return None
    candidates = list(fair_order(device_type=own["device_type"]).values_list("pk", "celery_task_id")[:5])
    for pk, their_message in candidates:
        if pk == submission_id:
            return submission_claim(submission_id=pk, worker=worker)
        with transaction.atomic():
            claimed = submission_claim(submission_id=pk, worker=worker)
            if claimed is None:
                continue  # another worker took it first: try the next in line
            if message_id:
                Submission.objects.filter(pk=pk).update(celery_task_id=message_id)
                claimed.celery_task_id = message_id
                Submission.objects.filter(pk=submission_id, status=Submission.Status.QUEUED,
                                          celery_task_id=message_id).update(celery_task_id=their_message)
        log.info("message for submission %s runs submission %s (its user's turn)", submission_id, pk)
        return claimed
    # nothing due but perhaps the message's own row (e.g. a retry whose delay is just over)
    return submission_claim(submission_id=submission_id, worker=worker)


def _current(submission: Submission):
    """The row, as long as the caller's claim is the current one."""
    return Submission.objects.filter(
        pk=submission.pk, status=Submission.Status.RUNNING, claim_token=submission.claim_token
    )


def submission_set_phase(*, submission: Submission, phase: str) -> bool:
    submission.phase = phase
    return _current(submission).update(phase=phase[:200], heartbeat_at=timezone.now()) == 1


def submission_heartbeat(*, submission: Submission) -> bool:
    return _current(submission).update(heartbeat_at=timezone.now()) == 1


@transaction.atomic
def submission_store_result(*, submission: Submission, report, logs: str = "") -> bool:
    """Store an evaluator report (the sandbox's evaluator.Report, or its JSON, checked here by
    Report.from_untrusted) as the submission's result: its to_json() in the report column, the
    fields the boards read beside it. Stores only under the current claim (a worker whose claim
    was re-queued meanwhile stores nothing). True if stored. The board's read model changes in
    the same transaction; waiters hear of it once committed."""
    from evaluator import Report, ReportError

    try:
        report = report if isinstance(report, Report) else Report.from_untrusted(report)
    except ReportError as exc:
        return submission_fail(submission=submission, error="The evaluation could not run: the evaluator's report was invalid. This is not your code.",
                               detail=str(exc))
    if report.task != submission.task.name or report.mode != submission.mode:
        return submission_fail(
            submission=submission,
            error="The evaluation could not run: the evaluator reported on another evaluation. This is not your code.",
            detail=f"The report is for {report.task}/{report.mode}, not {submission.task.name}/{submission.mode}.",
        )
    verdict = report.verdict
    device_type = report.device_type
    scored = submission.mode == Submission.Mode.RANKED and verdict != Submission.Verdict.REJECTED
    pct = None
    times = {"median_ms": None, "noisy": False}
    speedup = report.speedup_vs_compile if scored else None
    shapes = report.shape_dicts()
    ties = scoring.tie_fields(speedup=speedup, shapes=shapes, device_type=device_type,
                              calibration=submission.task.calibration_for(device_type))
    if scored:
        pct = scoring.geomean(scoring.pct_of_floor_by_shape(task=submission.task, device_type=device_type,
                                                            shapes=shapes))
        times = scoring.board_time(shapes)
    all_logs = "\n".join(part for part in (report.logs, logs or "") if part)
    stored = _current(submission).update(
        status=Submission.Status.DONE,
        phase="",
        verdict=verdict,
        reasons=list(report.reasons),
        reason_codes=list(report.reason_codes),
        report=report.to_json(),
        logs=all_logs[-LOGS_MAX_CHARS:],
        speedup_vs_compile=speedup,
        **ties,
        speedup_vs_eager=report.speedup_vs_eager if scored else None,
        pct_of_floor=pct,
        median_ms=times["median_ms"],
        noisy=times["noisy"],
        gpu_name=report.gpu_name or "",
        versions=dict(report.versions),
        device_type=device_type,
        finished_at=timezone.now(),
        results_stored=F("results_stored") + 1,
    )
    if stored != 1:
        log.warning("submission %s: result not stored, the claim is no longer current", submission.pk)
    else:  # the worker's log says the result in the words of the pages (evaluator.verdict_word)
        log.info("submission %s: stored, %s", submission.pk,
                 verdict_word(verdict, submission.mode, hidden=submission.hidden))
        if submission.mode == Submission.Mode.RANKED:
            board_entries_refresh(task_id=submission.task_id, user_id=submission.user_id,
                                  device_types={submission.device_type, device_type})
        transaction.on_commit(lambda: finish_wait.announce(submission.pk))
    return stored == 1


ERROR_DETAIL_MAX_CHARS = 64_000


def _error_fields(error: str, detail: str) -> dict:
    fields = {"error": error[:4000]}
    if detail:
        fields.update(error_detail=detail[-ERROR_DETAIL_MAX_CHARS:], error_at=timezone.now())
    return fields


def submission_fail(*, submission: Submission, error: str, detail: str = "") -> bool:
    """End the current claim as failed (an infrastructure problem, not the user's code). `error`
    is for the owner (words, no host paths); `detail`, the whole trace, is for staff only."""
    failed = _current(submission).update(
        status=Submission.Status.FAILED, phase="", finished_at=timezone.now(), **_error_fields(error, detail)
    ) == 1
    if failed:  # after the commit of a caller's transaction (submission_store_result's), at once without one
        transaction.on_commit(lambda: finish_wait.announce(submission.pk))
    return failed


def submission_release_for_retry(*, submission: Submission, error: str, countdown_s: int, detail: str = "") -> bool:
    """Give the claim back so that a retried message can claim it again."""
    return _current(submission).update(
        status=Submission.Status.QUEUED,
        claim_token="",
        phase=f"retrying in {countdown_s} s after an infrastructure error",
        enqueued_at=timezone.now() + timedelta(seconds=countdown_s),
        **_error_fields(error, detail),
    ) == 1


def _requeue_running(*, submission: Submission, why: str) -> str:
    """A running row whose worker is gone: queue it again, or fail it after the last attempt.
    Returns "requeued", "failed" or "" when the row changed meanwhile."""
    if submission.attempts >= settings.EVAL_MAX_ATTEMPTS:
        done = _current(submission).update(
            status=Submission.Status.FAILED,
            phase="",
            error=(f"The evaluation could not run: it did not finish after {submission.attempts} attempts "
                   f"({why}). This is not your code; staff can run it again."),
            finished_at=timezone.now(),
        )
        if done:
            finish_wait.announce(submission.pk)
        return "failed" if done else ""
    task_id = uuid.uuid4().hex
    with transaction.atomic():
        done = _current(submission).update(
            status=Submission.Status.QUEUED,
            claim_token="",
            phase=f"re-queued: {why}",
            celery_task_id=task_id,
            enqueued_at=timezone.now(),
        )
        if done:
            submission.celery_task_id = task_id
            transaction.on_commit(lambda: submission_enqueue(submission=submission))
    return "requeued" if done else ""


def submissions_requeue_stuck(*, now=None, broker_task_ids=None, alive_nodes=None) -> dict:
    """The periodic repair job.

    - running, but the heartbeat stopped (worker killed) or it ran past the hard time limit plus
      a margin: queue again, or fail after EVAL_MAX_ATTEMPTS claims;
    - queued for a while and its message is not in the broker (lost in a Redis restart, or the
      broker was down at upload): send the message again.

    `broker_task_ids(queues) -> set | None` lists the task ids the broker holds (None: unknown,
    then every old queued row is re-sent; the claim makes duplicates harmless).
    `alive_nodes() -> set | None` names the workers whose heartbeat key lives (liveness.py): a
    running row whose worker is not among them is queued again at once, without waiting for its
    row's heartbeat to go stale (None: unknown, the row's heartbeat alone decides).
    """
    now = now or timezone.now()
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    stale = now - timedelta(seconds=settings.EVAL_STALE_AFTER_S)
    too_long = now - timedelta(seconds=settings.EVAL_HARD_LIMIT_S + settings.EVAL_STALE_AFTER_S)
    running = Submission.objects.filter(status=Submission.Status.RUNNING)
    stuck = {sub.pk: sub for sub in running.filter(heartbeat_at__lt=stale) | running.filter(started_at__lt=too_long)}
    alive = alive_nodes() if alive_nodes else None
    if alive is not None:
        # claimed longer ago than a heartbeat key lives: a live worker has renewed its key since
        settled = now - timedelta(seconds=settings.WORKER_ALIVE_TTL_S)
        for sub in running.filter(started_at__lt=settled).exclude(worker__in=alive):
            stuck.setdefault(sub.pk, sub)
    for sub in stuck.values():
        if sub.heartbeat_at and sub.heartbeat_at < stale:
            why = "the worker stopped responding"
        elif sub.started_at and sub.started_at < too_long:
            why = "it ran too long"
        else:
            why = f"its worker {sub.worker or '?'} is gone"
        result = _requeue_running(submission=sub, why=why)
        if result:
            counts[result] += 1
    old = now - timedelta(seconds=settings.EVAL_LOST_MESSAGE_AFTER_S)
    queued = list(Submission.objects.filter(status=Submission.Status.QUEUED, enqueued_at__lt=old))
    if queued:
        queues = sorted({eval_queue_for(s.device_type) for s in queued})
        present = broker_task_ids(queues) if broker_task_ids else None
        for sub in queued:
            if present is not None and sub.celery_task_id in present:
                continue
            bumped = Submission.objects.filter(
                pk=sub.pk, status=Submission.Status.QUEUED, enqueued_at=sub.enqueued_at
            ).update(enqueued_at=now)
            if bumped and submission_enqueue(submission=sub):
                counts["resent"] += 1
    return counts


def submissions_requeue_orphans(*, worker: str) -> int:
    """At worker start: rows still marked running by this worker name died with its previous run."""
    n = 0
    for sub in Submission.objects.filter(status=Submission.Status.RUNNING, worker=worker):
        if _requeue_running(submission=sub, why=f"the worker {worker} restarted") == "requeued":
            n += 1
    return n
