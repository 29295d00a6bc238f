"""Warming the judge's cache (`judge_cache`) inside a box: `python -m evaluator warm`
compiles a task's baselines into it with no submission anywhere (evaluator/judge/warm.py), so that no
ranked evaluation of that task compiles them cold. The box is the evaluations' own (image, binds,
GPU, limits), so the cache it fills is the one their judges read, keyed by the same GPU and
versions.

`warm_before(task, device, ...)` is what a worker calls before each GPU evaluation: the first
evaluation of a task in a worker's process warms it, the others do nothing. Where the judge's
cache already holds the task's mark for the host's torch and Triton (the launcher warmed it
before the worker started, or an earlier worker did), no box is started for it: a box that only
finds the cache warm still costs its judge's start, 4-5 s of a first evaluation on an H200.
The judge checks the mark itself before it overlaps its compile, so a mark read wrongly here
only ever costs time. A warm-up that fails is logged and forgotten: that evaluation compiles
alone, as with a cold cache (slower, never wrong).
"""
from __future__ import annotations

import json
import logging
import os
import threading

from .box import REPORT_FILE
from .gpu import judge_cache  # noqa: F401 (sandbox.judge_cache)
from .run import TASK_NAME, choose_backend, run_box
from .errors import SandboxError
from .limits import Limits

log = logging.getLogger(__name__)

_warmed: set[tuple[str, str, str]] = set()  # (task, device, cache) warmed by this process
_lock = threading.Lock()


def marked_warm(task: str, device: str, cache: str) -> bool:
    """Whether `cache` holds a mark of the judge's that `task`'s baselines compiled on `device`
    (evaluator/judge/baseline_compile.py names it task-device-GPU-torch-triton). The versions are not
    compared: the launcher warms every task at each start, and a mark of another install only
    means that the judge, which compares them, compiles alone once."""
    try:
        names = os.listdir(os.path.join(cache, "compiled"))
    except OSError:
        return False
    return any(n.startswith(f"{task}-{device}-") for n in names)


def warm_tasks(tasks: list[str], *, device: str, backend: str | None = None,
               limits: Limits | None = None, task_files: dict[str, bytes] | None = None) -> list[dict]:
    """Run `python -m evaluator warm` for `tasks` in one box; its results, one dict per task
    (evaluator/judge/warm.py: "state" is "compiled", "already warm", "no judge cache" or "failed").
    `task_files`: the definitions of site-added tasks among them, as for sandbox.evaluate."""
    if not judge_cache(device):
        return [{"task": t, "device": device, "state": "no judge cache", "seconds": 0.0} for t in tasks]
    if not tasks or not all(TASK_NAME.match(t) for t in tasks) or device not in ("cpu", "cuda"):
        raise ValueError(f"bad warm-up request: tasks={tasks!r} device={device!r}")
    limits = limits or Limits.from_env()
    chosen = choose_backend(backend)

    def argv_for(python: str) -> list[str]:
        argv = [python, "-m", "evaluator", "warm", "--device", device, "--json", REPORT_FILE]
        for t in tasks:
            argv += ["--task", t]
        return argv

    def collect(box, outcome):
        try:
            with open(box.out_dir / "report.json") as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    outcome, results = run_box(chosen, argv_for=argv_for, source=b"", device=device, limits=limits,
                               collect=collect, task_files=task_files, tasks_path=True)
    if not isinstance(results, list) or len(results) != len(tasks):
        why = "it ran out of time" if outcome.timed_out else f"exit status {outcome.exit_code}"
        raise SandboxError(f"the warm-up box wrote no results ({why}): {outcome.logs[-2000:]}")
    return results


def warm_before(task: str, *, device: str, backend: str | None = None, limits: Limits | None = None,
                task_files: dict[str, bytes] | None = None) -> dict | None:
    """Before a ranked GPU evaluation of `task`: warm it once per process and judge cache. None
    when there is nothing to do (a CPU evaluation, no judge cache, warmed before)."""
    key = (task, device, judge_cache(device))
    if device != "cuda" or not key[2]:
        return None
    with _lock:
        if key in _warmed:
            return None
        if marked_warm(task, device, key[2]):
            _warmed.add(key)
            return {"task": task, "device": device, "state": "already warm", "seconds": 0.0}
        try:
            result = warm_tasks([task], device=device, backend=backend, limits=limits,
                                task_files=task_files)[0]
        except (SandboxError, OSError, ValueError) as exc:
            log.warning("warming the judge cache for %s failed: %s", task, exc)
            return {"task": task, "device": device, "state": "failed", "error": str(exc)[:2000]}
        if result.get("state") in ("compiled", "already warm"):
            _warmed.add(key)
        else:
            log.warning("warming the judge cache for %s: %s", task, result)
        return result
