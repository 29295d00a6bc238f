"""The runner: the only process that imports the submission.

Everything here is untrusted as soon as the submission is imported; the judge treats every message
as a claim and checks the data itself. The checks done here (exact tensor type, aliasing, inputs
unchanged, no deferred writes) are the ones that need the live tensors; they run in harness code
the submission would have to reach into and patch, which the source scan flags.

Protocol (judge -> runner, one frame each; runner replies):
    load                                   -> ready | error
    prepare {shape, seed, snap, settle, back, keep, profile[, fn]}  -> prepared | error
    go {size, key}                         -> done {ms, fp}, then result {...} | error
    inputs {desc | path, nbytes, layout, slot_bytes, slots}          -> mapped
    batch {count[, fn]}                    -> GPU: batch_described {outputs, meta, problems} before
                                              the synchronize, then batch_done {device_ms};
                                              CPU: batch_done {outputs, meta, problems, device_ms, stored}
    release                                -> released
    stats                                  -> stats {triton, cuda, aten}
    exit                                   -> (exits)

`prepare` / `go` serve the correctness calls: the runner builds the inputs from the seed and the
judge checks the bytes it returns. `inputs` / `batch` serve the timing: the inputs lie in memory the
trusted checker wrote (checker.py) and the runner maps; `batch` runs the calls back to back and
answers with where its outputs lie, so that the checker reads them itself. The judge's own clock,
from sending `batch` to the checker's sample of the outputs, is the time that is scored; the
runner's `device_ms` is read only from the trusted baseline runner.
With --baseline (the judge's trusted baseline runner, baseline.py: never the submission) the
source defines custom_kernel (eager) and compiled_kernel (torch.compile), and the `fn` field
("eager" / "compile") picks one; the candidate's runner ignores `fn`.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import traceback

from evaluator.wire import channel
from evaluator.wire.messages import Op, Reply
from evaluator.wire import isolation
from evaluator.runner.live import one_line, out_of_memory, overlap, plain_tensor, raw, span, type_name
from evaluator.runner.batch import BatchCalls

MAX_TRACE = 4000
FILE_LIMIT = 1 << 30  # the runner writes no file larger than 1 GiB (logs, caches)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluator.runner.harness")
    p.add_argument("--task", required=True)
    p.add_argument("--device", required=True, choices=("cpu", "cuda"))
    p.add_argument("--in-fd", type=int, required=True)
    p.add_argument("--out-fd", type=int, required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--buffer", required=True)
    p.add_argument("--drop-to", type=int, default=None)
    p.add_argument("--baseline", action="store_true")
    args = p.parse_args(argv)

    notes = []
    if args.drop_to is not None and os.geteuid() == 0:
        notes += isolation.enter_pid_namespace(child_fds=(args.in_fd, args.out_fd))
        needed = [sys.prefix, sys.base_prefix, sys.exec_prefix, isolation.PACKAGE_ROOT,
                  os.path.dirname(args.source), *[d for d in sys.path if d and os.path.isdir(d)]]
        notes += isolation.drop_privileges(args.drop_to, args.drop_to, needed)
    elif not isolation.set_no_new_privs():
        notes.append("could not set no_new_privs")
    parent = os.environ.pop("EVALUATOR_JUDGE_PID", "")
    if args.baseline and parent.isdigit() and not isolation.die_with_parent(int(parent)):
        return 1  # the judge has already gone: nothing to serve, and no one to end this process
    if args.baseline and not isolation.is_root():
        # same uid as the candidate's runner: close /proc/<pid>/mem and ptrace to it, like the judge
        isolation.make_undumpable()
    os.chdir(os.environ.get("HOME") or os.path.dirname(args.buffer))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    Harness(args, notes).serve()
    return 0


class Harness(BatchCalls):
    def __init__(self, args, notes):
        self.args = args
        self.device = args.device
        self.inp, self.out = args.in_fd, args.out_fd
        self.notes = notes
        self.triton_launched: list[str] = []
        self.cuda_kernels: list[str] = []
        self.aten_ops = None
        self.profiler_growth = 0
        self.inputs = None
        self.pristine = None
        self.call = None
        self.call_fn = None
        self.fns = {}
        self.kept = []
        self.prev = None
        self.buf = None
        self.buf_size = 0

    def send(self, **msg):
        channel.send(self.out, msg)

    def fail(self, code: str, message: str, trace: str = ""):
        if trace:
            sys.stderr.write(trace)
            sys.stderr.flush()
        self.send(t=Reply.ERROR, code=code, message=message[:MAX_TRACE], trace=trace[-MAX_TRACE:])
        os._exit(3)

    # ---- start-up: everything here runs before the submission exists ----------------------
    def warm_up(self):
        global torch
        import torch  # noqa: F811  (imported after the privilege drop and env setup)

        from evaluator.tasks import get_task

        global sync, time_call
        from evaluator.common.timing import sync, time_call  # noqa: F811

        global fingerprint
        from evaluator.common.checks import fingerprint  # noqa: F811

        self.task = get_task(self.args.task)
        if self.device == "cuda":
            torch.cuda.init()
            torch.cuda.set_device(0)
            (torch.randn(64, 64, device="cuda") @ torch.randn(64, 64, device="cuda")).sum().item()
            # start the profiler's threads now, so that they count as the harness's own; a second
            # session tells whether each session starts more (the judge then allows that many)
            from evaluator.common.opcount import recorder

            for session in range(2):
                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]), recorder():
                    torch.ones(8, device="cuda").sum().item()
                if session == 0:
                    before = _thread_count()
            self.profiler_growth = max(0, _thread_count() - before)
        self._warm_triton()

    def _warm_triton(self):
        from evaluator.runner._warm import evaluator_warm

        x = torch.zeros(16, device=self.device)
        evaluator_warm[(1,)](x, 16, BLOCK=16)
        if self.device == "cuda":
            torch.cuda.synchronize()

    def hook_triton(self):
        """Record the name of every Triton kernel launch (compiled or interpreted)."""
        import triton.runtime.jit as jit

        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:
            pass
        launched = self.triton_launched
        for cls in classes:
            original = cls.run

            def run(self, *args, _original=original, **kwargs):
                if not kwargs.get("warmup") and not getattr(self, "evaluator_internal", False):
                    fn = getattr(self, "fn", None)
                    name = getattr(fn, "__name__", None) or type(self).__name__
                    if name not in launched and len(launched) < 64:
                        launched.append(name)
                return _original(self, *args, **kwargs)

            cls.run = run

    def load(self):
        import importlib.util

        self.hook_triton()
        try:
            spec = importlib.util.spec_from_file_location("submission", self.args.source)
            module = importlib.util.module_from_spec(spec)
            sys.modules["submission"] = module
            spec.loader.exec_module(module)
        except BaseException as e:  # noqa: BLE001 - SystemExit from the submission is a failure too
            self.fail(self._error_code(e), f"importing the submission failed: {one_line(e)}",
                      traceback.format_exc())
        from evaluator.tasks import EntryError

        if self.args.baseline:  # the judge's own source: custom_kernel and compiled_kernel
            fn = getattr(module, "custom_kernel", None)
            self.fns = {"eager": fn, "compile": getattr(module, "compiled_kernel", None)}
        else:
            self.fns = {}
            try:
                fn = self.task.entry(module, self.device)
            except EntryError as e:
                self.fail(e.code, str(e))
            except BaseException as e:  # noqa: BLE001 - ModelNew's constructor is the submission's code
                self.fail(self._error_code(e), f"building ModelNew failed: {one_line(e)}", traceback.format_exc())
        self.fn = fn

    def _error_code(self, e: BaseException) -> str:
        if out_of_memory(e):
            return "out_of_memory"
        return "import_error" if self.fn_missing() else "crash"

    def fn_missing(self) -> bool:
        return not hasattr(self, "fn")

    # ---- the loop ------------------------------------------------------------------------
    def serve(self):
        self.warm_up()
        self.send(t=Reply.HELLO, notes=self.notes, profiler_growth=self.profiler_growth)
        msg = channel.recv(self.inp)
        if msg.get("op") != Op.LOAD:
            return
        self.load()
        self.send(t=Reply.READY)
        while True:
            msg = channel.recv(self.inp)
            op = msg.get("op")
            if op == Op.PREPARE:
                self.prepare(msg)
            elif op == Op.GO:
                self.go(msg)
            elif op == Op.INPUTS:
                self.map_inputs(msg)
            elif op == Op.BATCH:
                self.batch(msg)
            elif op == Op.RELEASE:
                self.kept, self.prev, self.batch_outputs = [], None, []
                self.send(t=Reply.RELEASED)
            elif op == Op.STATS:
                self.send(t=Reply.STATS, triton=self.triton_launched, cuda=self.cuda_kernels[:64],
                          aten=self.aten_ops)
            else:
                return

    def prepare(self, msg):
        try:
            self.inputs = None
            self.pristine = None
            inputs = self.task.make_inputs(msg["shape"], int(msg["seed"]), self.device)
            self.pristine = [x.clone() for x in inputs]
            self.inputs = inputs
            self.call = msg
            self.call_fn = self.fns.get(msg.get("fn"), self.fn) if self.fns else self.fn
            stored = False
            if msg.get("back"):  # the inputs as built, before the call: the judge compares them
                stored = self._write([raw(x) for x in inputs], int(msg.get("size", 0)))
            sync(self.device)
        except BaseException as e:  # noqa: BLE001
            self.fail(self._error_code(e), f"preparing inputs failed: {one_line(e)}",
                      traceback.format_exc())
        self.send(t=Reply.PREPARED, stored=stored)

    def go(self, msg):
        call = self.call
        snap = None
        detail = {}
        try:
            if call.get("profile"):
                out, ms = self._profiled()
            elif call.get("snap"):
                out, ms, snap = self._timed(snapshot=True, detail=detail)
            else:
                out, ms, _ = self._timed(snapshot=False, detail=detail)
            # the output's bytes are bound before `done`: a keyed checksum the judge recomputes on
            # what is stored, so work done after `done` (outside the judge's clock) is caught
            fp = fingerprint(raw(out), int(msg.get("key", 0))) if plain_tensor(out) else None
        except BaseException as e:  # noqa: BLE001
            self.fail(self._error_code(e), f"custom_kernel raised {one_line(e)}", traceback.format_exc())
        self.send(t=Reply.DONE, ms=ms, fp=fp, **detail)
        try:
            self.check_and_store(out, snap, int(msg.get("size", 0)))
        except BaseException as e:  # noqa: BLE001
            self.fail(self._error_code(e), f"reading the output failed: {one_line(e)}",
                      traceback.format_exc())

    def _timed(self, snapshot: bool, detail: dict | None = None):
        """timing.time_call, plus (when the judge asks) a copy of the output taken the moment the
        call returns, on the current stream, before anything synchronizes."""
        snaps = []

        def after(out):
            if snapshot and type(out) is torch.Tensor:
                snaps.append(out.detach().clone())

        out, ms = time_call(self.call_fn, self.inputs, self.device, after)
        return out, ms, (snaps[0] if snaps else None)

    def _profiled(self):
        """One untimed call recording the aten operators it ran (and on the GPU, through the
        profiler, the CUDA kernels). If the recording itself breaks the call, the call is made
        again without it."""
        from evaluator.common.opcount import recorder

        t0 = time.perf_counter()
        rec = recorder()
        try:
            if self.device == "cuda":
                from torch.profiler import ProfilerActivity, profile

                with profile(activities=[ProfilerActivity.CUDA]) as prof, rec:
                    out = self.call_fn(*self.inputs)
                    torch.cuda.synchronize()
                for event in prof.events():
                    if event.device_type == torch.autograd.DeviceType.CUDA and event.name not in self.cuda_kernels:
                        self.cuda_kernels.append(event.name[:200])
            else:
                with rec:
                    out = self.call_fn(*self.inputs)
            self.aten_ops = {k: v for k, v in sorted(rec.ops.items())[:64]}
        except Exception:  # noqa: BLE001
            self.aten_ops = None
            out = self.call_fn(*self.inputs)
            if self.device == "cuda":
                torch.cuda.synchronize()
        return out, (time.perf_counter() - t0) * 1e3

    # ---- checks that need the live tensors -------------------------------------------------
    def check_and_store(self, out, snap, size):
        problems = []
        meta = {"dtype": None, "shape": None, "device": None}
        # the exact type first: nothing else may be touched on an object of another class
        if type(out) is not torch.Tensor:
            problems.append(["wrong_type", f"custom_kernel returned {type_name(out)}, not a torch.Tensor"])
        elif not plain_tensor(out):
            problems.append(["wrong_type", f"custom_kernel returned a tensor with layout {out.layout} "
                                           "(a plain strided tensor is required)"])
        else:
            meta = {"dtype": str(out.dtype), "shape": list(out.shape), "device": out.device.type}
            if out.device.type != self.device:
                problems.append(["wrong_device", f"the output is on {out.device}, not on {self.device}"])
        if problems:
            self.send(t=Reply.RESULT, problems=problems, stored=False, **meta)
            return
        torch.cuda.synchronize() if self.device == "cuda" else None
        problems += self._aliasing(out)
        if any(not torch.equal(raw(x), raw(p)) for x, p in zip(self.inputs, self.pristine)):
            problems.append(["input_modified", "custom_kernel modified its input tensors"])
        if snap is not None:
            settle = self.call.get("settle", 0.01)
            if isinstance(settle, (int, float)) and not isinstance(settle, bool) and 0 < settle <= 0.1:
                time.sleep(settle)
            if self.device == "cuda":
                torch.cuda.synchronize()
            if not torch.equal(raw(out), raw(snap)):
                problems.append(["deferred_write", "the output changed after custom_kernel returned "
                                                   "(work still running after the call)"])
        stored = self._store(out, size)
        if self.call.get("keep"):
            self.kept.append(out)
        else:
            self.prev = out
        self.send(t=Reply.RESULT, problems=problems, stored=stored, **meta)

    def _aliasing(self, out):
        problems = []
        mine = span(out)
        if mine is None:
            return problems
        if any(overlap(mine, span(x)) for x in self.inputs if isinstance(x, torch.Tensor)):
            problems.append(["aliases_input", "the output shares memory with an input"])
        earlier = self.kept + ([self.prev] if self.prev is not None else [])
        if any(overlap(mine, span(x)) for x in earlier):
            problems.append(["aliases_output", "the output shares memory with an earlier output"])
        return problems

    def _store(self, out, size):
        """Write the output's bytes (and for `back` calls the inputs' bytes after them) into the
        shared file; the judge reads them through its own descriptor."""
        parts = [raw(out)] + ([raw(x) for x in self.inputs] if self.call.get("back") else [])
        return self._write(parts, size)

    def _write(self, parts, size) -> bool:
        if sum(p.numel() for p in parts) > size:
            return False
        if self.buf is None or self.buf_size != size:
            self.buf = torch.from_file(self.args.buffer, shared=True, size=size, dtype=torch.uint8)
            self.buf_size = size
        offset = 0
        for part in parts:
            n = part.numel()
            self.buf[offset:offset + n].copy_(part)
            offset += n
        return True


def _thread_count() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
