"""`python -m evaluator describe [PATH ...] --json OUT`: what the site stores about each task,
read by the evaluator (in the box: a task file is staff code the web process never imports).

Without PATH: every task the registry finds (the built-in ones and EVALUATOR_TASKS_PATH's).
A file that fails to load is one entry of "errors", with its error; it never hides the others.
"""
from __future__ import annotations

from pathlib import Path

from evaluator.tasks import loader

SHAPE_DEVICES = {"cpu": "cpu", "cuda": "cuda"}


def task_row(task, source: loader.Source) -> dict:
    bench = {d: [dict(s) for s in task.bench_shapes(d)] for d in SHAPE_DEVICES}
    hidden = task.hidden
    return {
        "name": task.name, "format": task.format, "source": str(source.path), "track": task.track,
        "title": task.title, "description": task.description, "signature": task.signature,
        "reference_source": task.reference_text, "input_names": list(task.input_names),
        "output_dtype": str(task.output_dtype).replace("torch.", ""),
        "test_shapes": [dict(s) for s in task.test_shapes],
        "hidden": None if hidden is None else hidden.summary(),
        "bench_shapes": bench,
        "work": {d: [{"flops": float(task.flops(s)), "bytes": float(task.bytes_moved(s))} for s in shapes]
                 for d, shapes in bench.items()},
        "tolerance": {"atol": task.tolerance.atol, "rtol": task.tolerance.rtol},
        "bound": task.bound, "max_speedup_vs_compile": task.max_speedup_vs_compile,
        "has_params": bool(task.model is not None and task.model.problem.has_state),
    }


def sources_of(paths: list[str]) -> list[loader.Source]:
    if not paths:
        from evaluator.tasks import sources

        return list(sources().values())
    found = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            raise FileNotFoundError(f"{p}: no such file or directory")
        found.extend(loader.scan(path))
    return found


def describe(paths: list[str]) -> dict:
    rows, errors, seen = [], [], {}
    for source in sources_of(paths):
        if source.name in seen:
            errors.append({"source": str(source.path), "name": source.name,
                           "error": f"the name {source.name!r} is taken by {seen[source.name]}"})
            continue
        seen[source.name] = source.path
        try:
            rows.append(task_row(loader.load(source), source))
        except Exception as e:  # noqa: BLE001 - a broken task is reported by name, never raised past
            errors.append({"source": str(source.path), "name": source.name, "error": str(e)[:1000]})
    return {"tasks": rows, "errors": errors}
