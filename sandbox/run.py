"""One box run: the backend chosen, the box made for an upload and its command, run with the
progress file watched, its output collected and the box removed (`run_box`). sandbox.evaluate
and the warm-up (warm.py) both run their boxes through here.
"""
from __future__ import annotations

import dataclasses
import os
import re
import threading
import time

from evaluator import MAX_BYTES, Report

from . import box as _box
from . import bwrap_backend, docker_backend, gpu, image
from .errors import SandboxError
from .limits import Limits

BACKENDS = {"docker": docker_backend, "bwrap": bwrap_backend}
# the report's box.backend for each backend
BOX_NAMES = {"docker": "docker", "bwrap": "bubblewrap"}
# the one limit on an upload (evaluator/contract/upload.py), checked here before a box is made
MAX_UPLOAD_BYTES = MAX_BYTES
# a KernelBench-style problem's name starts with its number (`19_relu`)
TASK_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")


@dataclasses.dataclass
class SandboxResult:
    report: Report  # evaluator.Report: checked at the trust boundary (result.validate)
    logs: str  # the box's stdout/stderr, truncated to Limits.log_bytes
    backend: str
    overhead_s: float  # everything but the evaluation: create, start, exit, read result, remove
    wall_s: float
    # profile mode: the .ncu-rep the judge wrote (the submission's claim, size-capped), else None
    profile_file: bytes | None = None


def choose_backend(name: str | None = None):
    """SANDBOX_BACKEND=docker|bwrap, else Docker when its engine answers, else bwrap, else refuse."""
    name = (name or os.environ.get("SANDBOX_BACKEND", "")).strip() or None
    if name is not None:
        if name not in BACKENDS:
            raise SandboxError(f"unknown sandbox backend {name!r}: use docker or bwrap")
        reason = BACKENDS[name].unavailable_reason()
        if reason:
            raise SandboxError(f"sandbox backend {name} is not usable: {reason}")
        return BACKENDS[name]
    reasons = []
    for backend in (docker_backend, bwrap_backend):
        reason = backend.unavailable_reason()
        if reason is None:
            return backend
        reasons.append(f"{backend.NAME}: {reason}")
    raise SandboxError("no sandbox is available, and submissions never run outside one. Install "
                       "Docker (apt-get install docker.io; start dockerd) or bubblewrap (apt-get "
                       "install bubblewrap; run the worker as root). " + "; ".join(reasons))


def evaluator_argv(python: str, *, task: str, mode: str, device: str, time_limit_s: float) -> list[str]:
    # the judge gets the same limit: it paces itself by it, and the box's clock (started
    # earlier) still ends the run first when it hangs
    argv = [python, "-m", "evaluator", "run", _box.SUBMISSION_FILE, "--task", task,
            "--device", device, "--mode", mode, "--json", _box.REPORT_FILE,
            "--time-limit", f"{time_limit_s:g}"]
    if mode == "profile":
        argv += ["--profile-out", _box.PROFILE_FILE]
    return argv


def make_box(backend, *, argv_for, source: bytes, device: str, limits: Limits,
             task_files: dict[str, bytes] | None = None, tasks_path: bool = False) -> _box.Box:
    """The box for one run; `argv_for(python)` gives the command (the evaluator, or a probe).
    `task_files` ({relative path: bytes}, checked by box.check_task_files) are the site's task
    definitions, read-only at /tasks; `tasks_path` names that directory to the evaluator as
    EVALUATOR_TASKS_PATH, where it looks for a task it does not hold itself."""
    if backend is docker_backend:
        runtime = image.docker_runtime(docker_backend.client())
    else:
        runtime = image.host_runtime()
    gpu_plan = None
    if device == "cuda":
        index = limits.gpu_index if limits.gpu_index is not None else 0
        nvidia = backend is docker_backend and docker_backend.nvidia_runtime()
        gpu_plan = gpu.plan(index, runtime_binds=runtime.binds, nvidia_runtime=nvidia)
    path = runtime.path or os.path.dirname(runtime.python)
    env = _box.box_env(device=device, limits=limits, extra_path=path)
    task_files = _box.check_task_files(task_files or {})
    if tasks_path and task_files:
        env["EVALUATOR_TASKS_PATH"] = _box.TASKS_DIR
    cache = gpu.judge_cache(device)
    if cache:
        # the judge's compile cache (torch.compile baselines, GPU ceilings) kept across runs:
        # 0700 root, so the runner (uid 65534) can neither read nor plant anything in it
        os.makedirs(cache, mode=0o700, exist_ok=True)
        os.chmod(cache, 0o700)
        runtime = dataclasses.replace(
            runtime, binds=runtime.binds + (_box.Bind(cache, _box.JUDGE_CACHE, read_only=False),))
        env["EVALUATOR_JUDGE_CACHE"] = _box.JUDGE_CACHE
    library_path = [runtime.library_path] if runtime.library_path else []
    if gpu_plan and any(b.target.startswith(gpu.LIBS_INSIDE + "/") for b in gpu_plan.lib_binds):
        library_path.append(gpu.LIBS_INSIDE)
    if library_path:
        env["LD_LIBRARY_PATH"] = ":".join(library_path)
    # + slack for creating and removing the box; cleanup leaves it alone until then
    deadline = time.time() + limits.time_limit_s + 60
    workdir = _box.make_workdir(source, deadline=deadline, task_files=task_files)
    return _box.Box(argv=argv_for(runtime.python), env=env, runtime=runtime, workdir=workdir,
                    limits=limits, gpu=gpu_plan, run_id=_box.new_run_id(deadline), task_files=task_files)


class _ProgressWatch:
    """Reads the judge's progress file in the box's output directory twice a second and hands each
    new line to `on_progress` (the judge writes it; the runner's user cannot)."""

    def __init__(self, path, on_progress):
        self.path, self.on_progress = str(path), on_progress
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="box-progress", daemon=True)
        self.thread.start()

    def _run(self):
        from evaluator import progress_latest

        last = None
        while not self.stop.wait(0.5):
            line = progress_latest(self.path)
            if line and line != last:
                last = line
                try:
                    self.on_progress(line)
                except Exception:  # the watcher's reader failing must not end the evaluation
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)


def run_box(backend, *, argv_for, source: bytes, device: str, limits: Limits, collect, on_progress=None,
            task_files: dict[str, bytes] | None = None, tasks_path: bool = False):
    """One box run, the GPU checked free before and after it: (outcome, collect(box, outcome)),
    `collect` reading what the box wrote before its work directory goes; `on_progress(line)` gets
    the judge's progress lines while it runs."""
    index = limits.gpu_index if limits.gpu_index is not None else 0
    if device == "cuda":
        gpu.check_in_service(index)
        gpu.ensure_idle(index, "before")
    box = make_box(backend, argv_for=argv_for, source=source, device=device, limits=limits,
                   task_files=task_files, tasks_path=tasks_path)
    watch = _ProgressWatch(box.out_dir / "progress.jsonl", on_progress) if on_progress else None
    try:
        outcome = backend.run(box)
        collected = collect(box, outcome)
    finally:
        if watch:
            watch.close()
        _box.remove_workdir(box.workdir)
    if device == "cuda":
        gpu.ensure_idle(index, "after")
    return outcome, collected
