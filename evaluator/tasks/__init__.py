"""The task registry: every module in this package that defines `TASK` (a `Task`) is a task.

Modules whose name starts with an underscore, and `base`, are not tasks. Adding a task is adding a
module; nothing here needs editing.
"""
from __future__ import annotations

import importlib
import pkgutil

from evaluator.tasks.base import Task

__all__ = ["TASKS", "Task", "get_task"]


def _discover() -> dict[str, Task]:
    found: dict[str, Task] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        task = getattr(module, "TASK", None)
        if not isinstance(task, Task):
            continue
        if task.name in found:
            raise RuntimeError(f"two task modules define the task {task.name!r}")
        found[task.name] = task
    return found


TASKS: dict[str, Task] = _discover()


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        known = ", ".join(sorted(TASKS)) or "(none)"
        raise KeyError(f"unknown task {name!r}; known tasks: {known}") from None
