"""The compile phase: the trusted baseline runner started (or taken from baseline_keep), eager and
torch.compile called once on every benchmark shape, each output checked against the gold answer.

Where it runs. With a cold compile cache inductor benchmarks its kernel configurations at the first
call, and a submission loading the GPU then could make the baselines pick slower ones, so the phase
runs alone, before the submission is imported. Once this task's baselines have compiled into the
judge's cache (a marker per task, device, GPU and torch / Triton version), inductor loads its
picks instead of benchmarking: on the GPU the phase then runs in a thread of the judge beside the
correctness phase (`Overlap`) instead of before it, which takes 13-17 s of compile off a warm
evaluation on an H200. Nothing of either phase is timed, and the timing waits for both.
EVALUATOR_OVERLAP_COMPILE=1 overlaps on any device (the tests' way to run this path on the CPU),
=0 never.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time

from evaluator.judge import baseline
from evaluator.judge import baseline_keep
from evaluator.judge import calls
from evaluator.judge.link import Link
from evaluator.common.checks import Failure
from evaluator.common.shapes import fmt

BASELINES = ("eager", "compile")


@dataclasses.dataclass(slots=True)
class Baseline:
    """The trusted baseline runner of an evaluation (`start_runner`) and its work directory."""
    runner: baseline.Runner
    work: baseline.Workdir
    key: tuple  # what baseline_keep keeps it under
    loaded: bool  # taken from baseline_keep: it has said hello and loaded its source already
    started: float  # monotonic time the compile phase began
    idle: bool = False  # between two requests: it may be kept for the next evaluation

    def link(self, fn: str | None = None) -> Link:
        """The judge's link to the runner; `fn`: the baseline its calls run."""
        return Link(self.runner.send, self.runner.expect, self.work, fn=fn)


def run(ev) -> None:
    """The compile phase, alone (start_runner, then compile_baselines)."""
    ev.base = start_runner(ev.task_ref, ev.device, ev.setup.cache)
    compile_baselines(ev, ev.setup.caller)


def start_runner(task_name: str, device: str, cache: str) -> Baseline:
    """The trusted baseline runner (its source is generated from the task name alone; the
    submission never reaches it), kept or new. From the judge's main thread: a runner asks for
    the parent-death signal, which Linux sends when the thread that started it ends."""
    started = time.monotonic()
    key = baseline_keep.key(task_name, device, cache)
    kept = baseline_keep.take(key, device)
    if kept:
        runner, work = kept
        return Baseline(runner=runner, work=work, key=key, loaded=True, started=started)
    work = baseline.Workdir(task_name)
    try:
        runner = baseline.Runner(work, task=task_name, device=device, cache=cache)
    except BaseException:
        work.remove()
        raise
    return Baseline(runner=runner, work=work, key=key, loaded=False, started=started)


def compile_baselines(ev, caller) -> None:
    """Compile torch.compile on every benchmark shape in the baseline runner (ev.base), check one
    output of each against the gold answer, and leave the runner stopped until it is timed.
    `caller`: the calls.Caller to use (a thread of its own needs its own staging memory)."""
    base = ev.base
    b = base.runner
    if not base.loaded:
        base.link().hello(ev.deadline)
        base.link().load(ev.deadline)
    for i, shape in enumerate(ev.setup.bench_shapes):
        for fn in BASELINES:
            link = base.link(fn)
            try:
                caller.call(link, shape, ev.derive(ev.master, "warm", i, fn),
                            f"{fn} baseline on {fmt(shape)}", first=True)
            except Failure as f:
                raise b.error(f"{fn} on {fmt(shape)}: {f.problems[0][1]}") from None
    b.stop()
    base.idle = True
    ev.report["phases"]["compile_s"] = time.monotonic() - base.started
    _mark_warm(ev)


def _marker(ev) -> str:
    versions = ev.report.get("versions", {})
    key = "-".join(str(v) for v in (ev.task_name, ev.device, ev.report.get("gpu_name", ""),
                                    versions.get("torch", ""), versions.get("triton", "")))
    return os.path.join(ev.setup.cache, "compiled", "".join(c if c.isalnum() or c in "-." else "_" for c in key))


def _mark_warm(ev) -> None:
    path = _marker(ev)
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        with open(path, "w"):
            pass
    except OSError:
        pass  # the next evaluation compiles alone again: slower, never wrong


def is_warm(ev) -> bool:
    """Whether this task's baselines compiled into the judge's cache before (the marker)."""
    return os.path.exists(_marker(ev))


def overlaps(ev) -> bool:
    """Whether this evaluation's compile phase runs beside its correctness phase."""
    wanted = os.environ.get("EVALUATOR_OVERLAP_COMPILE", "")
    if wanted in ("0", "1"):
        return wanted == "1"
    return ev.device == "cuda" and is_warm(ev)


class Overlap:
    """`compile_baselines` in a thread of the judge, with a calls.Caller of its own; the runner
    itself is started here, in the judge's main thread. `join` before anything needs the baselines;
    `cancel` when the evaluation ends early (it kills the baseline runner, which ends the
    thread's wait on it)."""

    def __init__(self, ev):
        self.ev, self.error = ev, None
        ev.base = start_runner(ev.task_ref, ev.device, ev.setup.cache)
        caller = calls.Caller(ev.setup.task, ev.device, ev.derive(ev.master, "baseline calls"))
        self.thread = threading.Thread(target=self._run, args=(caller,), name="baseline-compile", daemon=True)
        self.thread.start()

    def _run(self, caller) -> None:
        try:
            compile_baselines(self.ev, caller)
        except BaseException as e:  # noqa: BLE001 - re-raised by join, in the judge's thread
            self.error = e

    def join(self) -> float:
        """Wait for the compile; re-raise what ended it. Returns the seconds waited."""
        t = time.monotonic()
        self.thread.join(max(self.ev.deadline - t, 0.0) + 5.0)
        if self.thread.is_alive():
            self.cancel()
            raise RuntimeError("the baseline runner's compile did not end within the evaluation's time")
        if self.error is not None:
            raise self.error
        return time.monotonic() - t

    def cancel(self) -> None:
        if self.thread.is_alive():
            self.ev.base.runner.kill()
            self.thread.join(30.0)
