"""Where tasks come from: the built-in directory (evaluator/tasks/builtin/) and every directory of
EVALUATOR_TASKS_PATH (colon-separated), in that order; the first of two tasks with one name wins
and the second is reported.

A directory holds task folders (a `task.toml` inside), KernelBench-style problem files, or
folders of those (a KernelBench checkout's `level1/`, `level2/`: the folder's name becomes the
track, `kernelbench-level1`). Listing reads names only; a task is imported when first asked for,
so one broken file costs only itself, and `errors()` names it with its error.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from evaluator.tasks import folder, kernelbench

BUILTIN = Path(__file__).resolve().parent / "builtin"
ENV = "EVALUATOR_TASKS_PATH"


@dataclasses.dataclass(frozen=True)
class Source:
    name: str
    path: Path
    format: str  # "folder" or "kernelbench"
    track: str


def roots() -> list[Path]:
    extra = [Path(p) for p in os.environ.get(ENV, "").split(":") if p]
    return [BUILTIN] + extra


def _track(root: Path, parent: Path) -> str:
    if root == BUILTIN:
        return "builtin"
    name = parent.name.lower()
    return f"kernelbench-{name}" if name.startswith("level") else kernelbench.task_name(name)


def scan(path: Path, root: Path | None = None) -> list[Source]:
    """The task sources under one path: a task folder, a problem file, or a directory of them
    (one level of subdirectories)."""
    root = root or path
    if path.is_file():
        return [Source(kernelbench.task_name(path.stem), path, "kernelbench", _track(root, path.parent))]
    if folder.is_task_folder(path):
        return [Source(_folder_name(path), path, "folder", _track(root, path.parent))]
    found = []
    if not path.is_dir():
        return found
    for entry in sorted(path.iterdir()):
        if entry.name.startswith((".", "_")):
            continue
        if folder.is_task_folder(entry):
            found.append(Source(_folder_name(entry), entry, "folder", _track(root, path)))
        elif entry.is_file() and kernelbench.is_problem(entry):
            found.append(Source(kernelbench.task_name(entry.stem), entry, "kernelbench", _track(root, path)))
        elif entry.is_dir() and entry.name != "solutions" and path == root:
            found.extend(scan(entry, root))
    return found


def _folder_name(path: Path) -> str:
    import tomllib

    try:
        name = tomllib.loads((path / "task.toml").read_text()).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        name = None
    return name if isinstance(name, str) and name else path.name


_LOADED: dict[Source, object] = {}


def load(source: Source):
    """The source's Task, built once per process: the registry, `describe` and the triage share
    one Task object per file (its module is imported once per process too)."""
    if source not in _LOADED:
        if source.format == "folder":
            _LOADED[source] = folder.load(source.path, source.track)
        else:
            _LOADED[source] = kernelbench.load(source.path, source.track)
    return _LOADED[source]
