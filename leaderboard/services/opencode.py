"""Staff decisions on open code: withhold a submission's code, or release it again.

Withholding wins over every reason code opens for (an owner's publication, a closed competition;
selectors.code_open_reason): the code and logs then stay with the owner and staff. Both are
audited like the other staff decisions, with a required reason for withholding. The reason a
closed competition opens code lives here too: selectors asks it, and the competition reads import
selectors.
"""
from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard.models import AuditEntry, CompetitionEntry, Submission


class NotAllowed(ValidationError):
    """The decision does not apply to the submission as it is."""


def _audit(*, action: str, actor, reason: str, submission: Submission) -> AuditEntry:
    return AuditEntry.objects.create(action=action, actor=actor, reason=reason, submission=submission,
                                     target_user_id=submission.user_id)


def submission_withhold(*, submission: Submission, actor, reason: str) -> Submission:
    """Keep the code and logs from visitors, whatever would otherwise open them."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A reason is required to withhold a submission's code.", code="reason_required")
    if actor is None or not actor.is_staff:
        raise NotAllowed("Only staff can withhold code.", code="not_staff")
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if submission.code_withheld_at:
            raise NotAllowed(f"The code of #{submission.pk} is already withheld.", code="withheld")
        submission.code_withheld_at = timezone.now()
        submission.save(update_fields=["code_withheld_at"])
        _audit(action=AuditEntry.Action.WITHHOLD, actor=actor, reason=reason, submission=submission)
    return submission


def submission_release(*, submission: Submission, actor, reason: str = "") -> Submission:
    """Undo a withholding: the code is open again wherever a reason opens it."""
    if actor is None or not actor.is_staff:
        raise NotAllowed("Only staff can release withheld code.", code="not_staff")
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission.pk)
        if not submission.code_withheld_at:
            raise NotAllowed(f"The code of #{submission.pk} is not withheld.", code="not_withheld")
        submission.code_withheld_at = None
        submission.save(update_fields=["code_withheld_at"])
        _audit(action=AuditEntry.Action.RELEASE, actor=actor, reason=(reason or "").strip(), submission=submission)
    return submission


def competition_open_reasons(*, submissions) -> dict[int, str]:
    """Why a competition opens each submission's code, in one query: {id: reason} for the entries
    of frozen standings that no disqualification took out (the earliest-closing competition's
    words where there are several); the others are absent."""
    ids = [s.pk for s in submissions if s.pk and not s.hidden]
    if not ids:
        return {}
    entries = (CompetitionEntry.objects.filter(submission_id__in=ids, competition__frozen_at__isnull=False)
               .select_related("competition").order_by("competition__closes_at", "competition_id"))
    found: dict[int, str] = {}
    for entry in entries:
        c = entry.competition
        found.setdefault(entry.submission_id, f"an entry in the standings of the competition “{c.title}”, "
                                              f"which closed on {c.closes_at:%Y-%m-%d %H:%M} UTC")
    return found
