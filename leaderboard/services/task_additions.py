"""Adding tasks to the site: a task's files described and triaged in a box (sandbox.task_command),
each problem stored (catalog.task_store) or refused with the reason; the built-in tasks read the
same way at each start; a file staff upload in the audit console read later by the worker.

A task file is trusted staff code, but the site's processes never import it. See docs/site.md,
"Adding and retiring tasks".
"""
from __future__ import annotations

import dataclasses
import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from leaderboard.models import Task, TaskAddition
from leaderboard.services.catalog import EntryError, entry_fields, task_store

# the tracks of added tasks: a KernelBench level's, or a plain name (not "builtin", not "level...")
ADDED_TRACK_NAME = re.compile(r"^(kernelbench-level\d{1,3}|(?!level)[a-z0-9][a-z0-9_]{0,63})$")


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
    # evaluator.tasks.kernelbench.task_name's rule, which the web process cannot import (torch)
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
