"""Uploads: the checks a source passes before it is stored, the per-user limits, and the row that
queues its evaluation."""
from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard.models import Profile, Submission, Task
from leaderboard.routing import default_device_type
from leaderboard.services import profiling
from leaderboard.services.errors import NotAllowed, QueueFull, RateLimited
from leaderboard.services.pipeline import submission_enqueue

# the longest file name kept (Submission.filename's max_length); a longer one is refused, not cut
FILENAME_MAX = 255
# a new row's phase until a worker claims it (queue_reads says its place in line instead)
QUEUED_PHASE = "waiting for a worker"


def too_big_message(size: int, what: str = "file") -> str:
    """The one wording of the size limit, on the form, in the API and here: numbers with thousands
    separators everywhere ("300,000 bytes"), so that no page says 300,000 where the API says 300000."""
    limit = settings.SUBMISSION_MAX_BYTES
    return f"The {what} is {size:,} bytes; the limit is {limit:,} bytes ({limit // 1024} KiB)."


def _validate_source(raw: bytes | str, filename: str) -> str:
    """The upload checks, as form errors: .py, then the evaluator's own (size, UTF-8, Python
    syntax, defines custom_kernel). Returns the source text. Whether it fits the task is
    `_check_fits_task`."""
    from evaluator import check_upload

    if len(filename) > FILENAME_MAX:  # said before `.py`: a long name cut short would lose its ending
        raise ValidationError(f"The file name is {len(filename):,} characters long; at most {FILENAME_MAX} are "
                              "kept: give the file a shorter name.", code="name_too_long")
    if not filename.endswith(".py"):
        raise ValidationError("The file must be a Python file ending in .py.", code="not_py")
    try:
        data = raw.encode() if isinstance(raw, str) else bytes(raw)
    except UnicodeEncodeError as exc:  # a lone surrogate ("\ud800") from a JSON string
        raise ValidationError(f"The source is not valid Unicode text (character {exc.start}).",
                              code="bad_encoding") from None
    if len(data) > settings.SUBMISSION_MAX_BYTES:
        raise ValidationError(too_big_message(len(data)), code="too_big")
    if not data.strip():
        raise ValidationError("The file is empty.", code="empty")
    problems = check_upload(data)
    if problems:
        code = problems[0][0]
        raise ValidationError([ValidationError(msg[:1].upper() + msg[1:] + ".", code=code) for _, msg in problems])
    return data.decode("utf-8")


def _check_fits_task(text: str, task: Task) -> None:
    """custom_kernel's parameters against the task's inputs, read from the source (never run): a
    file sent to the wrong task is refused here instead of queued to crash at its first call."""
    from evaluator import check_signature

    problems = check_signature(text, task.input_names, task.name)
    if problems:
        raise ValidationError(problems[0] + ".", code="wrong_signature")


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


def upload_allowance(*, user) -> dict:
    """The hourly upload limit as its user sees it: `limit` (UPLOAD_RATE_LIMIT_PER_HOUR), `used`
    (uploads of any mode in the last hour) and `left` (how many more it takes now); the rule
    _check_rate_limit refuses by."""
    limit = settings.UPLOAD_RATE_LIMIT_PER_HOUR
    used = Submission.objects.filter(user=user, created_at__gte=timezone.now() - timedelta(hours=1)).count()
    return {"limit": limit, "used": used, "left": max(0, limit - used)}


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
    limit = settings.EVAL_MAX_ACTIVE_PER_USER
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
            known = ", ".join(Task.objects.filter(retired=False).values_list("name", flat=True)) or "(none loaded)"
            raise ValidationError(f"Unknown task {str(task)[:64]!r}; known tasks: {known}.",
                                  code="unknown_task") from None
    if task.retired:
        raise ValidationError(f"Task {task.name!r} is retired: it takes no new uploads (its boards stay).",
                              code="retired_task")
    if mode not in Submission.Mode.values:
        modes = ", ".join(repr(m) for m in Submission.Mode.values)
        raise ValidationError(f"Unknown mode {str(mode)[:20]!r}; use one of {modes}.", code="bad_mode")
    filename = _plain_text(filename or "submission.py", replace=True) or "submission.py"
    filename = filename.replace("\\", "/").rsplit("/", 1)[-1]
    text = _validate_source(source, filename)
    _check_fits_task(text, task)
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
            profiling.check_rate(user=user)
        submission = Submission.objects.create(
            user=user,
            task=task,
            mode=mode,
            device_type=device_type,
            source=text,
            filename=filename,
            status=Submission.Status.QUEUED,
            phase=QUEUED_PHASE,
            celery_task_id=uuid.uuid4().hex,
            enqueued_at=timezone.now(),
        )
        transaction.on_commit(lambda: submission_enqueue(submission=submission))
    return submission


