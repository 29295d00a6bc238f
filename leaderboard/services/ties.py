"""The tie rule's stored fields (scoring.tie_fields) kept in step with the ruler: a task's
calibration on a device type changes the band its results there are judged by, so recording one
rescores them."""
from __future__ import annotations

from leaderboard import scoring
from leaderboard.models import Submission, Task
from leaderboard.services.boards import boards_rebuild


def submissions_rescore_ties(*, task: Task, device_type: str | None = None) -> int:
    """Recompute vs_compile, its interval and board_speedup of every scored result of `task` (on
    `device_type` only, when given) under the task's calibration as stored now, and the boards'
    read model with them. Returns how many rows changed."""
    rows = (Submission.objects.filter(task=task, speedup_vs_compile__isnull=False)
            .only("pk", "device_type", "speedup_vs_compile", "report", "vs_compile", "vs_compile_low",
                  "vs_compile_high", "board_speedup").order_by("pk"))
    if device_type is not None:
        rows = rows.filter(device_type=device_type)
    changed = 0
    for sub in rows.iterator(chunk_size=500):
        report = sub.typed_report
        fields = scoring.tie_fields(speedup=sub.speedup_vs_compile, shapes=report.shape_dicts() if report else None,
                                    device_type=sub.device_type, calibration=task.calibration_for(sub.device_type))
        if any(getattr(sub, k) != v for k, v in fields.items()):
            Submission.objects.filter(pk=sub.pk).update(**fields)
            changed += 1
    if changed:  # a board's order, and so each user's best, may have moved anywhere on it
        boards_rebuild(task_id=task.pk, device_type=device_type)
    return changed
