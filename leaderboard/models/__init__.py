"""The site's data: tasks, submissions and their results, profiles, the admin audit trail, API tokens
and the API's idempotency keys, competitions and their frozen standings.

Writes go through leaderboard/services/, reads through leaderboard/selectors/.
"""
from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.db import models
from django.db.models import Q

LOGS_MAX_CHARS = 64 * 1024
log = logging.getLogger(__name__)


class Task(models.Model):
    """A task as the site shows it: what `python -m evaluator describe` said of it in a box
    (`manage.py load_tasks` for the built-in tasks, `add_task` and `import_kernelbench` for the
    site's own). The site never imports a task's code: `definition` holds its files as text, for
    the box of each evaluation."""

    BUILTIN = "builtin"

    class Format(models.TextChoices):
        FOLDER = "folder"
        KERNELBENCH = "kernelbench"

    name = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    signature = models.TextField(blank=True)
    reference_source = models.TextField(blank=True)
    input_names = models.JSONField(default=list)
    test_shapes = models.JSONField(default=list)
    bench_shapes = models.JSONField(default=dict)  # {"cpu": [shape, ...], "cuda": [shape, ...]}
    tolerance = models.JSONField(default=dict)  # {"atol": ..., "rtol": ...}
    # {device_type: [{"shape": {...}, "floor_ms": float}, ...]}
    floors = models.JSONField(default=dict)
    # the ruler's calibration per device type (`manage.py calibrate`): {device_type: {
    # "reference_vs_eager": float|null, "compile_vs_compile": float|null, "errors": [text],
    # "tolerance": float, "ok": bool, "measured_at": iso, "source": text}}; shown on the pages
    calibration = models.JSONField(default=dict, blank=True)
    max_speedup_vs_compile = models.FloatField(default=2.0)
    bound = models.CharField(max_length=16, default="memory")
    # "builtin", or where the site's own tasks came from ("kernelbench-level1", ...): the home
    # page groups the tasks by it
    track = models.CharField(max_length=64, default=BUILTIN, db_index=True)
    format = models.CharField(max_length=16, choices=Format.choices, default=Format.FOLDER)
    # the task's files, {relative path: text}, written read-only into the box of each evaluation;
    # empty for a built-in task, which the evaluator holds itself
    definition = models.JSONField(default=dict, blank=True)
    # the work of each benchmark shape, {"cpu": [{"flops", "bytes"}], "cuda": [...]} parallel to
    # bench_shapes: the floors are computed from it against the site's ceilings
    work = models.JSONField(default=dict, blank=True)
    output_dtype = models.CharField(max_length=32, blank=True)
    has_params = models.BooleanField(default=False)  # a KernelBench Model with parameters: ModelNew
    # test shapes drawn per evaluation: {"count": int, "families": [str]}, or null for none
    hidden = models.JSONField(null=True, blank=True)
    origin = models.CharField(max_length=500, blank=True)  # the path it was added from
    added_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="+")
    added_at = models.DateTimeField(null=True, blank=True)
    # retired: out of the upload form and the API's uploads; its boards and pages stay
    retired = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def calibration_for(self, device_type: str) -> dict | None:
        """The calibration measured on exactly this device type, if any (a ruler checked on one GPU
        says nothing about another)."""
        return (self.calibration or {}).get(device_type)

    def floors_for(self, device_type: str) -> list[dict]:
        """Floors for a device type: exact key first ("cuda:NVIDIA H200"), then its kind ("cuda")."""
        if device_type in self.floors:
            return self.floors[device_type]
        return self.floors.get(device_type.split(":", 1)[0], [])


class TaskAddition(models.Model):
    """A task file staff uploaded in the audit console: the worker reads it in a box (describe,
    then triage on its own device) and stores what came of it, a line per problem."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"  # a box could not run: nothing was added

    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    filename = models.CharField(max_length=255)
    source = models.TextField()
    track = models.CharField(max_length=64)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    lines = models.JSONField(default=list, blank=True)  # "added <name> (<track>)" / "refused <file>: <why>"
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]


def stored_report(value, pk=None):
    """A report column's JSON as an evaluator.Report (Report.from_stored reads what older versions
    wrote); None for no report, and for JSON that is no report at all, which is logged: a page
    then shows the row without it instead of failing."""
    from evaluator import Report, ReportError

    if value is None:
        return None
    try:
        return Report.from_stored(value)
    except ReportError as exc:
        log.warning("row %s: the stored report cannot be read: %s", pk, exc)
        return None


class Submission(models.Model):
    class Mode(models.TextChoices):
        TEST = "test", "test (correctness only, never ranked)"
        RANKED = "ranked", "ranked (full evaluation)"
        PROFILE = "profile", "profile (correctness, then your kernel under a profiler; never ranked)"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    class Verdict(models.TextChoices):
        NONE = "", "-"
        VERIFIED = "verified"
        FLAGGED = "flagged"
        REJECTED = "rejected"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="submissions")
    mode = models.CharField(max_length=8, choices=Mode.choices, default=Mode.RANKED)
    # "cpu" or "cuda:<GPU name>": one leaderboard per device type
    device_type = models.CharField(max_length=64, default="cpu")
    source = models.TextField()
    filename = models.CharField(max_length=255, default="submission.py")
    source_sha256 = models.CharField(max_length=64, editable=False)

    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    phase = models.CharField(max_length=200, blank=True)  # what is happening now, shown while running
    verdict = models.CharField(max_length=8, choices=Verdict.choices, default="", blank=True)
    reasons = models.JSONField(default=list, blank=True)
    reason_codes = models.JSONField(default=list, blank=True)
    report = models.JSONField(null=True, blank=True)  # the validated evaluator report
    logs = models.TextField(blank=True)
    speedup_vs_compile = models.FloatField(null=True, blank=True)
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    pct_of_floor = models.FloatField(null=True, blank=True)
    # what a board shows of a scored result's times (scoring.board_time), stored with the result so
    # that a board reads no report: the kernel's median ms at the benchmark shape (the geometric
    # mean over the shapes), and whether the run was noisy by the result page's rule
    median_ms = models.FloatField(null=True, blank=True)
    noisy = models.BooleanField(default=False)
    # how the scored speedup over torch.compile stands against 1.00 by the ruler's own noise
    # (scoring.vs_compile): "faster", "tie" or "slower" ("" unscored), the interval's ends, and
    # what the boards order by (scoring.board_speedup: 1.00 for a tie). Stored with the result and
    # again when the task's calibration on its device type changes (services.task_record_calibration)
    vs_compile = models.CharField(max_length=8, blank=True, default="")
    vs_compile_low = models.FloatField(null=True, blank=True)
    vs_compile_high = models.FloatField(null=True, blank=True)
    board_speedup = models.FloatField(null=True, blank=True)
    gpu_name = models.CharField(max_length=128, blank=True)
    versions = models.JSONField(default=dict, blank=True)
    # an infrastructure failure, in words for the owner (no host paths, no trace), while it is
    # retried and when status=failed; the whole trace for staff in error_detail
    error = models.TextField(blank=True)
    error_detail = models.TextField(blank=True)
    error_at = models.DateTimeField(null=True, blank=True)  # the last infrastructure failure

    celery_task_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveIntegerField(default=0)  # claims so far
    # set at each claim; a result is stored only under the claim that is current
    claim_token = models.CharField(max_length=32, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    results_stored = models.PositiveIntegerField(default=0)  # stays 1: a result is never stored twice

    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    hidden = models.BooleanField(default=False)  # disqualified by an admin
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    # set when the owner opens the code to every visitor (selectors.code_open_reason)
    published_at = models.DateTimeField(null=True, blank=True)
    # set when staff withhold the code: it stays with its owner and staff whatever else would open it
    code_withheld_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="sub_user_created"),
            models.Index(fields=["status", "started_at"], name="sub_status_started"),
            models.Index(fields=["task", "device_type", "created_at"], name="sub_task_device_created"),
            # the leaderboard reads only ranked rows
            models.Index(
                fields=["task", "device_type", "user", "-board_speedup"],
                name="sub_ranked",
                condition=Q(mode="ranked", status="done", verdict="verified", hidden=False),
            ),
            models.Index(fields=["-created_at"], name="sub_flagged", condition=Q(verdict="flagged", hidden=False)),
            # max(finished_at) is part of the pages' cache fingerprint
            models.Index(fields=["finished_at"], name="sub_finished"),
            # fair_order reads each queued row's user's latest start: one index probe per row
            # instead of all that user's rows (a place in line cost 0.6 s with 100,000 rows)
            models.Index(fields=["user", "-started_at"], name="sub_user_started",
                         condition=Q(started_at__isnull=False)),
            # a user's unfinished rows and newest id: the API's per-user cache stamp (api/owncache.py)
            models.Index(fields=["user"], name="sub_user_active", condition=Q(status__in=["queued", "running"])),
            models.Index(fields=["user", "id"], name="sub_user_id"),
            # the home page's and the API's best result per task: the first ranked row of the task
            models.Index(fields=["task", "-board_speedup", "created_at"], name="sub_task_best",
                         condition=Q(mode="ranked", status="done", verdict="verified", hidden=False,
                                     speedup_vs_compile__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.task_id and self.task.name} by {self.user_id and self.user}"

    def save(self, *args, **kwargs):
        if self.source and not self.source_sha256:
            self.source_sha256 = hashlib.sha256(self.source.encode()).hexdigest()
        super().save(*args, **kwargs)

    def get_absolute_url(self) -> str:
        # the admin's "view on site" link goes to the submission's page
        from django.urls import reverse

        return reverse("submission_detail", args=[self.pk])

    @property
    def typed_report(self):
        """The stored report as an evaluator.Report (None without one): the one way the site reads
        a report's fields (stored_report)."""
        return stored_report(self.report, self.pk)

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def is_ranked(self) -> bool:
        return (
            self.mode == self.Mode.RANKED
            and self.status == self.Status.DONE
            and self.verdict == self.Verdict.VERIFIED
            and not self.hidden
        )

    def can_view(self, user) -> bool:
        """The owner and staff see everything: code, logs and the result page (others see a ranked
        or published entry's page through selectors.submission_for_viewer)."""
        return user.is_authenticated and (user.is_staff or user.pk == self.user_id)


class FlaggedSubmission(Submission):
    """The admin's review queue: submissions the evaluator flagged (a proxy, same table)."""

    class Meta:
        proxy = True
        verbose_name = "flagged submission"
        verbose_name_plural = "flagged submissions (review queue)"


class Profile(models.Model):
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile")
    banned = models.BooleanField(default=False)
    banned_reason = models.TextField(blank=True)
    banned_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"profile of {self.user}"


class AuditEntry(models.Model):
    class Action(models.TextChoices):
        APPROVE = "approve"
        DISQUALIFY = "disqualify"
        RERUN = "rerun"
        BAN = "ban"
        UNBAN = "unban"
        PUBLISH = "publish"
        WITHHOLD = "withhold"
        RELEASE = "release"

    submission = models.ForeignKey(
        Submission, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_entries"
    )
    # the user a ban or unban is about (and the submission's owner otherwise)
    target_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_about"
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_actions"
    )
    action = models.CharField(max_length=16, choices=Action.choices)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.action} by {self.actor} at {self.created_at:%Y-%m-%d %H:%M}"


class ApiToken(models.Model):
    """A token for the JSON API. Only its SHA-256 is stored; the key is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=8, editable=False)  # to tell tokens apart in lists
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}... ({self.user})"

    @staticmethod
    def hash_key(key: str) -> str:
        # keys are 256 random bits: a plain hash is enough, no per-key salt or stretching needed
        return hashlib.sha256(key.encode()).hexdigest()


class IdempotencyKey(models.Model):
    """An `Idempotency-Key` sent with an API upload (leaderboard/services/idempotency.py): the same
    key from the same user within a day answers the first submission again and creates nothing.
    The unique (user, key) is what holds when two requests with one key race: the second insert
    waits for the first transaction and then fails, and its request answers the first one's
    submission."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # SHA-256 of the upload (task, mode, filename, source): the same key with another body is refused
    fingerprint = models.CharField(max_length=64)
    # null only inside the transaction that stores both rows: the key goes in first, so that a
    # racing request waits on it before it counts against any upload limit
    submission = models.ForeignKey(Submission, null=True, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="one_upload_per_idempotency_key"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.key}"


class Competition(models.Model):
    """A time-boxed contest on some tasks and device types. Ranked submissions uploaded while it is
    open (and not before it was created) enter its standings (leaderboard/services/competitions.py); once it
    has closed and every such submission has its result and, if flagged, its review, the standings
    are frozen into CompetitionEntry rows."""

    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    text = models.TextField(blank=True)
    tasks = models.ManyToManyField(Task, related_name="competitions")
    # ["cuda:NVIDIA H200", "cpu"]: one set of standings per task and device type
    device_types = models.JSONField(default=list)
    opens_at = models.DateTimeField()
    closes_at = models.DateTimeField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    frozen_at = models.DateTimeField(null=True, blank=True)  # when the standings were frozen

    class Meta:
        ordering = ["-opens_at"]

    def __str__(self) -> str:
        return self.slug

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("competition_detail", args=[self.slug])


class CompetitionEntry(models.Model):
    """One user's best entry on one task and device type, as it stood when the standings froze.
    The numbers and the report are copied: a later re-run or approval changes none of them; only
    a disqualification of the submission takes the entry out (selectors in competition_reads)."""

    competition = models.ForeignKey(Competition, on_delete=models.CASCADE, related_name="entries")
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="+")
    device_type = models.CharField(max_length=64)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="competition_entries")
    rank = models.PositiveIntegerField()  # at the freeze
    speedup_vs_compile = models.FloatField()
    speedup_vs_eager = models.FloatField(null=True, blank=True)
    pct_of_floor = models.FloatField(null=True, blank=True)
    report = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["competition", "task", "device_type", "rank"]
        verbose_name_plural = "competition entries"
        constraints = [
            models.UniqueConstraint(fields=["competition", "task", "device_type", "user"], name="one_entry_per_user"),
        ]

    def __str__(self) -> str:
        return f"{self.competition_id}: #{self.rank} {self.user} on {self.task} ({self.device_type})"

    @property
    def typed_report(self):
        """The frozen copy of the report as an evaluator.Report, or None (stored_report)."""
        return stored_report(self.report, self.submission_id)


# profile mode's stored files and the boards' read model live in modules of their own; imported
# here so that Django registers them
from leaderboard.models.board import BoardEntry  # noqa: E402,F401
from leaderboard.models.profile import ProfileFile  # noqa: E402,F401
