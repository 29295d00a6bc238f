"""The ruler: each task's own reference submitted as a kernel must read 1.00 against eager, and
torch.compile submitted as a kernel must read 1.00 against torch.compile. Both go through the
full evaluation (runner process, checks, interleaved timing), exactly like a submission.

On a GPU each task is warmed first (warm.py), so that neither reading follows a cold compile, and
the two evaluations run without compute-sanitizer: the sources are the evaluator's own, the
sanitizer runs after the timing and reads no time, and without it a task takes about 30 s less.
This is the procedure whose readings docs/bench/judge-clock.md reports."""
from __future__ import annotations

import contextlib
import os

from evaluator.contract.report import REJECT_CODES

REFERENCE_SOURCE = """\
from evaluator.tasks import get_task

_task = get_task({name!r})
custom_kernel = _task.reference
if _task.model_class is not None:  # a problem with parameters: the judge loads them into ModelNew
    ModelNew = _task.model_class
"""

# torch.compile only on the benchmark shapes (the test shapes would each cost a recompile); the
# dispatch on input shapes costs a few microseconds per call
COMPILE_SOURCE = """\
import torch
from evaluator.tasks import get_task

_task = get_task({name!r})
_compiled = torch.compile(_task.reference, dynamic=False)
_BENCH = {keys!r}


def custom_kernel(*inputs):
    key = tuple(tuple(x.shape) for x in inputs)
    return (_compiled if key in _BENCH else _task.reference)(*inputs)


if _task.model_class is not None:
    _forward = torch.compile(_task.model_class.forward, dynamic=False)

    class ModelNew(_task.model_class):
        def forward(self, *inputs):
            key = tuple(tuple(x.shape) for x in inputs)
            return (_forward(self, *inputs) if key in _BENCH else super().forward(*inputs))
"""


def sources(name: str, device: str) -> tuple[str, str]:
    from evaluator.common.shapes import bench_shapes
    from evaluator.tasks import get_task

    task = get_task(name)
    keys = set()
    for shape in bench_shapes(task, device):
        keys.add(tuple(tuple(x.shape) for x in task.make_inputs(shape, 0, "cpu")))
    return REFERENCE_SOURCE.format(name=name), COMPILE_SOURCE.format(name=name, keys=keys)


def calibrate(names, *, device: str, time_limit_s: float = 600, progress=None, on_row=None) -> list[dict]:
    """One row per task. `on_row(rows)` is called after each task, so a run cut short (a time
    limit on the GPU host) still leaves the tasks it finished."""
    from evaluator.api import evaluate_source

    rows = []
    for name in names:
        ref_src, compile_src = sources(name, device)
        if device == "cuda":
            from evaluator.judge.warm import warm

            if progress:
                progress(f"calibrating {name}: warming the judge's cache")
            warm(name, device, time_limit_s=time_limit_s)
        if progress:
            progress(f"calibrating {name}: reference as a kernel")
        with _no_sanitizer():
            ref = evaluate_source(ref_src, task=name, device=device, mode="ranked", time_limit_s=time_limit_s)
            if progress:
                progress(f"calibrating {name}: torch.compile as a kernel")
            comp = evaluate_source(compile_src, task=name, device=device, mode="ranked", time_limit_s=time_limit_s)
        rows.append({
            "task": name,
            "reference_vs_eager": ref.get("speedup_vs_eager"),
            "compile_vs_compile": comp.get("speedup_vs_compile"),
            "reference_shapes": ref.get("shapes", []),
            "compile_shapes": comp.get("shapes", []),
            # flags are expected here (no Triton kernel, imports the evaluator); failures are not
            "errors": [r for r, c in zip(ref["reasons"] + comp["reasons"],
                                         ref["reason_codes"] + comp["reason_codes"])
                       if c in REJECT_CODES],
            "codes": {"reference": ref["reason_codes"], "compile": comp["reason_codes"]},
            # what raised each flag, so that an unexpected one (extra_threads from torch.compile
            # as the candidate, on the H200) can be told from the expected ones afterwards
            "reasons": {"reference": [r[:300] for r in ref["reasons"]][:8],
                        "compile": [r[:300] for r in comp["reasons"]][:8]},
        })
        if progress:
            progress(table(rows[-1:], device).splitlines()[-1])
        if on_row:
            on_row(rows)
    return rows


@contextlib.contextmanager
def _no_sanitizer():
    before = os.environ.get("EVALUATOR_SANITIZE")
    os.environ["EVALUATOR_SANITIZE"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("EVALUATOR_SANITIZE", None)
        else:
            os.environ["EVALUATOR_SANITIZE"] = before


def table(rows, device: str) -> str:
    lines = [f"calibration on {device} (both columns should read 1.00)",
             f"{'task':22s} {'reference vs eager':>19s} {'compile vs compile':>19s}"]
    for row in rows:
        a, b = row["reference_vs_eager"], row["compile_vs_compile"]
        lines.append(f"{row['task']:22s} {_x(a):>19s} {_x(b):>19s}")
        for err in row["errors"]:
            lines.append(f"    ! {err}")
    return "\n".join(lines)


def _x(v) -> str:
    return "error" if v is None else f"{v:.2f}"
