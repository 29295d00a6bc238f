"""A task as a folder: `task.toml` (what the site shows and the judge needs to know) and
`reference.py` (the reference and the input maker), with `solutions/correct/` and
`solutions/wrong/` that the test suite runs as data. docs/tasks.md describes every field.

The manifest is TOML because Python reads it with the standard library (tomllib): the evaluator
runs in the box with torch and triton only.
"""
from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

import torch

from evaluator.tasks import hidden as hidden_shapes
from evaluator.tasks.base import FUNCTIONS, Task, Tolerance

REQUIRED = ("name", "title", "description", "signature", "inputs", "output_dtype")
OPTIONAL = ("bound", "max_speedup_vs_compile", "tolerance", "shapes", "hidden")
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64, "int32": torch.int32, "int64": torch.int64, "bool": torch.bool}


class TaskError(ValueError):
    """A task definition that cannot be loaded; the message names the file and the field."""


def is_task_folder(path: Path) -> bool:
    return (path / "task.toml").is_file()


def _shapes(value, where: str, *, allow_empty: bool = False) -> tuple[dict, ...]:
    if not isinstance(value, list) or (not value and not allow_empty):
        raise TaskError(f"{where}: a list of shapes is required")
    for s in value:
        if not isinstance(s, dict) or not s or not all(isinstance(v, int) and v >= 1 for v in s.values()):
            raise TaskError(f"{where}: each shape is a table of positive integers, not {s!r}")
    return tuple(dict(s) for s in value)


def _import(path: Path, name: str):
    """reference.py as a module of its own (evaluator_task_<name>): trusted staff code, imported
    only by the evaluator's processes in the box."""
    return import_file(path, f"evaluator_task_{name}")


def import_file(path: Path, module_name: str):
    """A task's file imported once per process as `module_name` (the loaders of both formats)."""
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


def load(folder: Path, track: str = "builtin") -> Task:
    manifest = folder / "task.toml"
    where = str(manifest)
    try:
        data = tomllib.loads(manifest.read_text())
    except tomllib.TOMLDecodeError as e:
        raise TaskError(f"{where}: not TOML: {e}") from None
    missing = [k for k in REQUIRED if k not in data]
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if missing or unknown:
        raise TaskError(f"{where}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown keys {', '.join(unknown)}"] if unknown else [])))
    name = data["name"]
    if not isinstance(name, str) or not name.replace("_", "").isalnum() or not name.islower():
        raise TaskError(f"{where}: name must be lowercase letters, digits and '_'")
    if data["output_dtype"] not in DTYPES:
        raise TaskError(f"{where}: output_dtype must be one of {', '.join(DTYPES)}")
    shapes = data.get("shapes", {})
    tolerance = data.get("tolerance", {})
    if not isinstance(tolerance.get("atol"), (int, float)) or not isinstance(tolerance.get("rtol"), (int, float)):
        raise TaskError(f"{where}: [tolerance] needs atol and rtol")
    reference_py = folder / "reference.py"
    if not reference_py.is_file():
        raise TaskError(f"{folder}: no reference.py")
    module = _import(reference_py, name)
    functions = {}
    for fn in FUNCTIONS:
        value = getattr(module, fn, None)
        if fn == "reference_fp32" and value is None:
            value = _upcast(module.reference)
        if not callable(value):
            raise TaskError(f"{reference_py}: defines no function {fn}")
        functions[fn] = value
    test = _shapes(shapes.get("test"), f"{where}: shapes.test")
    order = tuple(test[0])
    try:
        hidden = hidden_shapes.from_table(data["hidden"], f"{where}: [hidden]", order) if "hidden" in data else None
    except ValueError as e:
        raise TaskError(str(e)) from None
    bound = data.get("bound", "memory")
    if bound not in ("memory", "compute"):
        raise TaskError(f"{where}: bound is memory or compute")
    task = Task(
        name=name, title=data["title"], description=data["description"].strip(),
        signature=data["signature"].strip("\n"), input_names=tuple(data["inputs"]),
        output_dtype=DTYPES[data["output_dtype"]], test_shapes=test,
        bench_shapes_gpu=_shapes(shapes.get("bench_gpu"), f"{where}: shapes.bench_gpu"),
        bench_shapes_cpu=_shapes(shapes.get("bench_cpu"), f"{where}: shapes.bench_cpu"),
        tolerance=Tolerance(atol=float(tolerance["atol"]), rtol=float(tolerance["rtol"])),
        max_speedup_vs_compile=float(data.get("max_speedup_vs_compile", 2.0)), bound=bound,
        hidden=hidden, source=str(folder), format="folder", track=track,
        reference_text=reference_py.read_text(), **functions)
    module.TASK = task
    return task


def reference_module(name: str):
    """A folder task's reference.py as loaded, with its Task as `TASK` (tests reach its helpers)."""
    from evaluator.tasks import get_task

    get_task(name)
    return sys.modules[f"evaluator_task_{name}"]


def _upcast(reference):
    def reference_fp32(*inputs):
        return reference(*(x.float() if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs))
    return reference_fp32
