"""Timed batches: the only times that enter a score, all read on the judge's own clock.

One batch of one side (the candidate's runner, or the trusted baseline runner as eager or
torch.compile):

  1. the runner is stopped (SIGSTOP, every thread); the side's checker writes the inputs of K calls
     into memory the runner has mapped (checker.py), fresh seeds for every call;
  2. the judge starts its clock, sends `batch` and continues the runner, which makes the K calls
     back to back, synchronizes and answers with where its outputs lie;
  3. the judge stops the runner's process group and (GPU) has the checker read a secret sample of
     every output, or (CPU) waits until every thread of the runner has stopped: the clock stops;
  4. the checker verifies every input, every output against its gold answer, and that no sampled
     word changed after the sample (work still running after the window is a deferred write).

The window holds, besides the K calls, a fixed overhead (pipes, waking the runner, the final
synchronize, the sample). The trusted baseline runner times its own calls with CUDA events (the CPU
clock on the CPU); window minus that time is the overhead of a batch. On the GPU each baseline
side's median overhead is taken off its own windows, and the candidate's windows lose the
overhead of a line through the two baseline sides at the candidate's window length
(`candidate_overhead`); on the CPU one median over all baseline batches is taken off every side.
Then each window is divided by K. Nothing the candidate's process reports is used. Both sides'
checkers time how long writing the inputs took on their own device clock: a kernel the candidate
left running while it was stopped shares the GPU with the checker and shows there
(`extra_threads`).
"""
from __future__ import annotations

import dataclasses
import math
import os
import signal
import time

import torch

from evaluator.common import checks
from evaluator.common.checks import Failure
from evaluator.judge.link import Link

# a batch's calls should last about this long, by the trusted eager baseline's own clock: host
# jitter (tens of microseconds on the GPU, milliseconds on a loaded CPU) stays well under 0.5 %
TARGET_MS = {"cuda": 20.0, "cpu": 15.0, "quick": 30.0}
SIZING_CALLS = {"cuda": 4, "cpu": 2, "quick": 2}  # the eager batch that measures a call first
MAX_CALLS = {"cuda": 512, "cpu": 128, "quick": 64}
MEM_CAP_BYTES = {"cuda": 48 << 30, "cpu": 256 << 20}  # inputs and outputs of one side's batch
CPU_BATCH_MS = {"cpu": 1500.0, "quick": 300.0}  # a CPU candidate's batch, at most about this long
MEM_FRACTION = 0.3  # on the GPU, at most this share of the device's memory as well
L2_MULTIPLE = 3  # the inputs of a batch together exceed the L2 this many times over
SPIN_S = 2.0  # inside a GPU window, poll a pipe this long before sleeping on it (channel.recv)


def _gpu_sizing() -> tuple[float, float]:
    """(target ms, memory fraction) of a GPU batch. The operator may raise both
    (EVALUATOR_BATCH_MS, EVALUATOR_BATCH_MEM_FRACTION) to measure how the clock's spread shrinks
    with K (bench/judge_clock.py's `ab` step); the memory cap in bytes still holds."""
    try:
        target = float(os.environ.get("EVALUATOR_BATCH_MS", TARGET_MS["cuda"]))
        share = float(os.environ.get("EVALUATOR_BATCH_MEM_FRACTION", MEM_FRACTION))
    except ValueError:
        return TARGET_MS["cuda"], MEM_FRACTION
    return min(max(target, 1.0), 200.0), min(max(share, 0.05), 0.45)


@dataclasses.dataclass
class Timed:
    """One batch as the judge saw it."""
    side: str
    window_ms: float  # the judge's clock, `batch` sent to the runner frozen and its outputs sampled
    device_ms: float  # the runner's own clock around its calls (trusted from the baseline only)
    gen_ms: float  # the checker's own clock while it wrote the inputs
    done_ms: float = 0.0  # the judge's clock from `batch` to the runner's answer (part of window_ms)
    # for the operator's diagnostics (EVALUATOR_SAMPLES_DIR), never for a score: ms from the
    # window's start on the machine's monotonic clock, the judge's own marks and those the runner
    # and the checker report
    marks: dict = dataclasses.field(default_factory=dict)
    fresh: bool = True  # the checker wrote new inputs for this batch (gen_ms is their writing)
    calls: int = 0
    # GPU, every side's batches: the checker's probe kernel (Checker.probe) right before the window
    # and right after it, ms; 0 where none ran (touched.py reads them)
    probe_before_ms: float = 0.0
    probe_after_ms: float = 0.0
    started_s: float = 0.0  # the window's start on the machine's monotonic clock (diagnostics only)
    # how the checker's write of this batch's inputs went on its own clocks (checker.WriteReadings;
    # diagnostics only, empty for a refresh)
    write: dict = dataclasses.field(default_factory=dict)


def calls_per_batch(device: str, *, eager_ms: float, cand_ms: float | None, slot_bytes: int, out_bytes: int,
                    quick: bool = False) -> tuple[int, int]:
    """(calls per baseline batch, calls per candidate batch).

    The baselines get enough calls for TARGET_MS at the eager baseline's time per call (measured
    by the trusted baseline runner), within the memory cap, and on the GPU enough inputs to exceed
    the L2 several times over (no flush is needed inside a batch). On the GPU (`cand_ms` None) the candidate gets
    the same number: a candidate that could shrink its own batches by being slow when sized would
    multiply any error in the overhead taken off each batch. On the CPU a kernel under the Triton
    interpreter runs hundreds of times slower than eager, so its batches are cut to CPU_BATCH_MS
    by its own (judge-timed) sizing batch; CPU timings are a try-out and say so."""
    kind = "quick" if quick else device
    target, share = _gpu_sizing() if kind == "cuda" else (TARGET_MS[kind], MEM_FRACTION)
    k = math.ceil(target / max(eager_ms, 1e-3))
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or (50 << 20)
        k = max(k, math.ceil(L2_MULTIPLE * l2 / max(slot_bytes, 1)))
        memory = min(MEM_CAP_BYTES["cuda"], share * props.total_memory)
    else:
        memory = MEM_CAP_BYTES["cpu"]
    k = min(max(k, SIZING_CALLS[kind]), MAX_CALLS[kind])
    k = max(1, min(k, int(memory // max(slot_bytes + out_bytes, 1))))
    if device == "cuda" or cand_ms is None:
        return k, k
    return k, max(SIZING_CALLS[kind], min(k, int(CPU_BATCH_MS[kind] // max(cand_ms, 1e-3))))


# ---- one side, one batch -------------------------------------------------------------------

class Side:
    """A runner and its checker. `link`: the judge's link to that runner (link.Link: its work
    directory, the baseline's function, channel functions that raise Failure for the candidate
    and BaselineError for the baseline)."""

    def __init__(self, name: str, *, runner, link: Link, checker):
        self.name, self.runner, self.link, self.checker = name, runner, link, checker
        self.work = link.work

    def _pids(self) -> list[int]:
        """The runner and the process that imports the submission (its PID namespace's init, when
        it made one): the processes whose threads the window waits for. Any other process of the
        tree is stopped by Runner.stop after the window."""
        if not getattr(self, "pids", None):
            self.pids = sorted({self.runner.pid, self.runner.submission_pid()})
        return self.pids

    def map_inputs(self, message: dict, plan: dict, slots: int, deadline: float) -> None:
        self.runner.cont()
        try:
            self.link.inputs({**message, "layout": plan["layout"], "slot_bytes": plan["slot_bytes"],
                              "slots": slots}, deadline)
        finally:
            self.runner.stop()

    def batch(self, seeds, *, device: str, out_bytes: int, deadline: float, where: str,
              check: bool = True, fresh: bool = True) -> Timed:
        """One timed batch (the runner stopped on entry and on return). `check=False` skips the
        full comparison of the outputs with their gold answers: for the trusted baselines after
        their first batch of a shape, whose outputs are the reference's own. `fresh=False` runs
        a trusted baseline again on the inputs its checker last wrote (`seeds` unused)."""
        gen_ms = self.checker.fill(seeds) if fresh else self.checker.refresh()
        # every window is bracketed by the probe (touched.py): the one after the write, and one
        # once the window has ended. A baseline's show work beside its window; the candidate's
        # show a kernel its own runner left resident while stopped (one that could read the next
        # inputs as they are written)
        probed = device == "cuda"
        probe_before = self.checker.last_probe_ms if probed else 0.0
        size = self.work.ensure_buffer(out_bytes * len(seeds)) if device != "cuda" else 0
        t0, m0 = time.perf_counter(), time.monotonic()
        self.link.batch(len(seeds), size)
        _signal_group(self.runner, signal.SIGCONT)
        marks = {"cont": time.monotonic()}
        if device == "cuda":
            done, answered, sampled = self._gpu_window(deadline, marks)
        else:
            done = self.link.batch_done(deadline)
            answered = time.perf_counter()
            marks["answered"] = time.monotonic()
            _signal_group(self.runner, signal.SIGSTOP)
            marks["stopped"] = time.monotonic()
            # a stopped process writes nothing: once its threads are stopped the outputs are final
            self.runner.wait_stopped(self._pids())
            sampled = {}
        window = (time.perf_counter() - t0) * 1e3
        marks["end"] = time.monotonic()
        self.runner.stop()
        probe_after = self.checker.probe() if probed else 0.0
        _claims(done, len(seeds), where)
        if sampled.get("problems"):
            raise Failure(*[tuple(p) for p in sampled["problems"]])
        problems, _ = self.checker.verify(done, where) if check else ([], 0.0)
        if problems:
            raise Failure(*[(str(c), str(m)[:1000]) for c, m in problems])
        marks.update(_stamps("runner", done), **_stamps("checker", sampled))
        marks = {k: round((v - m0) * 1e3, 4) for k, v in marks.items()}
        return Timed(self.name, window, checks.number(done, "device_ms"), gen_ms, (answered - t0) * 1e3, marks,
                     fresh=fresh, calls=len(seeds), probe_before_ms=probe_before, probe_after_ms=probe_after,
                     started_s=m0, write=dict(self.checker.last_write) if fresh else {})

    def _gpu_window(self, deadline: float, marks: dict) -> tuple[dict, float, dict]:
        """The GPU half of a window: the runner describes its outputs while the device still runs
        the calls, and the checker looks them up meanwhile (`arm`); after `batch_done` the runner
        is stopped and the checker reads its secret sample, which ends the window. The judge and
        the checker poll their pipes rather than sleep on them inside the window, so that no
        wake-up of theirs is part of it."""
        described = self.link.described(deadline, SPIN_S)
        marks["described"] = time.monotonic()
        armed = self.checker.arm(described)
        marks["armed"] = time.monotonic()
        if armed.get("problems"):
            _signal_group(self.runner, signal.SIGSTOP)
            return described, time.perf_counter(), armed
        done = self.link.batch_done(deadline, SPIN_S)
        answered = time.perf_counter()
        marks["answered"] = time.monotonic()
        _signal_group(self.runner, signal.SIGSTOP)
        marks["stopped"] = time.monotonic()
        sampled = self.checker.sample()
        described.update(device_ms=done.get("device_ms"), stamps=done.get("stamps"))
        return described, answered, sampled


def _signal_group(runner, sig: int) -> None:
    """One system call to the runner's process group, inside the window. Walking the whole tree
    through /proc (Runner.stop / cont) costs milliseconds that vary with the machine's process
    count; it is done only outside the window. A descendant that left the group stays stopped
    through the batch, which can only slow the submission down."""
    try:
        os.killpg(runner.pid, sig)
    except OSError:
        pass


def _stamps(who: str, reply: dict) -> dict:
    """A process's own monotonic stamps (diagnostics only; numbers or nothing)."""
    got = reply.get("stamps") if isinstance(reply, dict) else None
    if not isinstance(got, list):
        return {}
    return {f"{who}{i}": float(v) for i, v in enumerate(got[:8])
            if isinstance(v, (int, float)) and math.isfinite(v)}


def _claims(done: dict, count: int, where: str) -> None:
    """What the runner itself found on the live outputs (wrong type or device): a rejection; the
    descriptors are only checked for form here, the checker reads the memory itself."""
    problems = checks.result_problems({"problems": done.get("problems", [])})
    if problems:
        raise Failure(*[(c, f"{where}: {m}") for c, m in problems])
    outputs = done.get("outputs")
    if outputs is not None and (not isinstance(outputs, list) or len(outputs) != count):
        raise checks.protocol("one output descriptor per call is required")


# ---- the numbers of a shape ----------------------------------------------------------------

def overhead_ms(baseline: list[Timed]) -> float:
    """The median fixed overhead of a batch: the judge's window minus the trusted baseline
    runner's own time around its calls."""
    gaps = sorted(t.window_ms - t.device_ms for t in baseline)
    return max(0.0, gaps[len(gaps) // 2]) if gaps else 0.0


# the candidate's overhead may grow with its window by at most this many ms per ms: a candidate
# that lengthens its own windows then always loses more than the larger overhead gives back
MAX_OVERHEAD_SLOPE = 0.5


def candidate_overhead(window_ms: float, points: list[tuple[float, float]]) -> float:
    """GPU: the overhead taken off the candidate's windows, from the trusted baseline sides'
    (median window, median overhead): on a line through them at the candidate's median window,
    within the range they span. On an H200 the overhead grows with the window (eager's 21 ms
    windows carried 0.3 ms more than torch.compile's 12 ms ones, in waking the processes that
    waited the longest), so a median pooled over both sides was too large for a candidate as fast
    as torch.compile and too small for one as slow as eager (docs/bench/judge-clock.md)."""
    (x0, y0), (x1, y1) = sorted(points)[0], sorted(points)[-1]
    if x1 - x0 < 1e-6:
        return (y0 + y1) / 2
    slope = min(max((y1 - y0) / (x1 - x0), -MAX_OVERHEAD_SLOPE), MAX_OVERHEAD_SLOPE)
    return min(max(y0 + slope * (window_ms - x0), min(y0, y1)), max(y0, y1))


def per_call(batches: list[Timed], overhead: float, calls: int) -> list[float]:
    return [max(t.window_ms - overhead, 1e-6) / calls for t in batches]


