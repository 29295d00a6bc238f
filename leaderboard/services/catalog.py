"""The task catalog: Task rows from what `python -m evaluator describe` says of each task in a
box (the built-in tasks at each start, the site's own as staff add them), their floors from the
work it states and the site's ceilings, retiring a task, and the ruler's calibration readings per
device type.

A task file is trusted staff code, but the site's processes never import it: its bytes go into a
box (sandbox.task_command), and what comes back is JSON, checked here field by field before it is
stored. See docs/site.md, "Adding and retiring tasks".
"""
from __future__ import annotations

import dataclasses
import math
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard import scoring
from leaderboard.models import Task, TaskAddition
from leaderboard.services.reference_source import reference_in_text
from leaderboard.services.reference_source import reference_source as source_of
from leaderboard.services.ties import submissions_rescore_ties

DEVICE_KINDS = ("cpu", "cuda")
TRACK = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")  # as describe names it
# the tracks of added tasks: a KernelBench level's, or a plain name (not "builtin", not "level...")
ADDED_TRACK_NAME = re.compile(r"^(kernelbench-level\d{1,3}|(?!level)[a-z0-9][a-z0-9_]{0,63})$")
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


# ---- the box's commands, and what the site makes of their answers ---------------------------

@dataclasses.dataclass
class Outcome:
    """One problem of an addition: added (task set) or refused (why)."""

    source: str  # the file or folder, as given
    name: str | None = None
    task: Task | None = None
    why: str = ""

    @property
    def added(self) -> bool:
        return self.task is not None

    def line(self) -> str:
        if self.added:
            return f"added {self.task.name} ({self.task.track})"
        return f"refused {self.source}: {self.why}"


def judge_device() -> str:
    """The device this site judges on (its workers'): the triage runs there."""
    return settings.WORKER_DEVICE


def _sandbox_limits(device: str, time_limit_s: float):
    import sandbox

    return dataclasses.replace(sandbox.Limits.from_env(), time_limit_s=float(time_limit_s),
                               gpu_index=settings.WORKER_GPU_INDEX if device == "cuda" else None)


def _box(kind: str, **kwargs) -> dict:
    import sandbox

    device = kwargs.get("device", "cpu")
    return sandbox.task_command(kind=kind, backend=settings.SANDBOX_BACKEND or None,
                                limits=_sandbox_limits(device, settings.TASK_BOX_LIMIT_S), **kwargs)


def tasks_load_builtin(*, ceilings: dict | None = None) -> list[Task]:
    """The built-in tasks as describe reads them in a box: created or updated. A built-in task
    that describe reports broken raises ValidationError (the evaluator's own tasks must load)."""
    from sandbox import BUILTIN_TASKS

    answer = _box("describe", builtin=True)
    if answer["errors"]:
        raise ValidationError("the evaluator's built-in tasks do not load: " + "; ".join(
            f"{e.get('source')}: {e.get('error')}"[:500] for e in answer["errors"]))
    rows = []
    for entry in answer["tasks"]:
        try:
            source = entry.get("source") if isinstance(entry.get("source"), str) else ""
            origin = "evaluator/tasks/builtin" + source[len(BUILTIN_TASKS):] if source.startswith(BUILTIN_TASKS) else ""
            rows.append(task_store(entry=entry, ceilings=ceilings, origin=origin))
        except EntryError as exc:
            raise ValidationError(f"built-in task {entry.get('name')!r}: {exc}") from None
    return rows


def kernelbench_name(filename: str) -> str:
    """A KernelBench-style file's task name, as the evaluator makes it: the stem lowercased, each
    run of characters other than a-z0-9 replaced by '_' (`17_Masked-Scale.py` -> `17_masked_scale`)."""
    stem = filename.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.endswith(".py") else stem
    return re.sub(r"[^a-z0-9]+", "_", stem.lower())


def _locate(files: dict[str, bytes], rel: str, name: str) -> str | None:
    """The file or folder among `files` that a describe entry came from: its source when that
    names one, else (a source that names the directory it was found in) the problem file whose
    normalised stem is the task's name, or the folder of that name."""
    if rel in files or any(f.startswith(rel + "/task.toml") for f in files):
        return rel
    inside = [f for f in files if f.startswith(rel + "/")] if rel else list(files)
    for f in inside:
        if f.endswith(".py") and f.count("/") == rel.count("/") + (1 if rel else 0) and kernelbench_name(f) == name:
            return f
    for f in inside:
        if f.endswith("/task.toml") and f.rsplit("/", 2)[-2] == name:
            return f.rsplit("/", 1)[0]
    return None


def definition_of(files: dict[str, bytes], rel: str) -> dict[str, str]:
    """One task's files as the box of its evaluations gets them, relative to /tasks (its track's
    directory kept: the evaluator names the track after it): a problem file with its siblings of
    the same stem (a tolerance override beside it), or a task folder's files without its
    solutions/ (test data, never needed to judge)."""
    if rel.endswith(".py") and rel in files:
        stem = rel[:-3]
        picked = [f for f in files if f == rel or (f.startswith(stem + ".") and "/" not in f[len(stem):])]
    else:
        picked = [f for f in files if f.startswith(rel + "/") and not f.startswith(rel + "/solutions/")
                  and "/__pycache__/" not in f]
    return {f: files[f].decode("utf-8") for f in sorted(picked)}


def _rel_of(source: str) -> str | None:
    """The path relative to the box's /tasks of a describe entry's `source` (the path as given)."""
    import sandbox

    prefix = sandbox.box.TASKS_DIR + "/"
    return source[len(prefix):] if isinstance(source, str) and source.startswith(prefix) else None


def track_dir(track: str) -> str:
    """The directory a track's files sit in inside the box: the evaluator names a task's track
    after the directory it was found in (`level1/` gives `kernelbench-level1`, `added/` gives
    `added`), in the box of an evaluation as in describe's."""
    m = re.fullmatch(r"kernelbench-(level\d{1,3})", track)
    return m.group(1) if m else track


def check_added_track(track) -> str:
    if not isinstance(track, str) or not ADDED_TRACK_NAME.match(track) or track == Task.BUILTIN:
        raise ValidationError(f"Not a track for an added task: {track!r:.80} (kernelbench-levelN, or lowercase "
                              "letters, digits and '_' not starting with 'level').", code="bad_track")
    return track


def task_add(*, files: dict[str, bytes], track: str, device: str | None = None,
             added_by=None, ceilings: dict | None = None) -> list[Outcome]:
    """Add the tasks in `files` ({relative path: bytes}: problem files, task folders' files) to
    `track`: describe in a box, then triage on the site's device for those describe read, then
    one row per task that passes both (its definition: its own files). One Outcome per problem,
    added or refused with the reason. SandboxError when a box could not run (nothing is stored
    then)."""
    check_added_track(track)
    for rel, data in files.items():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError(f"{rel}: not UTF-8 text") from None
    device = device or judge_device()
    folder = track_dir(track)
    boxed = {f"{folder}/{rel}": data for rel, data in files.items()}
    described = _box("describe", files=boxed)
    outcomes: list[Outcome] = []
    for err in described["errors"]:
        outcomes.append(Outcome(source=_shown(err.get("source"), folder), name=_opt(err.get("name")),
                                why=_one_line(err.get("error")) or "describe failed"))
    candidates = {}  # name -> (the file or folder it came from, the entry, its checked fields)
    for entry in described["tasks"]:
        source = _shown(entry.get("source") if isinstance(entry, dict) else None, folder)
        try:
            fields = entry_fields(entry)
        except EntryError as exc:
            outcomes.append(Outcome(source=source, name=_opt(entry.get("name")), why=f"describe's answer: {exc}"))
            continue
        rel = _rel_of(entry.get("source"))
        where = _locate(boxed, rel, fields["name"]) if rel is not None else None
        if where is None:
            outcomes.append(Outcome(source=source, name=fields["name"],
                                    why="describe named a source that is none of the files given"))
            continue
        if fields["track"] != track:
            outcomes.append(Outcome(source=source, name=fields["name"],
                                    why=f"describe put it in track {fields['track']!r}, not {track!r}"))
            continue
        existing = Task.objects.filter(name=fields["name"]).first()
        if existing is not None:
            outcomes.append(Outcome(source=source, name=fields["name"], why=(
                f"a task named {fields['name']} is on the site already ({existing.track}"
                f"{', retired' if existing.retired else ''}); nothing changed")))
            continue
        if fields["name"] in candidates:
            first = _shown(candidates[fields["name"]][0], folder)
            outcomes.append(Outcome(source=source, name=fields["name"], why=f"{first} is named {fields['name']} too"))
            continue
        candidates[fields["name"]] = (where, entry, fields)
    if candidates:
        triaged = _box("triage", files=boxed, device=device, paths=[folder])
        by_name, by_source = {}, {}
        for row in triaged["results"] + [{**e, "ok": False, "reasons": [e.get("error")]} for e in triaged["errors"]]:
            if isinstance(row.get("name"), str):
                by_name.setdefault(row["name"], row)
            by_source.setdefault(_rel_of(row.get("source")), []).append(row)
        for name, (where, entry, fields) in candidates.items():
            source = _shown(where, folder)
            # by name first: a source may name the directory that held several problems
            row = by_name.get(name)
            if row is None and len(by_source.get(where, [])) == 1:
                row = by_source[where][0]
            if row is None:
                outcomes.append(Outcome(source=source, name=name, why="the triage gave no answer for it"))
                continue
            if row.get("ok") is not True:
                reasons = [_one_line(r) for r in (row.get("reasons") or []) if _one_line(r)]
                outcomes.append(Outcome(source=source, name=name, why=(
                    f"triage on {device}: " + ("; ".join(reasons) or "refused, no reason given"))))
                continue
            task, _ = task_store(entry=entry, definition=definition_of(boxed, where), ceilings=ceilings,
                                 added_by=added_by, origin=source)
            outcomes.append(Outcome(source=source, name=task.name, task=task))
    return sorted(outcomes, key=lambda o: _problem_order(o.source))


def _problem_order(source: str):
    """A level's problems by number (`level1/2_x.py` before `level1/10_y.py`), then by name."""
    folder, _, name = source.rpartition("/")
    head = name.split("_", 1)[0]
    return (folder, int(head) if head.isdigit() else float("inf"), name)


def _shown(source, folder: str) -> str:
    """A source path as people read it: relative to the box's /tasks, a KernelBench level's
    directory kept (`level1/19_ReLU.py`), another track's left out (the file as it was given)."""
    rel = _rel_of(source) if isinstance(source, str) and source.startswith("/") else source
    if not isinstance(rel, str):
        return "?"
    if not folder.startswith("level") and rel.startswith(folder + "/"):
        rel = rel[len(folder) + 1:]
    return rel[:500]


def _opt(value):
    return value if isinstance(value, str) else None


def _one_line(value) -> str:
    return " ".join(str(value or "").split())[:500]


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


# ---- a task file from the audit console, read on the worker ---------------------------------

ADDED_TRACK = "added"


def task_addition_request(*, user, filename: str, source: str, track: str = ADDED_TRACK) -> TaskAddition:
    """Keep a task file staff uploaded and ask the site's worker to read it: on its queue, so the
    triage runs on the device the site judges on, between evaluations, never beside one."""
    if not user.is_staff:
        raise ValidationError("Only staff add tasks.", code="forbidden")
    filename = filename.replace("\\", "/").rsplit("/", 1)[-1]
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", filename) or not filename.endswith(".py"):
        raise ValidationError("A task file's name is letters, digits, '.', '_' or '-', ending in .py.",
                              code="bad_filename")
    check_added_track(track)
    with transaction.atomic():
        addition = TaskAddition.objects.create(requested_by=user, filename=filename, source=source, track=track)
        transaction.on_commit(lambda: _send(addition))
    return addition


def _send(addition: TaskAddition) -> None:
    from leaderboard.celery import app
    from leaderboard.routing import ADD_TASK_FILE, default_device_type, eval_queue_for

    try:
        # by name, as the evaluations are: the task module imports the services, not the reverse
        app.send_task(ADD_TASK_FILE, args=[addition.pk], queue=eval_queue_for(default_device_type()), retry=True,
                      retry_policy={"max_retries": 2, "interval_start": 0.2, "interval_step": 0.5})
    except Exception as exc:  # the broker's errors vary by transport
        TaskAddition.objects.filter(pk=addition.pk, status=TaskAddition.Status.QUEUED).update(
            status=TaskAddition.Status.FAILED, error=f"could not reach the worker's queue: {exc}"[:2000],
            finished_at=timezone.now())


def task_addition_run(*, addition_id: int) -> TaskAddition | None:
    """The worker's part: claim the addition (once), read its file in boxes (task_add), store the
    lines. A box that could not run leaves it failed with the reason; nothing is added then."""
    from sandbox import SandboxError

    won = TaskAddition.objects.filter(pk=addition_id, status=TaskAddition.Status.QUEUED).update(
        status=TaskAddition.Status.RUNNING)
    if not won:
        return None
    addition = TaskAddition.objects.select_related("requested_by").get(pk=addition_id)
    try:
        outcomes = task_add(files={addition.filename: addition.source.encode("utf-8")}, track=addition.track,
                            added_by=addition.requested_by)
    except (SandboxError, ValidationError) as exc:
        addition.status, addition.error = TaskAddition.Status.FAILED, str(exc)[:4000]
    else:
        addition.status, addition.lines = TaskAddition.Status.DONE, [o.line() for o in outcomes]
    addition.finished_at = timezone.now()
    addition.save(update_fields=["status", "lines", "error", "finished_at"])
    return addition
