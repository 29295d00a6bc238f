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

import os
import threading
import time

from evaluator.judge import baseline
from evaluator.judge import baseline_keep
from evaluator.judge import calls
from evaluator.common.checks import Failure
from evaluator.common.shapes import fmt

BASELINES = ("eager", "compile")


def run(ev) -> None:
    """The compile phase, alone (start_runner, then compile_baselines)."""
    start_runner(ev)
    compile_baselines(ev, ev.caller)


def start_runner(ev) -> None:
    """The trusted baseline runner (its source is generated from the task name alone; the
    submission never reaches it), kept or new. From the judge's main thread: a runner asks for
    the parent-death signal, which Linux sends when the thread that started it ends."""
    ev.compile_started = time.monotonic()
    ev.baseline_key = baseline_keep.key(ev.task_name, ev.device, ev.cache)
    kept = baseline_keep.take(ev.baseline_key, ev.device)
    if kept:
        ev.baseline, ev.base_work = kept
        ev.baseline_loaded = True
    else:
        ev.base_work = baseline.Workdir(ev.task_name)
        ev.baseline = baseline.Runner(ev.base_work, task=ev.task_name, device=ev.device, cache=ev.cache)
        ev.baseline_loaded = False


def compile_baselines(ev, caller) -> None:
    """Compile torch.compile on every benchmark shape in the baseline runner, check one output of
    each against the gold answer, and leave the runner stopped until it is timed. `caller`: the
    calls.Caller to use (a thread of its own needs its own staging memory)."""
    b = ev.baseline
    if not ev.baseline_loaded:
        b.expect("hello", ev.deadline)
        b.send({"op": "load"})
        b.expect("ready", ev.deadline)
    for i, shape in enumerate(ev.bench_shapes):
        for fn in BASELINES:
            link = calls.Link(b.send, b.expect, ev.base_work, fn=fn)
            try:
                caller.call(link, shape, ev.derive(ev.master, "warm", i, fn),
                            f"{fn} baseline on {fmt(shape)}", first=True)
            except Failure as f:
                raise b.error(f"{fn} on {fmt(shape)}: {f.problems[0][1]}") from None
    b.stop()
    ev.baseline_idle = True  # between two requests: it may be kept for the next evaluation
    ev.report["phases"]["compile_s"] = time.monotonic() - ev.compile_started
    _mark_warm(ev)


def _marker(ev) -> str:
    versions = ev.report.get("versions", {})
    key = "-".join(str(v) for v in (ev.task_name, ev.device, ev.report.get("gpu_name", ""),
                                    versions.get("torch", ""), versions.get("triton", "")))
    return os.path.join(ev.cache, "compiled", "".join(c if c.isalnum() or c in "-." else "_" for c in key))


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
        start_runner(ev)
        caller = calls.Caller(ev.task, ev.device, ev.derive(ev.master, "baseline calls"))
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
            self.ev.baseline.kill()
            self.thread.join(30.0)
