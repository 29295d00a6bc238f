"""The trusted launcher: runs `python -m evaluator run` on an upload inside a locked-down,
throwaway box (a Docker container, or bubblewrap where no engine runs) and returns the report.

    sandbox.evaluate(source=..., task="softmax", mode="ranked", device="cpu") -> SandboxResult
    sandbox.warm_tasks(["softmax"], device="cuda")  # the judge's cache warmed (warm.py)
    sandbox.task_command(kind="describe", files={...})  # task definitions read in a box (taskcmd.py)

Infrastructure failures raise SandboxError (retry later); whatever the submission does (timeout,
out of memory, crash, forged output) comes back as a `rejected` report. See docs/sandbox.md.
"""
from __future__ import annotations

import time

from evaluator import upload_size_problem

from . import result
from .errors import SandboxError
from .limits import Limits
from .run import (BACKENDS, BOX_NAMES, MAX_UPLOAD_BYTES, TASK_NAME, SandboxResult, choose_backend,  # noqa: F401
                  evaluator_argv, make_box, run_box)  # make_box: tests and bench/ build boxes with it
from .taskcmd import BUILTIN_TASKS, task_command  # noqa: F401
from .warm import judge_cache, warm_before, warm_tasks

__all__ = ["evaluate", "warm_tasks", "warm_before", "judge_cache", "task_command", "SandboxResult",
           "SandboxError", "Limits", "choose_backend", "BACKENDS"]

def evaluate(*, source: bytes, task: str, mode: str, device: str, backend: str | None = None,
             limits: Limits | None = None, on_progress=None,
             task_files: dict[str, bytes] | None = None) -> SandboxResult:
    """`task_files`: the definition of a task the site added ({relative path: bytes}), read-only
    at /tasks in the box and named to the evaluator by EVALUATOR_TASKS_PATH; None for a built-in
    task, which the evaluator holds itself."""
    if not isinstance(source, (bytes, bytearray)):
        raise TypeError("source must be bytes")
    if not TASK_NAME.match(task or "") or mode not in result.MODES or device not in result.DEVICES:
        raise ValueError(f"bad evaluation request: task={task!r} mode={mode!r} device={device!r}")
    limits = limits or Limits.from_env()
    chosen = choose_backend(backend)
    started = time.monotonic()
    too_big = upload_size_problem(len(source))
    if too_big:  # the judge's own words for it (evaluator.check_upload), without a box
        code, reason = too_big
        report = result.rejected(task=task, mode=mode, device=device, code=code, logs="", reason=reason)
        return SandboxResult(report, "", chosen.NAME, 0.0, 0.0)

    def collect(box, outcome):
        report = result.decide(outcome, str(box.out_dir / "report.json"), task=task, mode=mode,
                               device=device, time_limit_s=limits.time_limit_s,
                               report_bytes=limits.report_bytes)
        return report, result.profile_file(report, str(box.out_dir / "profile.ncu-rep"))

    outcome, (report, profile_file) = run_box(
        chosen, source=bytes(source), device=device, limits=limits, collect=collect, on_progress=on_progress,
        task_files=task_files, tasks_path=True,
        argv_for=lambda py: evaluator_argv(py, task=task, mode=mode, device=device,
                                           time_limit_s=limits.time_limit_s))
    wall = time.monotonic() - started
    overhead = max(0.0, wall - outcome.payload_s)
    # the host's own additions to the checked report, on a copy of the typed value: the time split
    # gains the sandbox's part, and the box says which box ran it, from the host's side after the
    # box exited (whatever the report file said there is replaced; nothing inside the box chooses it)
    box = dict(outcome.box) if outcome.box else {"backend": BOX_NAMES[chosen.NAME]}
    report = report.on_host(box=box, sandbox_s=round(overhead, 3))
    return SandboxResult(report=report, logs=outcome.logs, backend=chosen.NAME,
                         overhead_s=overhead, wall_s=wall, profile_file=profile_file)
