"""The task catalog: Task rows from what `python -m evaluator describe` says of each task in a
box (task_additions.py runs it), their floors from the work it states and the site's ceilings,
retiring a task, and the ruler's calibration readings per device type.

A task file is trusted staff code, but the site's processes never import it: its bytes go into a
box (sandbox.task_command), and what comes back is JSON, checked here field by field before it is
stored. See docs/site.md, "Adding and retiring tasks".
"""
from __future__ import annotations

import math
import re

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard import scoring
from leaderboard.models import Task
from leaderboard.services.reference_source import reference_in_text
from leaderboard.services.reference_source import reference_source as source_of
from leaderboard.services.ties import submissions_rescore_ties

DEVICE_KINDS = ("cpu", "cuda")
TRACK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # as describe names it
NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")
MAX_TEXT = 200_000  # a description, a signature or a reference's source


class EntryError(ValueError):
    """A describe entry the site cannot store; the message says which field and why."""


def _text(entry: dict, key: str, *, limit: int = MAX_TEXT, required: bool = True) -> str:
    value = entry.get(key, "" if not required else None)
    if not isinstance(value, str) or "\x00" in value:
        raise EntryError(f"{key}: text expected")
    return value[:limit]


def _shape(value, where: str) -> dict:
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) for k, v in value.items()):
        raise EntryError(f"{where}: a shape is an object of dimension name -> integer, not {value!r:.100}")
    return dict(value)


def _number(value, where: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or (positive and value <= 0):
        raise EntryError(f"{where}: not a {'positive' if positive else 'non-negative'} number: {value!r:.50}")
    return float(value)


def entry_fields(entry: dict) -> dict:
    """The Task fields of one entry of describe's "tasks" (floors aside), checked; EntryError
    names the field that is wrong."""
    if not isinstance(entry, dict):
        raise EntryError("not an object")
    name = entry.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise EntryError(f"name: lowercase letters, digits and '_', not {name!r:.80}")
    track = entry.get("track") or Task.BUILTIN
    if not isinstance(track, str) or not TRACK.match(track):
        raise EntryError(f"track: not a track name: {track!r:.80}")
    fmt = entry.get("format")
    if fmt not in Task.Format.values:
        raise EntryError(f"format: one of {', '.join(Task.Format.values)}, not {fmt!r:.40}")
    inputs = entry.get("input_names")
    if not isinstance(inputs, list) or not all(isinstance(n, str) and n.isidentifier() for n in inputs):
        raise EntryError("input_names: a list of identifiers expected")
    bench = entry.get("bench_shapes")
    work = entry.get("work")
    if not isinstance(bench, dict) or not isinstance(work, dict):
        raise EntryError("bench_shapes and work: objects by device expected")
    bench_shapes, works = {}, {}
    for kind in DEVICE_KINDS:
        shapes = bench.get(kind) or []
        rows = work.get(kind) or []
        if not isinstance(shapes, list) or not isinstance(rows, list) or len(shapes) != len(rows):
            raise EntryError(f"work.{kind}: one row per benchmark shape expected")
        bench_shapes[kind] = [_shape(s, f"bench_shapes.{kind}") for s in shapes]
        works[kind] = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise EntryError(f"work.{kind}[{i}]: an object of flops and bytes expected")
            flops = _number(row.get("flops"), f"work.{kind}[{i}].flops")
            moved = _number(row.get("bytes"), f"work.{kind}[{i}].bytes")
            if flops == 0 and moved == 0:
                raise EntryError(f"work.{kind}[{i}]: no work stated, so no floor")
            works[kind].append({"flops": flops, "bytes": moved})
    if not any(bench_shapes.values()):
        raise EntryError("bench_shapes: no benchmark shape on any device")
    tests = entry.get("test_shapes")
    if not isinstance(tests, list):
        raise EntryError("test_shapes: a list expected")
    tolerance = entry.get("tolerance")
    if not isinstance(tolerance, dict):
        raise EntryError("tolerance: an object of atol and rtol expected")
    hidden = entry.get("hidden")
    if hidden is not None:
        if not isinstance(hidden, dict) or isinstance(hidden.get("count"), bool) \
                or not isinstance(hidden.get("count"), int) or hidden["count"] < 0 \
                or not isinstance(hidden.get("families", []), list) \
                or not all(isinstance(f, str) for f in hidden.get("families", [])):
            raise EntryError("hidden: {count: int, families: [str]} or null expected")
        hidden = {"count": hidden["count"], "families": [f[:64] for f in hidden.get("families", [])][:32]}
    bound = entry.get("bound", "memory")
    if bound not in ("memory", "compute"):
        raise EntryError(f"bound: memory or compute, not {bound!r:.40}")
    return {
        "name": name,
        "track": track,
        "format": fmt,
        "title": _text(entry, "title", limit=200) or name,
        "description": _text(entry, "description", required=False),
        "signature": _text(entry, "signature", required=False),
        "reference_source": _shown_reference(fmt, _text(entry, "reference_source", required=False)),
        "input_names": inputs,
        "output_dtype": _text(entry, "output_dtype", limit=32, required=False),
        "test_shapes": [_shape(s, "test_shapes") for s in tests],
        "bench_shapes": bench_shapes,
        "work": works,
        "tolerance": {"atol": _number(tolerance.get("atol"), "tolerance.atol"),
                      "rtol": _number(tolerance.get("rtol"), "tolerance.rtol")},
        "bound": bound,
        "max_speedup_vs_compile": _number(entry.get("max_speedup_vs_compile", 2.0), "max_speedup_vs_compile",
                                          positive=True),
        "has_params": bool(entry.get("has_params", False)),
        "hidden": hidden,
        "origin": _text(entry, "source", limit=500, required=False),
    }


def _shown_reference(fmt: str, text: str) -> str:
    """What a task page shows as the reference: of a folder task's reference.py, its `reference`
    and the helpers and constants it uses (not the input maker); a KernelBench-style file whole
    (its Model, get_inputs and shape constants are the problem)."""
    if fmt == Task.Format.FOLDER:
        return reference_in_text(text) or text
    return text


def site_ceilings(cpu: dict | None = None) -> dict:
    """The ceilings the floors are computed against, per device type; `cpu` overrides the CPU's."""
    ceilings = dict(scoring.CEILINGS)
    if cpu:
        ceilings["cpu"] = cpu
    return ceilings


def floors_from_work(bench_shapes: dict, work: dict, ceilings: dict) -> dict:
    """{device type: [{"shape", "floor_ms"}]} for every device type the site has ceilings for."""
    return {device_type: scoring.shape_floors(bench_shapes.get(scoring.device_kind(device_type), []),
                                              work.get(scoring.device_kind(device_type), []), ceiling)
            for device_type, ceiling in ceilings.items()}


def task_store(*, entry: dict, definition: dict | None = None, ceilings: dict | None = None,
               added_by=None, origin: str | None = None) -> tuple[Task, bool]:
    """Create or update the Task row for one describe entry (checked by entry_fields), with its
    floors. `definition` ({relative path: text}) is kept for the box of each evaluation; a
    built-in task has none. `origin`: where it came from as people name it (describe's source
    is a path inside the box)."""
    fields = entry_fields(entry)
    if origin is not None:
        fields["origin"] = origin[:500]
    fields["floors"] = floors_from_work(fields["bench_shapes"], fields["work"], ceilings or site_ceilings())
    fields["definition"] = dict(definition or {})
    name = fields.pop("name")
    with transaction.atomic():
        task, created = Task.objects.select_for_update().get_or_create(name=name, defaults=fields)
        if created:
            if fields["track"] != Task.BUILTIN:
                task.added_by, task.added_at = added_by, timezone.now()
                task.save(update_fields=["added_by", "added_at"])
        else:
            for key, value in fields.items():
                setattr(task, key, value)
            task.save()
    return task, created


def spec_entry(spec) -> dict:
    """An evaluator Task object as a describe entry: for the tests, which hold the built-in tasks
    in their own process (the site's processes never do; they read describe's JSON)."""
    try:
        # with the module's helpers and constants it uses (transformer_block's _block)
        reference_source = source_of(spec.reference)
    except (OSError, TypeError):
        reference_source = getattr(spec, "reference_text", "") or ""
    bench = {"cpu": [dict(s) for s in spec.bench_shapes_cpu], "cuda": [dict(s) for s in spec.bench_shapes_gpu]}
    hidden = getattr(spec, "hidden", None)
    if hidden is not None:
        hidden = hidden.summary() if hasattr(hidden, "summary") else {"count": hidden.count,
                                                                       "families": list(hidden.families)}
    return {
        "name": spec.name, "format": "folder", "source": "", "track": Task.BUILTIN, "title": spec.title,
        "description": spec.description, "signature": spec.signature, "reference_source": reference_source,
        "input_names": list(spec.input_names),
        "output_dtype": str(getattr(spec, "output_dtype", "")).replace("torch.", ""),
        "test_shapes": [dict(s) for s in spec.test_shapes],
        "hidden": hidden,
        "bench_shapes": bench,
        "work": {k: [{"flops": float(spec.flops(s)), "bytes": float(spec.bytes_moved(s))} for s in shapes]
                 for k, shapes in bench.items()},
        "tolerance": {"atol": spec.tolerance.atol, "rtol": spec.tolerance.rtol},
        "bound": getattr(spec, "bound", "memory"), "max_speedup_vs_compile": spec.max_speedup_vs_compile,
        "has_params": False,
    }


def task_sync(*, spec, ceilings: dict | None = None) -> tuple[Task, bool]:
    """Create or update the Task row of an evaluator Task object held in this process (the tests'
    way; `manage.py load_tasks` reads the same through describe in a box)."""
    return task_store(entry=spec_entry(spec), ceilings=ceilings)


def tasks_refloor(*, ceilings: dict) -> int:
    """The floors of every task again from its stored work, against `ceilings`; how many changed."""
    changed = 0
    with transaction.atomic():
        for task in Task.objects.select_for_update().exclude(work={}):
            floors = floors_from_work(task.bench_shapes or {}, task.work or {}, ceilings)
            if floors != task.floors:
                task.floors = floors
                task.save(update_fields=["floors", "updated_at"])
                changed += 1
    return changed


def task_retire(*, task: Task, retired: bool = True) -> Task:
    """Retire a task (or bring it back): out of the upload form and the API's uploads; its boards,
    results and page stay."""
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task.pk)
        if task.retired != retired:
            task.retired = retired
            task.save(update_fields=["retired", "updated_at"])  # updated_at moves the page cache
    return task


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
