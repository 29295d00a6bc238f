"""Staff decisions on results and users, and the owner's publication, each with its audit entry."""
from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from evaluator import state_word, status_word
from leaderboard.models import AuditEntry, Profile, Submission
from leaderboard.routing import default_device_type
from leaderboard.services.boards import board_entries_refresh, board_entries_refresh_user
from leaderboard.services.errors import NotAllowed
from leaderboard.services.pipeline import submission_enqueue

# the reason a disqualification adds, before the admin's own words (the API and the CLI show it)
DISQUALIFIED_PREFIX = "Disqualified by an admin: "


def _audit(*, action: str, actor, reason: str, submission: Submission | None = None, target_user=None):
    return AuditEntry.objects.create(
        action=action,
        actor=actor,
        reason=reason,
        submission=submission,
        target_user=target_user if target_user is not None else (submission.user if submission else None),
    )


def _refresh_board(submission: Submission, *device_types: str) -> None:
    """The submission's user's entry on its board (and the board it was on before), recomputed."""
    if submission.mode == Submission.Mode.RANKED:
        board_entries_refresh(task_id=submission.task_id, user_id=submission.user_id,
                              device_types={submission.device_type, *device_types})


def submission_approve(*, submission: Submission, actor, reason: str = "") -> Submission:
    """A flagged result reviewed and accepted: it becomes verified and ranks."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status != Submission.Status.DONE or submission.verdict != Submission.Verdict.FLAGGED:
            state = state_word(status=submission.status, verdict=submission.verdict, mode=submission.mode,
                               hidden=submission.hidden)
            raise NotAllowed(f"Only a flagged result can be approved: #{submission.pk} is {state}.")
        if submission.hidden:
            raise NotAllowed(f"#{submission.pk} was disqualified; re-run it instead.")
        submission.verdict = Submission.Verdict.VERIFIED
        submission.approved_by = actor
        submission.approved_at = timezone.now()
        submission.save(update_fields=["verdict", "approved_by", "approved_at"])
        _refresh_board(submission, submission.device_type)
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
            raise NotAllowed(f"#{submission.pk} has no result yet: it is {status_word(submission.status)}.")
        if submission.hidden:
            raise NotAllowed(f"#{submission.pk} is already disqualified.")
        submission.verdict = Submission.Verdict.REJECTED
        submission.hidden = True
        submission.reasons = [*submission.reasons, DISQUALIFIED_PREFIX + reason]
        submission.reason_codes = [*submission.reason_codes, "disqualified"]
        submission.save(update_fields=["verdict", "hidden", "reasons", "reason_codes"])
        _refresh_board(submission, submission.device_type)
        _audit(action=AuditEntry.Action.DISQUALIFY, actor=actor, reason=reason, submission=submission)
    return submission


def submission_rerun(*, submission: Submission, actor, reason: str = "") -> Submission:
    """Evaluate again from scratch (e.g. after an evaluator fix). A disqualification stands."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.status not in (Submission.Status.DONE, Submission.Status.FAILED):
            raise NotAllowed(f"#{submission.pk} is still {submission.status}; wait for it to finish.")
        was_on = submission.device_type
        submission.status = Submission.Status.QUEUED
        submission.phase = "re-run requested by an admin"
        for field in ("verdict", "logs", "gpu_name", "error", "error_detail", "claim_token", "worker"):
            setattr(submission, field, "")
        submission.error_at = None
        submission.reasons, submission.reason_codes, submission.versions = [], [], {}
        submission.report = None
        submission.speedup_vs_compile = submission.speedup_vs_eager = submission.pct_of_floor = None
        submission.median_ms, submission.noisy = None, False
        submission.vs_compile, submission.vs_compile_low, submission.vs_compile_high = "", None, None
        submission.board_speedup = None
        submission.approved_by = submission.approved_at = None
        submission.started_at = submission.finished_at = submission.heartbeat_at = None
        submission.attempts = 0
        submission.results_stored = 0
        submission.device_type = default_device_type()
        submission.celery_task_id = uuid.uuid4().hex
        submission.enqueued_at = timezone.now()
        submission.save()
        _refresh_board(submission, was_on)
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
        board_entries_refresh_user(user_id=user.pk)
        _audit(action=AuditEntry.Action.BAN, actor=actor, reason=reason, target_user=user)
    return profile


def user_unban(*, user, actor, reason: str = "") -> Profile:
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        if not profile.banned:
            raise NotAllowed(f"{user} is not banned.")
        profile.banned, profile.banned_reason, profile.banned_at = False, "", None
        profile.save(update_fields=["banned", "banned_reason", "banned_at"])
        board_entries_refresh_user(user_id=user.pk)
        _audit(action=AuditEntry.Action.UNBAN, actor=actor, reason=reason, target_user=user)
    return profile


