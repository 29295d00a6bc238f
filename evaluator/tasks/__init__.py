"""The task registry: the tasks the loader finds (evaluator/tasks/loader.py), each imported when
first asked for.

    TASKS: a mapping name -> Task (`name in TASKS` and `sorted(TASKS)` import nothing)
    get_task(name, params_seed=None): the task, its parameters drawn under params_seed if it has any;
        the name may be a reference `name@seed` (task_ref), which is how the judge names the task
        to the processes it starts, so each draws the same parameters
    sources(), errors(): where each task comes from, and the tasks that failed to load
"""
from __future__ import annotations

from collections.abc import Mapping

from evaluator.tasks.base import EntryError, Task
from evaluator.tasks.loader import Source, load, roots, scan

__all__ = ["TASKS", "EntryError", "Task", "errors", "get_task", "sources", "task_ref"]


class Registry(Mapping):
    def __init__(self):
        self._index: dict[str, Source] | None = None
        self._errors: dict[str, str] = {}
        self._roots = None

    def _sources(self) -> dict[str, Source]:
        current = roots()
        if self._index is None or current != self._roots:  # EVALUATOR_TASKS_PATH changed
            index, self._errors = {}, {}
            for root in current:
                for source in scan(root):
                    if source.name in index:
                        self._errors[str(source.path)] = (f"the name {source.name!r} is taken by "
                                                         f"{index[source.name].path}")
                    else:
                        index[source.name] = source
            self._index, self._roots = index, current
        return self._index

    def __getitem__(self, name: str) -> Task:
        # loader.load builds one Task per source and process: a task whose file stays where it
        # was is the same object after the path changes
        source = self._sources()[name]
        try:
            return load(source)
        except Exception as e:  # noqa: BLE001 - one broken task never hides the others
            self._errors[str(source.path)] = str(e)
            raise KeyError(f"the task {name!r} ({source.path}) does not load: {e}") from None

    def __iter__(self):
        return iter(sorted(self._sources()))

    def __len__(self) -> int:
        return len(self._sources())

    def __contains__(self, name) -> bool:
        return name in self._sources()

    def sources(self) -> dict[str, Source]:
        return dict(self._sources())

    def errors(self) -> dict[str, str]:
        """{path: error} of the tasks that failed to load (those tried so far) and of names taken twice."""
        self._sources()
        return dict(self._errors)


TASKS = Registry()


def task_ref(name: str, params_seed: int | None) -> str:
    """How the judge names a task to its processes: with the evaluation's parameters' seed."""
    return name if params_seed is None else f"{name}@{int(params_seed)}"


def get_task(name: str, params_seed: int | None = None) -> Task:
    if "@" in name:
        name, _, seed = name.partition("@")
        params_seed = int(seed)
    if name not in TASKS:
        known = ", ".join(sorted(TASKS)) or "(none)"
        raise KeyError(f"unknown task {name!r}; known tasks: {known}")
    return TASKS[name].bind(params_seed)


def sources() -> dict[str, Source]:
    return TASKS.sources()


def errors() -> dict[str, str]:
    return TASKS.errors()
