"""The task catalog: Task rows synced from the evaluator's registry with their floors, and the
ruler's calibration readings per device type."""
from __future__ import annotations

import math

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard import scoring
from leaderboard.models import Task
from leaderboard.services.reference_source import reference_source as source_of
from leaderboard.services.ties import submissions_rescore_ties


def task_sync(*, spec, ceilings: dict | None = None) -> tuple[Task, bool]:
    """Create or update the Task row for one evaluator task (an evaluator.tasks.Task)."""
    ceilings = ceilings or scoring.CEILINGS
    try:
        # with the module's helpers and constants it uses (transformer_block's _block)
        reference_source = source_of(spec.reference)
    except (OSError, TypeError):
        reference_source = ""
    floors = {}
    for device_type, ceiling in ceilings.items():
        shapes = spec.bench_shapes("cpu" if device_type == "cpu" else "cuda")
        floors[device_type] = scoring.shape_floors(spec, shapes, ceiling)
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
    if scoring.device_kind(device_type) not in scoring.CALIBRATION_TOLERANCE:
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
            entry["tolerance"] = scoring.CALIBRATION_TOLERANCE[scoring.device_kind(device_type)]
            entry["ok"] = scoring.calibration_ok(device_type=device_type,
                                                 reference_vs_eager=entry["reference_vs_eager"],
                                                 compile_vs_compile=entry["compile_vs_compile"])
            task.calibration = {**(task.calibration or {}), device_type: entry}
            task.save(update_fields=["calibration", "updated_at"])  # updated_at moves the page cache
            # the tie rule reads this calibration: the task's results on this device type follow it
            submissions_rescore_ties(task=task, device_type=device_type)
            updated.append(task)
    return updated
