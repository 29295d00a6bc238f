"""A site's finished evaluations as one JSON file, and that file loaded into another site: so that
the boards a GPU host made can be looked at on a machine without one (bench/gpu_site.py writes
such a file; `manage.py export_results` and `manage.py import_results`).

Only what the pages show travels: users by name (no password, no e-mail), each finished
submission with its source, report and scores, and each task's ruler. An import makes the users it
lacks with unusable passwords and skips a submission it already holds (same user, task, mode,
device type, source and upload time), so loading a file twice changes nothing."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.dateparse import parse_datetime

from leaderboard import scoring
from leaderboard.models import Submission, Task, stored_report
from leaderboard.services.boards import board_entries_refresh
from leaderboard.services.ties import submissions_rescore_ties

SCHEMA = 1
FIELDS = ("mode", "device_type", "source", "filename", "status", "verdict", "reasons", "reason_codes", "report",
          "logs", "speedup_vs_compile", "speedup_vs_eager", "pct_of_floor", "gpu_name", "versions", "error",
          "attempts", "hidden")
TIMES = ("created_at", "started_at", "finished_at")


class ResultsFileError(ValueError):
    pass


def export(*, device_type: str | None = None) -> dict:
    rows = Submission.objects.filter(status__in=(Submission.Status.DONE, Submission.Status.FAILED))
    if device_type:
        rows = rows.filter(device_type=device_type)
    rows = rows.select_related("user", "task").order_by("pk")
    return {
        "schema": SCHEMA,
        "calibration": {t.name: t.calibration for t in Task.objects.all() if t.calibration},
        "submissions": [
            {"id": s.pk, "user": s.user.get_username(), "task": s.task.name,
             **{f: getattr(s, f) for f in FIELDS},
             **{f: getattr(s, f).isoformat() if getattr(s, f) else None for f in TIMES}}
            for s in rows
        ],
    }


@transaction.atomic
def load(data: dict) -> dict:
    """Load an exported file; returns {"created": n, "skipped": n, "users": n}."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("submissions"), list):
        raise ResultsFileError(f"not a results file of schema {SCHEMA}")
    tasks = {t.name: t for t in Task.objects.all()}
    users = get_user_model().objects
    counts = {"created": 0, "skipped": 0, "users": 0}
    for name, calibration in (data.get("calibration") or {}).items():
        if name in tasks and isinstance(calibration, dict):
            tasks[name].calibration = {**tasks[name].calibration, **calibration}
            tasks[name].save(update_fields=["calibration"])
            submissions_rescore_ties(task=tasks[name])
    for row in data["submissions"]:
        task = tasks.get(row.get("task"))
        if task is None:
            raise ResultsFileError(f"unknown task {row.get('task')!r}: run manage.py load_tasks first")
        user = users.filter(username=row["user"]).first()
        if user is None:
            user = users.create_user(row["user"], password=None)
            counts["users"] += 1
        fields = {f: row[f] for f in FIELDS if f in row}
        if fields.get("mode") == "ranked" and fields.get("speedup_vs_compile") is not None:
            # the board's time and noise mark, from the report as the worker stores them
            report = stored_report(fields.get("report"))
            shapes = report.shape_dicts() if report else None
            fields.update(scoring.board_time(shapes))
            # the tie rule under the ruler this site holds for the task (the file's, loaded above)
            fields.update(scoring.tie_fields(speedup=fields["speedup_vs_compile"], shapes=shapes,
                                             device_type=fields.get("device_type") or "cpu",
                                             calibration=task.calibration_for(fields.get("device_type") or "cpu")))
        times = {f: parse_datetime(row[f]) if row.get(f) else None for f in TIMES}
        same = Submission.objects.filter(user=user, task=task, mode=fields["mode"], device_type=fields["device_type"],
                                         created_at=times["created_at"], source=fields["source"])
        if same.exists():
            counts["skipped"] += 1
            continue
        sub = Submission.objects.create(user=user, task=task, **fields)
        # created_at is set on insert (auto_now_add): the upload's own time is written afterwards
        Submission.objects.filter(pk=sub.pk).update(**times, results_stored=1)
        if sub.mode == Submission.Mode.RANKED:
            board_entries_refresh(task_id=task.pk, user_id=user.pk, device_types=[sub.device_type])
        counts["created"] += 1
    return counts
