"""Every write the site makes: submissions and their life cycle, admin decisions, bans, API tokens.

Keyword-only functions that start with a status guard. Views, the admin, the API, the Celery tasks
and the management commands call these; none of them writes to the models directly.
"""
from __future__ import annotations

import logging
import math
import secrets
import uuid
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, OuterRef, Q, Subquery
from django.utils import timezone

from leaderboard.models import LOGS_MAX_CHARS, ApiToken, AuditEntry, Profile, Submission, Task

log = logging.getLogger(__name__)

# Pipeline knobs. Each can be set in settings; these are the defaults (docs/site.md explains them).
PIPELINE_DEFAULTS = {
    "EVAL_MAX_ATTEMPTS": 3,  # claims of one submission before it is marked failed
    "EVAL_RETRY_BACKOFF_S": 10,  # first retry after an infrastructure error; doubles each time
    "EVAL_OVERHEAD_S": 120,  # sandbox start and teardown on top of SANDBOX_TIME_LIMIT_S
    "EVAL_HEARTBEAT_S": 10,  # a running evaluation touches its row this often
    "EVAL_STALE_AFTER_S": 90,  # no heartbeat for this long: the worker is gone, re-queue
    "EVAL_LOST_MESSAGE_AFTER_S": 120,  # queued this long and absent from the broker: send again
    "EVAL_REAPER_INTERVAL_S": 30,  # how often the beat runs the repair job
    "WORKER_GPU_NAME": "",  # "NVIDIA H200": the device type of new submissions on a GPU site
    "EVAL_MAX_ACTIVE_PER_USER": 2,  # queued or running evaluations one user may have at a time
}


def conf(name: str):
    return getattr(settings, name, PIPELINE_DEFAULTS[name])


class RateLimited(ValidationError):
    pass


class QueueFull(RateLimited):
    """The user already has EVAL_MAX_ACTIVE_PER_USER evaluations queued or running."""


class NotAllowed(ValidationError):
    """The action does not apply to the object in its current state (a failed status guard)."""


# ---- routing -------------------------------------------------------------------------------


def default_device_type() -> str:
    """The device type new submissions are evaluated on: "cpu" or "cuda:<GPU name>"."""
    if settings.WORKER_DEVICE == "cpu":
        return "cpu"
    gpu = conf("WORKER_GPU_NAME")
    return f"cuda:{gpu}" if gpu else "cuda"


def device_kind(device_type: str) -> str:
    """What the evaluator is told: "cpu" or "cuda"."""
    return device_type.split(":", 1)[0]


def eval_queue_for(device_type: str) -> str:
    """One queue per device type. The site's own device type uses settings.EVAL_QUEUE (what its
    workers consume); others get "eval-<slug>", e.g. "eval-cuda-nvidia-h200"."""
    if device_type == default_device_type() or device_type == settings.WORKER_DEVICE:
        return settings.EVAL_QUEUE
    slug = "".join(c if c.isalnum() else "-" for c in device_type.lower())
    return "eval-" + "-".join(part for part in slug.split("-") if part)


# ---- submissions ---------------------------------------------------------------------------


def _validate_source(raw: bytes | str, filename: str) -> str:
    """The upload checks, as form errors: .py, then the evaluator's own (size, UTF-8, Python
    syntax, defines custom_kernel). Returns the source text."""
    from evaluator import check_upload

    if not filename.endswith(".py"):
        raise ValidationError("The file must be a Python file ending in .py.", code="not_py")
    try:
        data = raw.encode() if isinstance(raw, str) else bytes(raw)
    except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") from a JSON string
        raise ValidationError(f"The source is not valid Unicode text (character {exc.start}).",
                              code="bad_encoding") from None
    if len(data) > settings.SUBMISSION_MAX_BYTES:
        raise ValidationError(
            f"The file is {len(data)} bytes; the limit is {settings.SUBMISSION_MAX_BYTES} bytes (256 KiB).",
            code="too_big",
        )
    if not data.strip():
        raise ValidationError("The file is empty.", code="empty")
    problems = check_upload(data)
    if problems:
        code = problems[0][0]
        raise ValidationError([ValidationError(msg[:1].upper() + msg[1:] + ".", code=code) for _, msg in problems])
    return data.decode("utf-8")


def _plain_text(value: str, *, replace: bool = False) -> str:
    """Text the database can store: no NUL, no lone surrogate. Raises ValueError, or with
    replace=True drops what cannot be stored."""
    if not isinstance(value, str):
        raise ValueError("not text")
    if replace:
        return value.encode("utf-8", "replace").decode("utf-8").replace("\x00", "")
    if "\x00" in value:
        raise ValueError("NUL in text")
    value.encode("utf-8")  # UnicodeEncodeError is a ValueError
    return value


def _check_rate_limit(user) -> None:
    limit = settings.UPLOAD_RATE_LIMIT_PER_HOUR
    since = timezone.now() - timedelta(hours=1)
    recent = Submission.objects.filter(user=user, created_at__gte=since)
    count = recent.count()
    if count >= limit:
        oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
        wait_s = max(1, int((oldest + timedelta(hours=1) - timezone.now()).total_seconds()))
        raise RateLimited(
            f"Upload limit reached: {limit} submissions per hour. Try again in {wait_s // 60 + 1} minutes.",
            code="rate_limited",
            params={"retry_after_s": wait_s},
        )


def _check_queue_share(user) -> None:
    """One account may not fill the queue: at most EVAL_MAX_ACTIVE_PER_USER queued or running."""
    limit = conf("EVAL_MAX_ACTIVE_PER_USER")
    active = Submission.objects.filter(
        user=user, status__in=(Submission.Status.QUEUED, Submission.Status.RUNNING)).count()
    if active >= limit:
        raise QueueFull(
            f"You already have {active} evaluations queued or running; the limit is {limit} at a "
            "time, so that everyone's uploads get their turn. Upload again when one has finished.",
            code="queue_full",
            params={"retry_after_s": 60},
        )


def submission_create(
    *, user, task: Task | str, source: bytes | str, filename: str = "submission.py", mode: str = "ranked"
) -> Submission:
    """Validate and store an upload, then queue its evaluation once the row is committed."""
    if not isinstance(task, Task):
        try:
            task = Task.objects.get(name=_plain_text(task))
        except (Task.DoesNotExist, ValueError):
            known = ", ".join(Task.objects.values_list("name", flat=True)) or "(none loaded)"
            raise ValidationError(f"Unknown task {str(task)[:64]!r}; known tasks: {known}.",
                                  code="unknown_task") from None
    if mode not in Submission.Mode.values:
        modes = ", ".join(repr(m) for m in Submission.Mode.values)
        raise ValidationError(f"Unknown mode {str(mode)[:20]!r}; use one of {modes}.", code="bad_mode")
    filename = _plain_text(filename or "submission.py", replace=True) or "submission.py"
    filename = filename.replace("\\", "/").rsplit("/", 1)[-1][:255]
    text = _validate_source(source, filename)
    device_type = default_device_type()
    with transaction.atomic():
        # the profile row lock serialises one user's uploads, so a burst cannot overrun the limit
        profile, _ = Profile.objects.get_or_create(user=user)
        profile = Profile.objects.select_for_update().get(pk=profile.pk)
        if profile.banned:
            raise NotAllowed("This account is banned from submitting.", code="banned")
        _check_rate_limit(user)
        _check_queue_share(user)
        if mode == Submission.Mode.PROFILE:
            from leaderboard.profiling import check_rate

            check_rate(user=user)
        submission = Submission.objects.create(
            user=user,
            task=task,
            mode=mode,
            device_type=device_type,
            source=text,
            filename=filename,
            status=Submission.Status.QUEUED,
            phase="waiting for a worker",
            celery_task_id=uuid.uuid4().hex,
            enqueued_at=timezone.now(),
        )
        transaction.on_commit(lambda: submission_enqueue(submission=submission))
    return submission


def submission_enqueue(*, submission: Submission) -> bool:
    """Send the evaluation message. A broker that is down is logged, not raised: the row stays
    queued and the stuck-submission job sends it again."""
    from leaderboard.tasks import evaluate_submission

    try:
        evaluate_submission.apply_async(
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


def _geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def floor_ms_for(*, task: Task, device_type: str, shape: dict, report_floor_ms=None) -> float | None:
    """The published floor for this shape on this device type, else the evaluator's own figure."""
    for entry in task.floors_for(device_type):
        if entry.get("shape") == shape:
            return entry.get("floor_ms")
    return report_floor_ms


def pct_of_floor_by_shape(*, task: Task, device_type: str, shapes: list[dict]) -> list[float | None]:
    """Per benchmark shape: floor / candidate median * 100 (100 = at the physical floor)."""
    out = []
    for row in shapes:
        floor = floor_ms_for(task=task, device_type=device_type, shape=row.get("shape"),
                             report_floor_ms=row.get("floor_ms"))
        cand = row.get("candidate_ms")
        out.append(floor / cand * 100 if floor and cand and cand > 0 else None)
    return out


def _device_type_from_report(report: dict, fallback: str) -> str:
    if report.get("device") == "cuda":
        return f"cuda:{report['gpu_name']}" if report.get("gpu_name") else "cuda"
    if report.get("device") == "cpu":
        return "cpu"
    return fallback


def submission_store_result(*, submission: Submission, report: dict, logs: str = "") -> bool:
    """Store a validated evaluator report as the submission's result. Stores only under the
    current claim (a worker whose claim was re-queued meanwhile stores nothing). True if stored."""
    from evaluator import ReportError, validate_report

    try:
        report = validate_report(report)
    except ReportError as exc:
        return submission_fail(submission=submission, error=f"The evaluator's report was invalid: {exc}")
    if report["task"] != submission.task.name or report["mode"] != submission.mode:
        return submission_fail(
            submission=submission,
            error=f"The report is for {report['task']}/{report['mode']}, not {submission.task.name}/{submission.mode}.",
        )
    verdict = report["verdict"]
    device_type = _device_type_from_report(report, submission.device_type)
    scored = submission.mode == Submission.Mode.RANKED and verdict != Submission.Verdict.REJECTED
    pct = None
    if scored:
        pct = _geomean(pct_of_floor_by_shape(task=submission.task, device_type=device_type,
                                             shapes=report.get("shapes") or []))
    all_logs = "\n".join(part for part in (report.get("logs") or "", logs or "") if part)
    stored = _current(submission).update(
        status=Submission.Status.DONE,
        phase="",
        verdict=verdict,
        reasons=list(report.get("reasons") or []),
        reason_codes=list(report.get("reason_codes") or []),
        report=report,
        logs=all_logs[-LOGS_MAX_CHARS:],
        speedup_vs_compile=report.get("speedup_vs_compile") if scored else None,
        speedup_vs_eager=report.get("speedup_vs_eager") if scored else None,
        pct_of_floor=pct,
        gpu_name=report.get("gpu_name") or "",
        versions=report.get("versions") or {},
        device_type=device_type,
        finished_at=timezone.now(),
        results_stored=F("results_stored") + 1,
    )
    if stored != 1:
        log.warning("submission %s: result not stored, the claim is no longer current", submission.pk)
    return stored == 1


def submission_fail(*, submission: Submission, error: str) -> bool:
    """End the current claim as failed (an infrastructure problem, not the user's code)."""
    return _current(submission).update(
        status=Submission.Status.FAILED, phase="", error=error[:4000], finished_at=timezone.now()
    ) == 1


def submission_release_for_retry(*, submission: Submission, error: str, countdown_s: int) -> bool:
    """Give the claim back so that a retried message can claim it again."""
    return _current(submission).update(
        status=Submission.Status.QUEUED,
        claim_token="",
        phase=f"retrying in {countdown_s} s after an infrastructure error",
        error=error[:4000],
        enqueued_at=timezone.now() + timedelta(seconds=countdown_s),
    ) == 1


def _requeue_running(*, submission: Submission, why: str) -> str:
    """A running row whose worker is gone: queue it again, or fail it after the last attempt.
    Returns "requeued", "failed" or "" when the row changed meanwhile."""
    if submission.attempts >= conf("EVAL_MAX_ATTEMPTS"):
        done = _current(submission).update(
            status=Submission.Status.FAILED,
            phase="",
            error=f"Evaluation did not finish after {submission.attempts} attempts ({why}).",
            finished_at=timezone.now(),
        )
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


def submissions_requeue_stuck(*, now=None, broker_task_ids=None) -> dict:
    """The periodic repair job.

    - running, but the heartbeat stopped (worker killed) or it ran past the hard time limit plus
      a margin: queue again, or fail after EVAL_MAX_ATTEMPTS claims;
    - queued for a while and its message is not in the broker (lost in a Redis restart, or the
      broker was down at upload): send the message again.

    `broker_task_ids(queues) -> set | None` lists the task ids the broker holds (None: unknown,
    then every old queued row is re-sent; the claim makes duplicates harmless).
    """
    from leaderboard.tasks import EVAL_HARD_LIMIT_S

    now = now or timezone.now()
    counts = {"requeued": 0, "failed": 0, "resent": 0}
    stale = now - timedelta(seconds=conf("EVAL_STALE_AFTER_S"))
    too_long = now - timedelta(seconds=EVAL_HARD_LIMIT_S + conf("EVAL_STALE_AFTER_S"))
    running = Submission.objects.filter(status=Submission.Status.RUNNING)
    for sub in running.filter(heartbeat_at__lt=stale) | running.filter(started_at__lt=too_long):
        why = "the worker stopped responding" if sub.heartbeat_at and sub.heartbeat_at < stale else "it ran too long"
        result = _requeue_running(submission=sub, why=why)
        if result:
            counts[result] += 1
    old = now - timedelta(seconds=conf("EVAL_LOST_MESSAGE_AFTER_S"))
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


# ---- admin decisions -----------------------------------------------------------------------


def _audit(*, action: str, actor, reason: str, submission: Submission | None = None, target_user=None):
    return AuditEntry.objects.create(
        action=action,
        actor=actor,
        reason=reason,
        submission=submission,
        target_user=target_user if target_user is not None else (submission.user if submission else None),
    )


def submission_approve(*, submission: Submission, actor, reason: str = "") -> Submission:
    """A flagged result reviewed and accepted: it becomes verified and ranks."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status != Submission.Status.DONE or submission.verdict != Submission.Verdict.FLAGGED:
            raise NotAllowed(f"Only a flagged result can be approved (#{submission.pk} is "
                             f"{submission.status}/{submission.verdict or 'no verdict'}).")
        if submission.hidden:
            raise NotAllowed(f"#{submission.pk} was disqualified; re-run it instead.")
        submission.verdict = Submission.Verdict.VERIFIED
        submission.approved_by = actor
        submission.approved_at = timezone.now()
        submission.save(update_fields=["verdict", "approved_by", "approved_at"])
        _audit(action=AuditEntry.Action.APPROVE, actor=actor, reason=reason, submission=submission)
    return submission


def submission_disqualify(*, submission: Submission, actor, reason: str) -> Submission:
    """Rejected with the admin's reason and hidden from every leaderboard; nothing is deleted."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A reason is required to disqualify a submission.", code="reason_required")
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status != Submission.Status.DONE:
            raise NotAllowed(f"#{submission.pk} has no result yet ({submission.status}).")
        if submission.hidden:
            raise NotAllowed(f"#{submission.pk} is already disqualified.")
        submission.verdict = Submission.Verdict.REJECTED
        submission.hidden = True
        submission.reasons = [*submission.reasons, f"Disqualified by an admin: {reason}"]
        submission.reason_codes = [*submission.reason_codes, "disqualified"]
        submission.save(update_fields=["verdict", "hidden", "reasons", "reason_codes"])
        _audit(action=AuditEntry.Action.DISQUALIFY, actor=actor, reason=reason, submission=submission)
    return submission


def submission_rerun(*, submission: Submission, actor, reason: str = "") -> Submission:
    """Evaluate again from scratch (e.g. after an evaluator fix). A disqualification stands."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status not in (Submission.Status.DONE, Submission.Status.FAILED):
            raise NotAllowed(f"#{submission.pk} is still {submission.status}; wait for it to finish.")
        submission.status = Submission.Status.QUEUED
        submission.phase = "re-run requested by an admin"
        for field in ("verdict", "logs", "gpu_name", "error", "claim_token", "worker"):
            setattr(submission, field, "")
        submission.reasons, submission.reason_codes, submission.versions = [], [], {}
        submission.report = None
        submission.speedup_vs_compile = submission.speedup_vs_eager = submission.pct_of_floor = None
        submission.approved_by = submission.approved_at = None
        submission.started_at = submission.finished_at = submission.heartbeat_at = None
        submission.attempts = 0
        submission.results_stored = 0
        submission.device_type = default_device_type()
        submission.celery_task_id = uuid.uuid4().hex
        submission.enqueued_at = timezone.now()
        submission.save()
        _audit(action=AuditEntry.Action.RERUN, actor=actor, reason=reason, submission=submission)
        transaction.on_commit(lambda: submission_enqueue(submission=submission))
    return submission


def submission_publish(*, submission: Submission, actor) -> Submission:
    """The owner opens the code to every visitor. One way: code once seen cannot be unseen."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if actor is None or actor.pk != submission.user_id:
            raise NotAllowed("Only the owner can publish a submission's code.", code="not_owner")
        if submission.published_at:
            raise NotAllowed(f"#{submission.pk} is already published.", code="published")
        submission.published_at = timezone.now()
        submission.save(update_fields=["published_at"])
        _audit(action=AuditEntry.Action.PUBLISH, actor=actor, reason="", submission=submission)
    return submission


def user_ban(*, user, actor, reason: str) -> Profile:
    """Hide every entry of the user from the leaderboards and stop their uploads. Data is kept."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A reason is required to ban a user.", code="reason_required")
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        if profile.banned:
            raise NotAllowed(f"{user} is already banned.")
        profile.banned, profile.banned_reason, profile.banned_at = True, reason, timezone.now()
        profile.save(update_fields=["banned", "banned_reason", "banned_at"])
        _audit(action=AuditEntry.Action.BAN, actor=actor, reason=reason, target_user=user)
    return profile


def user_unban(*, user, actor, reason: str = "") -> Profile:
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        if not profile.banned:
            raise NotAllowed(f"{user} is not banned.")
        profile.banned, profile.banned_reason, profile.banned_at = False, "", None
        profile.save(update_fields=["banned", "banned_reason", "banned_at"])
        _audit(action=AuditEntry.Action.UNBAN, actor=actor, reason=reason, target_user=user)
    return profile


# ---- API tokens ----------------------------------------------------------------------------


def api_token_create(*, user, name: str = "") -> tuple[ApiToken, str]:
    """A new token; the key is returned once and only its hash is kept."""
    key = "lb_" + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name[:100], prefix=key[:8], key_hash=ApiToken.hash_key(key))
    return token, key


def api_token_authenticate(*, key: str):
    """The active user owning this key, or None. Records when the token was last used."""
    if not key or len(key) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=ApiToken.hash_key(key)).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def api_token_revoke(*, user, token_id: int) -> bool:
    return ApiToken.objects.filter(pk=token_id, user=user).delete()[0] > 0


# ---- tasks ---------------------------------------------------------------------------------

# Roofline ceilings. H200: measured device-to-device copy and dense bf16 peak (docs/anchors).
# CPU: the judge's own (evaluator.timing.CPU_BANDWIDTH, CPU_PEAK_FLOPS; a test keeps them equal),
# deliberately above any CPU: the floor a page shows is the one the judge checked the run against.
CEILINGS = {
    "cuda:NVIDIA H200": {"bandwidth_bytes_s": 4.27e12, "peak_flop_s": 790e12},
    "cpu": {"bandwidth_bytes_s": 1e12, "peak_flop_s": 1e13},
}


def _shape_floors(spec, shapes, ceilings) -> list[dict]:
    return [
        {"shape": dict(shape), "floor_ms": spec.floor_ms(dict(shape), **ceilings)}
        for shape in shapes
    ]


def task_sync(*, spec, ceilings: dict | None = None) -> tuple[Task, bool]:
    """Create or update the Task row for one evaluator task (an evaluator.tasks.Task)."""
    import inspect

    ceilings = ceilings or CEILINGS
    try:
        reference_source = inspect.getsource(spec.reference)
    except (OSError, TypeError):
        reference_source = ""
    floors = {}
    for device_type, ceiling in ceilings.items():
        shapes = spec.bench_shapes("cpu" if device_type == "cpu" else "cuda")
        floors[device_type] = _shape_floors(spec, shapes, ceiling)
    defaults = {
        "title": spec.title,
        "description": spec.description,
        "signature": spec.signature,
        "reference_source": reference_source,
        "input_names": list(spec.input_names),
        "test_shapes": [dict(s) for s in spec.test_shapes],
        "bench_shapes": {"cpu": [dict(s) for s in spec.bench_shapes_cpu],
                         "cuda": [dict(s) for s in spec.bench_shapes_gpu]},
        "tolerance": {"atol": spec.tolerance.atol, "rtol": spec.tolerance.rtol},
        "floors": floors,
        "max_speedup_vs_compile": spec.max_speedup_vs_compile,
        "bound": getattr(spec, "bound", "memory"),
    }
    return Task.objects.update_or_create(name=spec.name, defaults=defaults)


# ---- the ruler's calibration -----------------------------------------------------------------

# How far from 1.00 a calibration reading may be and still count as calibrated: the target
# on a GPU; on the CPU (shared, noisy, not a ranking device) the evaluator's own test bound
CALIBRATION_TOLERANCE = {"cuda": 0.03, "cpu": 0.15}


def calibration_ok(*, device_type: str, reference_vs_eager, compile_vs_compile) -> bool:
    tol = CALIBRATION_TOLERANCE[device_kind(device_type)]
    return all(isinstance(v, (int, float)) and math.isfinite(v) and abs(v - 1.0) <= tol
               for v in (reference_vs_eager, compile_vs_compile))


def _reading(value, where: str):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValidationError(f"{where}: not a positive number: {value!r}")
    return float(value)


def task_record_calibration(*, rows: list, device_type: str, source: str, measured_at=None) -> list[Task]:
    """Store the rows of `python -m evaluator calibrate --json` (one per task) for a device type.
    A row with errors is stored with null readings: the page then says the task is not
    calibrated, rather than showing a number from a failed run."""
    if not isinstance(rows, list) or not rows:
        raise ValidationError("no calibration rows")
    if device_kind(device_type) not in CALIBRATION_TOLERANCE:
        raise ValidationError(f"unknown device type {device_type!r}")
    measured_at = (measured_at or timezone.now()).isoformat()
    updated = []
    with transaction.atomic():
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("task"), str):
                raise ValidationError(f"not a calibration row: {row!r:.200}")
            task = Task.objects.select_for_update().filter(name=row["task"]).first()
            if task is None:
                raise ValidationError(f"unknown task {row['task']!r} (run load_tasks first)")
            failed = bool(row.get("errors"))
            entry = {
                "reference_vs_eager": None if failed else _reading(row.get("reference_vs_eager"), row["task"]),
                "compile_vs_compile": None if failed else _reading(row.get("compile_vs_compile"), row["task"]),
                "errors": [str(e)[:300] for e in (row.get("errors") or [])][:5],
                "measured_at": measured_at,
                "source": source[:200],
            }
            entry["tolerance"] = CALIBRATION_TOLERANCE[device_kind(device_type)]
            entry["ok"] = calibration_ok(device_type=device_type, reference_vs_eager=entry["reference_vs_eager"],
                                         compile_vs_compile=entry["compile_vs_compile"])
            task.calibration = {**(task.calibration or {}), device_type: entry}
            task.save(update_fields=["calibration", "updated_at"])  # updated_at moves the page cache
            updated.append(task)
    return updated
