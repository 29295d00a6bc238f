"""The judge: trusted, never imports the submission. Builds inputs and gold answers itself, drives
the runner through the control channel, and computes the verdict from checked data. Ranked mode then times
the candidate against eager and torch.compile (run by a trusted baseline runner, baseline.py) in
batches on the judge's own clock (timed.py, batch.py), each runner stopped while the other is timed.

An evaluation runs in phases, one module each: setup (startup.py), correctness (correctness.py),
timing (timed.py) and verdict (verdict.py); calls.py is one checked call, made through the link
both runners are driven by (link.py). `Evaluation` declares every attribute it has (slots); each
phase's output is one of its typed fields.
"""
from __future__ import annotations

import dataclasses
import secrets
import shutil
import signal
import time
from collections import Counter
from typing import Callable

from evaluator.wire import affinity
from evaluator.judge import baseline_compile
from evaluator.judge import baseline_keep
from evaluator.judge import batch
from evaluator.judge import checkers
from evaluator.judge import calls
from evaluator.wire import channel
from evaluator.common import checks
from evaluator.judge import correctness
from evaluator.judge import gpustate
from evaluator.contract import progress
from evaluator.contract import readings
from evaluator.contract import report
from evaluator.judge import sanitize
from evaluator.judge import scan
from evaluator.judge import startup
from evaluator.judge import timed
from evaluator.contract import upload
from evaluator.judge import verdict
from evaluator.wire import workdir
from evaluator.wire.messages import Reply
from evaluator.common.checks import Failure
from evaluator.judge.link import Link
from evaluator.judge.runner_process import Runner


@dataclasses.dataclass(slots=True, init=False, eq=False, repr=False)
class Evaluation:
    """One evaluation's state, every attribute declared here (slots: no phase adds one). The
    settings come from the caller; each phase's output is a typed field, None until that phase
    has run: `setup` (startup.Setup), `base` (baseline_compile.Baseline), `threads`
    (startup.Threads), `profiled` (correctness.Profiled), the timed rows in the report."""
    # the settings
    source: bytes
    task_name: str
    task_ref: str  # how the processes are told the task: with its parameters' seed (tasks.task_ref)
    device: str
    mode: str
    time_limit_s: float
    scan: bool
    master: int  # the secret seed every input seed and checksum key derives from
    derive: Callable[..., int]  # evaluator.tasks.base.derive_seed
    # what the evaluation finds
    report: dict
    codes: list[tuple[str, str]]
    # the clock (`run`)
    t0: float
    deadline: float
    # the phases' outputs
    setup: startup.Setup | None
    base: baseline_compile.Baseline | None
    threads: startup.Threads | None
    profiled: correctness.Profiled | None
    # the processes, each closed by `close`
    runner: Runner | None  # the candidate's runner
    link: Link | None  # the judge's link to it: send / expect below, its work directory
    checkers: dict  # "cand" / "base" -> checkers.CheckerProcess (GPU) or checkers.LocalChecker (CPU)
    sanitizer: sanitize.Early | None  # the tools running beside the correctness phase
    compiling: baseline_compile.Overlap | None  # the compile running beside it
    # the timing phase
    pinned_cores: dict | None
    in_batches: bool  # the timed batches are running (what a crash then means)
    first_call_limit_s: float
    call_limit_s: float
    _call_limit: float  # the limit of the call now waited for (its timeout's message)

    def __init__(self, source: bytes, *, task: str, device: str, mode: str, time_limit_s: float = 300,
                 scan: bool = True):
        self.source = source
        self.scan = scan
        self.task_name = self.task_ref = task
        self.device = device
        self.mode = mode
        self.time_limit_s = time_limit_s
        self.report = report.empty(task=task, mode=mode, device=device)
        self.codes = []
        self.master = secrets.randbits(63)
        from evaluator.tasks.base import derive_seed

        self.derive = derive_seed
        self.t0 = self.deadline = 0.0
        self.setup = self.base = self.threads = self.profiled = None
        self.runner = self.link = self.sanitizer = self.compiling = self.pinned_cores = None
        self.checkers = {}
        self.in_batches = False
        self.first_call_limit_s, self.call_limit_s = calls.FIRST_CALL_LIMIT_S, calls.CALL_LIMIT_S
        self._call_limit = calls.FIRST_CALL_LIMIT_S

    # ---- entry point -----------------------------------------------------------------------
    def run(self) -> dict:
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.time_limit_s
        threads = None
        try:
            try:
                if self.device == "cpu":
                    threads = _single_thread()
                self._evaluate()
            except Failure as f:
                self.codes.extend(f.problems)
            finally:
                closing = time.monotonic()
                self.close(keep_work=True)
                self.report["phases"]["close_s"] = time.monotonic() - closing
                verdict.complete(self.report, self.codes, mode=self.mode,
                                 task=self.setup.task if self.setup else None)
                if threads:
                    import torch

                    torch.set_num_threads(threads)
            return sanitize.finish(self.report, self.source, self.sanitizer, triton_cache=self.runner_triton_cache())
        finally:
            self.remove_work()

    def _evaluate(self):
        problems = upload.check_upload(self.source)
        if problems:
            raise Failure(*problems)
        text = self.source.decode("utf-8")
        if self.device == "cpu" and scan.needs_gpu(text):
            raise Failure(("needs_gpu", "this submission compiles CUDA source (cpp_extension / "
                                        "load_inline) and needs a GPU; this machine has none"))
        for finding in scan.scan(text) if self.scan else ():
            self.codes.append(("suspicious_source", f"suspicious source: {finding}"))
        progress.note("setup")
        self.setup = startup.prepare(self)
        progress.note("compile")
        startup.start(self)
        self.profiled = correctness.run(self)
        if self.compiling:
            self.report["phases"]["compile_wait_s"] = round(self.compiling.join(), 3)
        if self.mode == "ranked":
            self._timing()
        progress.note("verdict")
        verdict.stats(self)

    def _timing(self):
        if self.sanitizer and self.sanitizer.runs:
            # nothing of the submission but its stopped runner may be left on the GPU when timing starts
            progress.note("sanitizer")
            self.sanitizer.join(self.deadline - time.monotonic(), self.time_limit_s)
            self.report["phases"]["sanitizer_s"] = round(self.sanitizer.waited_s, 3)
        t = time.monotonic()
        setup, base = self.setup, self.base
        if self.device != "cuda":
            self.checkers = {"cand": checkers.LocalChecker(setup.task, setup.work),
                             "base": checkers.LocalChecker(setup.task, base.work)}
        b = base.runner
        sides = {"cand": batch.Side("cand", runner=self.runner, link=self.link, checker=self.checkers["cand"])}
        for fn in baseline_compile.BASELINES:
            sides[fn] = batch.Side(fn, runner=b, link=base.link(fn), checker=self.checkers["base"])
        pinned = self._pin() if affinity.wanted(self.device) else None
        self.pinned_cores = pinned.cores if pinned else None
        before = gpustate.reading() if self.device == "cuda" else None
        self.runner.stop()
        base.idle = False
        self.in_batches = True
        try:
            self.report["shapes"] = timed.Phase(self, sides, self.checkers).run()
            base.idle = True
            if before is not None:  # read at once: an idle GPU lowers its clocks within moments
                self.gpu_state(before, gpustate.reading())
        finally:
            self.in_batches = False
            self.runner.cont()
            if pinned:
                pinned.restore()
        self.report["timing_gate"] = ("judge's clock over batches of calls; overhead from the trusted "
                                      "baseline runner's own clock")
        progress.note("recheck")
        correctness.recheck(self)
        self.report["phases"]["timing_s"] = time.monotonic() - t

    def gpu_state(self, before: dict, after: dict | None) -> None:
        """The readings go into the report; a GPU that throttled during timing flags the run, since
        its times are those of a slower GPU than the one the other entries ran on."""
        self.report["gpu_state"] = {"before": before, "after": after or gpustate.blank(error="no reading")}
        why = gpustate.throttled(before, after)
        if why:
            self.codes.append(("gpu_throttled", why))

    def _pin(self) -> affinity.Pinned:
        return affinity.Pinned({"cand_checker": [self.checkers["cand"].proc.pid], "cand_runner": self.runner.tree(),
                                "base_checker": [self.checkers["base"].proc.pid],
                                "base_runner": self.base.runner.tree()})

    # ---- the candidate's channel (self.link's functions) -----------------------------------------
    def send(self, msg: dict) -> None:
        try:
            channel.send(self.runner.to_runner, msg)
        except (BrokenPipeError, OSError):
            raise self._exited() from None

    def expect(self, kind: str, deadline: float, spin_s: float = 0.0) -> dict:
        try:
            msg = channel.recv(self.runner.from_runner, min(deadline, self.deadline), spin_s)
        except channel.Timeout:
            self.runner.kill()
            if time.monotonic() >= self.deadline - 0.01:
                raise Failure(("timeout", f"the evaluation took longer than its limit of "
                                          f"{self.time_limit_s:g} s")) from None
            raise Failure(("timeout", "a call to custom_kernel took longer than its limit "
                                      f"({self._call_limit:g} s)")) from None
        except channel.Closed:
            raise self._exited() from None
        except channel.ProtocolError as e:
            raise checks.protocol(str(e)) from None
        t = msg.get("t")
        if t == Reply.ERROR:
            raise checks.runner_error(msg)
        if t != kind:
            raise checks.protocol(f"expected {kind!r}, got {str(t)[:40]!r}")
        return msg

    def _exited(self) -> Failure:
        status = self.runner.exit_status()
        if status is None:
            self.runner.kill()
            return checks.protocol("the runner closed the channel")
        if status == -9 and not self.runner.killed_by_judge:
            return Failure(("out_of_memory", "the runner was killed by signal 9 (SIGKILL): probably "
                                             "out of memory"))
        if status < 0:
            why = f"the process running the kernel was killed by signal {-status}{_signal_words(-status)}"
            if -status in (signal.SIGSEGV, signal.SIGBUS) and self.in_batches and self.device != "cuda":
                # the CPU runner maps the checker's input file read-only (runner_batch.map_inputs)
                why += (" in a timed batch, whose inputs are mapped read-only on the CPU: a kernel that "
                        "writes into its input tensors faults there")
            return Failure(("crash", why))
        return Failure(("crash", f"the runner exited with status {status} before the evaluation "
                                 "finished (no complete result)"))

    def call(self, shape: dict, seed: int, where: str, **kw) -> calls.Call:
        """One checked call of the submission (calls.Caller.call)."""
        self.note_call_limit(kw.get("first", False))
        return self.setup.caller.call(self.link, shape, seed, where, **kw)

    # ---- what the timing phase asks of the evaluation ----------------------------------------
    def note_call_limit(self, first: bool) -> None:
        self._call_limit = calls.call_limit_s(first)

    def short_of_time(self) -> bool:
        return self.deadline - time.monotonic() < 0.25 * self.time_limit_s

    def check_threads(self, when: str, key: str) -> None:
        """Flags `extra_threads` when the runner has more threads than before the import; the
        count goes into the report's readings under `threads_<key>` (the largest seen there)."""
        names = self.runner.thread_names()
        seen = self.report["readings"]
        seen["threads_base"] = self.threads.base
        seen[f"threads_{key}"] = max(len(names), seen.get(f"threads_{key}", 0))
        if any(c == "extra_threads" for c, _ in self.codes):
            return
        if key in readings.threads_over_base(seen):
            # names the submission may set itself: for the admin reading the flag, not for the verdict
            new = sorted((Counter(names) - Counter(self.threads.names_base)).elements())
            named = f" (new by name: {', '.join(new[:8])})" if new else ""
            self.codes.append(("extra_threads", f"the runner had {self.threads.base} threads before the "
                                                f"submission was imported and {len(names)} {when}{named}"))

    # ---- the end -------------------------------------------------------------------------------
    def close(self, keep_work: bool = False):
        """Every process ends and every directory goes, whatever happened; the runner's output
        goes into the report. `keep_work`: the runner's work directory stays until `remove_work`
        (the sanitizer's tools reuse its Triton cache)."""
        if self.compiling:
            self.compiling.cancel()
        base, work = self.base, self.setup.work if self.setup else None
        kept = base is not None and base.idle and baseline_keep.give(base.key, self.device, base.runner, base.work)
        procs = [p for p in (self.runner, None if kept or base is None else base.runner, *self.checkers.values(),
                             self.sanitizer) if p is not None]
        for proc in procs:  # all told to end first, then each waited for: their exits overlap
            if hasattr(proc, "begin_close"):
                proc.begin_close()
        for proc in procs:
            proc.close()
        if base is not None and not kept:
            base.work.remove()
        if work is not None:
            self.report["logs"] = workdir.logs(work)
            if not keep_work:
                self.remove_work()
        if self.setup and self.setup.tmp_cache:
            shutil.rmtree(self.setup.tmp_cache, ignore_errors=True)

    def remove_work(self):
        if self.setup is not None:
            self.setup.work.remove()

    def runner_triton_cache(self) -> str | None:
        """The Triton cache the candidate's runner compiled into (its own user's directory, in
        its work directory). The sanitizer's tools run the same submission as the same user, so
        handing them what it compiled gives nothing away, and it spares each tool compiling every
        kernel again under the tool (seconds a kernel for a block of several)."""
        return str(self.setup.work.scratch / "triton") if self.setup is not None else None


def _single_thread() -> int:
    """CPU timing runs on one thread on both sides: on small shared machines a thread pool's
    wake-up costs a scheduler slice (about 10 ms), which buried every small kernel."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    return before


def evaluate(source: bytes, *, task: str, device: str, mode: str = "ranked", time_limit_s: float = 300,
             scan: bool = True) -> dict:
    return Evaluation(source, task=task, device=device, mode=mode, time_limit_s=time_limit_s, scan=scan).run()


SIGNAL_WORDS = {
    signal.SIGSEGV: "a segmentation fault: the code read or wrote memory it does not own",
    signal.SIGBUS: "a bus error: a memory access the machine cannot make",
    signal.SIGABRT: "abort(): a failed check in native code",
    signal.SIGFPE: "an arithmetic fault, such as an integer division by zero",
    signal.SIGILL: "an illegal instruction",
}


def _signal_words(number: int) -> str:
    """" (SIGSEGV, a segmentation fault: ...)": the signal's name and what it usually means."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return ""
    words = SIGNAL_WORDS.get(number)
    return f" ({name}, {words})" if words else f" ({name})"
