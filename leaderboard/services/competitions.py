"""Writes for competitions: creating and editing one, and freezing its standings.

A competition is open from `opens_at` (inclusive) to `closes_at` (exclusive), and counts only what
was uploaded while it existed: a ranked submission uploaded inside the window and not before the
competition's `created_at` enters the standings, even when its evaluation finishes after the close;
one uploaded later never does (within COMPETITION_LATE_DAYS of the close it is shown as "after
the deadline"). So that no window reaches back over uploads made before anyone knew of it, a new
competition cannot open in the past, and an edit cannot move the opening earlier than now. Once
the window has closed and none of its submissions is still queued, running or flagged and
awaiting review, the standings are copied into CompetitionEntry rows (`competition_freeze`): from
then on approvals, re-runs and bans change nothing in them, and only a disqualification of a
submission takes its entry out (leaderboard/selectors/competitions.py reads it that way).

Reads live in leaderboard/selectors/competitions.py.
"""
from __future__ import annotations

import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard.models import Competition, CompetitionEntry
from leaderboard.selectors import competitions as reads

log = logging.getLogger(__name__)

BARE_CUDA = ('"cuda" alone names no results: GPU results are stored under "cuda:<GPU name>" '
             '(e.g. "cuda:NVIDIA H200"), so choose the GPU.')


class NotAllowed(ValidationError):
    """The change does not apply to the competition in its current state."""


def device_type_problem(device_type) -> str:
    """Why a competition cannot name this device type ("" if it can): "cpu" or "cuda:<GPU name>",
    the device types results are stored under."""
    if device_type == "cpu":
        return ""
    if device_type == "cuda":
        return BARE_CUDA
    if isinstance(device_type, str) and device_type.startswith("cuda:") and device_type[5:].strip():
        return ""
    return f"Unknown device type {device_type!r}: use \"cpu\" or \"cuda:<GPU name>\"."


def _field_errors(competition: Competition, tasks) -> dict:
    errors = {}
    if not competition.slug:
        errors["slug"] = "Give the competition a short name for its address (letters, digits, hyphens)."
    if not (competition.title or "").strip():
        errors["title"] = "Give the competition a title."
    if not list(tasks):
        errors["tasks"] = "Choose at least one task."
    devices = competition.device_types
    if not isinstance(devices, list) or not devices or not all(isinstance(d, str) and d for d in devices):
        errors["device_types"] = "Choose at least one device type."
    for name in ("opens_at", "closes_at"):
        if getattr(competition, name) is None:
            errors[name] = "Give a date and time."
    if competition.opens_at and competition.closes_at and competition.closes_at <= competition.opens_at:
        errors["closes_at"] = "The closing time must be after the opening time."
    return errors


def _rule_errors(competition: Competition, before: Competition | None, now) -> dict:
    """The device types and the opening time of a competition whose standings are not frozen."""
    errors = {}
    problems = [p for p in map(device_type_problem, competition.device_types) if p]
    if problems:
        errors["device_types"] = problems[0]
    opens = competition.opens_at
    if before is None and opens < now:
        errors["opens_at"] = ("The opening time is in the past: a competition opens now or later "
                              "(uploads made before it existed never enter it).")
    elif before is not None and opens < before.opens_at and opens < now:
        errors["opens_at"] = ("The opening can move earlier only to now or later: uploads made "
                              "before then were not made for this competition.")
    return errors


def _frozen_changes(competition: Competition, before: Competition, tasks) -> list[str]:
    changed = [f for f in ("opens_at", "closes_at") if getattr(before, f) != getattr(competition, f)]
    if set(before.device_types) != set(competition.device_types):
        changed.append("device types")
    if {t.pk for t in before.tasks.all()} != {t.pk for t in tasks}:
        changed.append("tasks")
    return changed


def competition_check(*, competition: Competition, tasks, now=None) -> None:
    """Raise ValidationError (per field where there is one) for a competition that cannot be
    saved as it is: no task or device, a bare "cuda", closing before opening, opening in the past
    (new) or moved earlier into the past (edited), or a frozen one's rules changed."""
    tasks = list(tasks)
    errors = _field_errors(competition, tasks)
    if errors:
        raise ValidationError(errors)
    before = Competition.objects.filter(pk=competition.pk).first() if competition.pk else None
    if before is not None and before.frozen_at:
        changed = _frozen_changes(competition, before, tasks)
        if changed:
            raise NotAllowed(
                f"The standings of {before.slug} are frozen: its {', '.join(changed)} can no longer "
                "change (the title and the text still can).", code="frozen")
        return
    errors = _rule_errors(competition, before, now or timezone.now())
    if errors:
        raise ValidationError(errors)


def competition_save(*, competition: Competition, tasks, actor) -> Competition:
    """Create or edit a competition (the audit console and the admin both come here). Once its
    standings are frozen, its times, tasks and device types stay as they were."""
    tasks = list(tasks)
    competition.device_types = sorted(set(competition.device_types or []))
    with transaction.atomic():
        if competition.pk:
            before = Competition.objects.select_for_update().get(pk=competition.pk)
            competition.frozen_at = before.frozen_at  # only the freeze sets it
        competition_check(competition=competition, tasks=tasks)
        if competition.pk is None and competition.created_by_id is None and actor is not None:
            competition.created_by = actor
        competition.save()
        competition.tasks.set(tasks)
    return competition


def competition_freeze(*, competition: Competition, now=None) -> bool:
    """Copy the standings into CompetitionEntry rows, once: after the close, when none of the
    window's submissions waits for its result or, flagged, for its review. True if this call
    froze them."""
    now = now or timezone.now()
    with transaction.atomic():
        competition = Competition.objects.select_for_update().get(pk=competition.pk)
        if competition.frozen_at or now < competition.closes_at:
            return False
        if reads.pending_count(competition=competition):
            return False
        for task in competition.tasks.all():
            for device_type in competition.device_types:
                board = reads.live_standings(competition=competition, task=task, device_type=device_type)
                CompetitionEntry.objects.bulk_create([
                    CompetitionEntry(
                        competition=competition, task=task, device_type=device_type, user_id=s.user_id,
                        submission=s, rank=rank, speedup_vs_compile=s.speedup_vs_compile,
                        speedup_vs_eager=s.speedup_vs_eager, pct_of_floor=s.pct_of_floor, report=s.report,
                    )
                    for rank, s in enumerate(board, start=1)
                ])
        competition.frozen_at = now
        # updated_at moves the pages' cache fingerprint: the task boards show the opened code
        competition.save(update_fields=["frozen_at", "updated_at"])
    log.info("competition %s: standings frozen", competition.slug)
    return True


def competition_freeze_if_due(*, competition: Competition, now=None) -> bool:
    """The cheap check a page makes before it reads the standings."""
    now = now or timezone.now()
    if competition.frozen_at or now < competition.closes_at:
        return False
    frozen = competition_freeze(competition=competition, now=now)
    if frozen:
        competition.refresh_from_db()
    return frozen


def competitions_freeze_due(*, now=None) -> int:
    """Freeze every closed competition whose results and reviews are all in (the periodic job).
    How many."""
    now = now or timezone.now()
    due = Competition.objects.filter(frozen_at__isnull=True, closes_at__lte=now)
    return sum(competition_freeze(competition=c, now=now) for c in due)
