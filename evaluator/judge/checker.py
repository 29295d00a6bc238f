"""The checker: the trusted side of a timed batch. It builds the batch's inputs where the runner can
read them, reads the runner's outputs itself, and compares them with gold answers it computes.

On the GPU it is its own process (`python -m evaluator.judge.checker`), of the runner's uid so that CUDA
IPC works between them (it fails across users), outside the runner's PID namespace, non-dumpable,
with a private scratch directory the runner cannot name. It is started before the submission
exists and only ever reads what the runner describes; nothing the runner says is taken as a result.
On the CPU the judge holds a `Checker` itself: the inputs lie in a file the runner maps read-only,
and the runner copies its outputs into its output file before it answers.

Per batch (judge.py drives it; the runner is stopped while inputs are written):
    fill {seeds}       write the inputs of every call into the shared buffer; time it on this
                       process's own device clock (a kernel the runner left running shows here)
    refresh            a trusted baseline's next batch on the same inputs: flush the L2, draw
                       new sample positions
    arm {outputs}      inside the window, while the device still runs the runner's calls: look
                       up where the outputs lie (CUDA IPC) and stage their addresses
    sample             inside the judge's timed window, after the runner answered: read a secret
                       random sample of every output's words. Work still writing the outputs
                       after this is caught below
    verify             after the window: every input unchanged, every output against its gold
                       answer, and every sampled word unchanged since the sample
"""
from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
import time
import traceback

import torch

from evaluator.wire import channel
from evaluator.common import checks
from evaluator.common import fastcheck
from evaluator.wire import isolation
from evaluator.wire.messages import CheckerOp, CheckerReply
from evaluator.judge.write_readings import WriteReadings
from evaluator.common.checks import Failure

ALIGN = 256  # every input tensor starts on this byte boundary in its slot
SAMPLE_WORDS = 64  # sampled 4-byte words per output: a write deferred past the window that is worth
# even 0.5 % of a batch leaves a third of the last output unwritten, and 64 secret positions miss
# that with odds of 1e-12; more positions only read more memory inside the window (on an H200 the
# read's cost is the checker's launch and the GPU's switch to its context, whatever the count)
SCRUB_BYTES = 256 << 20  # written after the inputs so that none of them sits in the L2
SPIN_S = 2.0  # inside a window, poll the judge's pipe this long before sleeping on it
PROBE_COUNT = 3  # launches of the probe kernel per reading (Checker.probe)


class Checker:
    """Inputs, samples and verification for one task on one device; one shape at a time."""

    def __init__(self, task, device: str):
        self.task = task
        self.device = device
        self.buffer = None
        self.layout: list[tuple[torch.dtype, tuple, int, int]] = []  # (dtype, shape, offset, nbytes)
        self.slot_bytes = 0
        self.shape = None
        self.seeds: list[int] = []
        self.idx = None
        self.samples = None
        self.key = 0  # the fingerprints' key, new for every fill
        self.prints: list = []  # per call, the fingerprints of its inputs as written (GPU), or None
        self.out_shape = None
        self.gen = torch.Generator(device=device)
        self.gen.manual_seed(secrets.randbits(63))
        self.scrub = None
        self.gather = None
        self.armed = None
        self.last_write: dict = {}  # how the last fill went (write_readings): diagnostics only

    # ---- layout --------------------------------------------------------------------------
    def plan(self, shape: dict) -> dict:
        """Where each input of one call lies in a slot, and the output's shape: from one set of
        inputs built here."""
        from evaluator.tasks import base

        inputs = self._build(shape, 0)
        layout, offset = [], 0
        for x in inputs:
            nbytes = x.numel() * x.element_size()
            layout.append((x.dtype, tuple(x.shape), offset, nbytes))
            offset += -(-nbytes // ALIGN) * ALIGN
        with base.full_fp32():
            gold = self.task.reference_fp32(*inputs)
        self.layout, self.slot_bytes, self.shape = layout, offset, dict(shape)
        self.out_shape = tuple(gold.shape)
        self.out_bytes = gold.numel() * torch.empty((), dtype=self.task.output_dtype).element_size()
        return {"layout": [[str(d).removeprefix("torch."), list(s), o, n] for d, s, o, n in layout],
                "slot_bytes": self.slot_bytes, "out_shape": list(self.out_shape), "out_bytes": self.out_bytes}

    def use_buffer(self, buffer: torch.Tensor) -> None:
        """The shared input buffer (uint8, slots x slot_bytes)."""
        self.buffer = buffer

    def slot(self, k: int) -> list[torch.Tensor]:
        base = k * self.slot_bytes
        return [self.buffer[base + o: base + o + n].view(d).view(s) for d, s, o, n in self.layout]

    # ---- one batch -------------------------------------------------------------------------
    def fill(self, seeds: list[int]) -> float:
        """Write the inputs of len(seeds) calls; milliseconds on this process's own clock."""
        if len(seeds) * self.slot_bytes > self.buffer.numel():
            raise ValueError("more calls than the buffer has slots")
        start, end = self._events()
        readings = WriteReadings()
        t = _now(self.device, start)
        self.key = secrets.randbits(64)
        self.prints = []
        for k, seed in enumerate(seeds):
            built = self._build(self.shape, seed)
            for dst, src in zip(self.slot(k), built):
                dst.copy_(src)
            # every fill, the baselines' too, though only checked batches are verified
            self.prints.append(self._prints(built))
            readings.call_issued()
        self.seeds = list(seeds)
        self._flush_and_draw()
        elapsed = _elapsed(self.device, t, start, end)
        self.last_write = readings.done()
        return elapsed

    def refresh(self) -> float:
        """The next batch of a trusted baseline on the inputs already written: the L2 is flushed
        and new sample positions drawn, nothing is rebuilt (milliseconds on this process's own
        clock). The baselines run only the reference and torch.compile, which gain nothing from
        seeing an input twice; only the candidate needs inputs it has never seen."""
        if not self.seeds:
            raise ValueError("no inputs were written to refresh")
        start, end = self._events()
        t = _now(self.device, start)
        self._flush_and_draw()
        return _elapsed(self.device, t, start, end)

    def _flush_and_draw(self) -> None:
        """GPU: write SCRUB_BYTES of other data (no input stays in the L2) and draw the secret
        sample positions of this batch's outputs."""
        if self.device != "cuda":
            return
        if self.scrub is None:
            self.scrub = torch.empty(SCRUB_BYTES, dtype=torch.uint8, device="cuda")
        self.scrub.zero_()
        self._draw_samples(len(self.seeds))

    def _draw_samples(self, count: int) -> None:
        words = self.out_bytes // 4
        n = SAMPLE_WORDS if words else 0
        self.idx = torch.randint(0, max(words, 1), (count, n), generator=self.gen, device=self.device)
        self.samples = torch.empty((count, n), dtype=torch.int32, device=self.device)

    def arm(self, addresses: list[int]) -> None:
        """Stage the outputs' device addresses for `sample` (before the runner's last kernel)."""
        if self.gather is None:
            self.gather = Gather()
        self.armed = self.gather.stage(addresses)

    def sample(self) -> None:
        """Inside the timed window: read the sampled words of every armed output."""
        if self.idx is None or self.armed is None or self.idx.shape[1] == 0:
            return
        self.gather(self.armed, self.idx, self.samples, self.out_bytes)
        torch.cuda.synchronize()

    def verify(self, outputs: list[torch.Tensor], where: str) -> tuple[list, float]:
        """(problems, max abs error): every input, output and sample of the batch just timed."""
        from evaluator.tasks import base

        worst = 0.0
        for k, (seed, raw) in enumerate(zip(self.seeds, outputs)):
            call = f"{where}, call {k + 1} of {len(self.seeds)}"
            try:
                built = self._unchanged_inputs(k, seed)
                if built is None:
                    raise Failure(("input_modified", f"{call}: custom_kernel modified its input tensors"))
                out = raw.view(self.task.output_dtype).view(self.out_shape)
                if self.device == "cuda" and self.idx is not None and self.idx.shape[1]:
                    now = raw[: (self.out_bytes // 4) * 4].view(torch.int32)[self.idx[k]]
                    if not torch.equal(now, self.samples[k]):
                        raise Failure(("deferred_write", f"{call}: the output changed after the call "
                                                         "had answered (work still running after it)"))
                with base.full_fp32():
                    gold = self.task.reference_fp32(*built)
                worst = max(worst, checks.compare(out, gold, self.task.tolerance, call))
            except Failure as f:
                return [list(p) for p in f.problems], worst
        return [], worst

    def _build(self, shape: dict, seed: int) -> list[torch.Tensor]:
        """One call's inputs. On the GPU they are drawn in one pass each (evaluator/common/fastgen.py):
        writing inputs is most of what a batch costs outside its window. EVALUATOR_FAST_INPUTS=0
        (the operator's, for bench/judge_clock.py's `ab` step) keeps torch's draws."""
        from evaluator.tasks import base

        if os.environ.get("EVALUATOR_FAST_INPUTS", "1") == "0":
            return self.task.make_inputs(shape, seed, self.device)
        with base.fast_inputs():
            return self.task.make_inputs(shape, seed, self.device)

    def _prints(self, tensors) -> torch.Tensor | None:
        """The keyed fingerprints of one call's inputs (GPU fast path, left on the device), or None."""
        prints = [fastcheck.fingerprint(x, self.key) for x in tensors]
        return None if any(p is None for p in prints) else torch.stack(prints)

    def _unchanged_inputs(self, k: int, seed: int) -> list[torch.Tensor] | None:
        """Call k's inputs, private to this process, when the slot still holds what fill wrote;
        None when it does not. With fingerprints, the slot is copied first and the copy is both
        checked and used for the gold answer, so nothing written to the slot later can matter;
        without them the inputs are built again from the seed and compared byte for byte."""
        if self.prints and self.prints[k] is not None:
            private = [x.clone() for x in self.slot(k)]
            return private if torch.equal(self._prints(private), self.prints[k]) else None
        built = self._build(self.shape, seed)
        return built if all(checks.same_bytes(a, b) for a, b in zip(self.slot(k), built)) else None

    def probe(self) -> float:
        """GPU: the shortest of PROBE_COUNT launches of a one-element kernel, each waited for (ms
        on the host's clock). On an idle device a few hundredths of a millisecond; while another
        process's kernel is resident, the device time-slices the two contexts and each launch
        waits for the other's slice. Work that a stopped runner left running is such a kernel
        (docs/evaluator.md, "Work left running"). The shortest of several, so that this
        process being scheduled late once does not read as a busy device. CPU: 0."""
        if self.device != "cuda":
            return 0.0
        if getattr(self, "probe_cell", None) is None:
            self.probe_cell = torch.zeros(1, device="cuda")
        best = float("inf")
        for _ in range(PROBE_COUNT):
            t = time.perf_counter()
            self.probe_cell.add_(1)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter() - t) * 1e3)
        return best

    def _events(self):
        if self.device != "cuda":
            return None, None
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def _now(device, start):
    if device == "cuda":
        start.record()
        return None
    return time.perf_counter()


def _elapsed(device, t, start, end) -> float:
    if device == "cuda":
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    return (time.perf_counter() - t) * 1e3


class Gather:
    """samples[k, j] = word idx[k, j] of output k, for all outputs in one launch (Triton): the
    part of the check that lies inside the timed window costs microseconds, not a pass over the
    outputs. Falls back to one indexing op per output where the kernel cannot run."""

    def __init__(self):
        self.kernel = None
        self.pinned = None  # page-locked host memory, allocated once: pinning it is a driver call
        try:
            from evaluator.judge._gather import gather_words

            self.kernel = gather_words
        except Exception:  # noqa: BLE001 - a missing Triton means the torch fallback
            self.kernel = None

    def stage(self, addresses: list[int]):
        """(addresses, the same in pinned host memory): staged while the runner's calls still run,
        with no device work, which would have to wait for the runner's context to yield the GPU."""
        if self.pinned is None or self.pinned.numel() < len(addresses):
            self.pinned = torch.empty(max(len(addresses), 512), dtype=torch.int64).pin_memory()
        # the last batch's copy out of it has finished: sample() synchronizes after it
        pinned = self.pinned[: len(addresses)]
        pinned.copy_(torch.tensor(addresses, dtype=torch.int64))
        return list(addresses), pinned

    def __call__(self, staged, idx, samples, nbytes: int):
        from evaluator.wire.ipc import view

        addresses, pinned = staged
        count, n = idx.shape
        if self.kernel is not None:
            try:
                addrs = pinned.to("cuda", non_blocking=True)
                block = 64  # SAMPLE_WORDS: one program per output
                self.kernel[(count, math.ceil(n / block))](addrs, idx, samples, n, BLOCK=block)
                return
            except Exception:  # noqa: BLE001
                self.kernel = None
        for k, address in enumerate(addresses):
            samples[k] = view(address, nbytes)[: (nbytes // 4) * 4].view(torch.int32)[idx[k]]


# ---- the process ----------------------------------------------------------------------------

class Server:
    """`python -m evaluator.judge.checker`: a Checker behind the control channel, inputs shared and
    outputs mapped through CUDA IPC."""

    def __init__(self, task: str, device: str, in_fd: int, out_fd: int):
        from evaluator.wire import ipc
        from evaluator.tasks import get_task

        self.inp, self.out = in_fd, out_fd
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.ones(1, device="cuda").sum().item()
        self.checker = Checker(get_task(task), "cuda")
        self.ipc = ipc
        self.mapper = ipc.Mapper(pin=True)  # a batch's output mappings stay put until it is verified
        self.addresses: list[int] = []

    def send(self, **msg):
        channel.send(self.out, msg)

    def serve(self):
        self.send(t=CheckerReply.HELLO, pid=os.getpid(), uid=os.getuid())
        spin = 0.0
        while True:
            msg = channel.recv(self.inp, None, spin)
            op = msg.get("op")
            # after `arm` the next message, `sample`, comes inside the window: poll for it
            spin = SPIN_S if op == CheckerOp.ARM else 0.0
            if op == CheckerOp.EXIT or op is None:
                return
            try:
                self.send(t=CheckerReply.OK, **getattr(self, f"op_{op}")(msg))
            except Failure as f:
                self.send(t=CheckerReply.OK, problems=[list(p) for p in f.problems], worst=0.0)
            except self.ipc.IpcError as e:
                self.send(t=CheckerReply.OK, problems=[["protocol", f"protocol violation: {e}"]], worst=0.0)
            except Exception as e:  # noqa: BLE001 - the judge turns this into an evaluator error
                self.send(t=CheckerReply.ERROR, message=f"{type(e).__name__}: {e}"[:2000],
                          trace=traceback.format_exc()[-4000:])

    def op_ping(self, msg):
        return {}

    def op_plan(self, msg):
        return self.checker.plan(msg["shape"])

    def op_buffer(self, msg):
        self.checker.use_buffer(None)
        torch.cuda.empty_cache()
        buf = torch.empty(int(msg["slots"]) * self.checker.slot_bytes, dtype=torch.uint8, device="cuda")
        self.checker.use_buffer(buf)
        return {"desc": self.ipc.export(buf), "nbytes": buf.numel()}

    def op_fill(self, msg):
        self.addresses = []
        self.mapper.release()
        self.checker.armed = None
        gen_ms = self.checker.fill([int(s) for s in msg["seeds"]])
        return {"gen_ms": gen_ms, "probe_ms": self.checker.probe(), "write": self.checker.last_write}

    def op_refresh(self, msg):
        self.addresses = []
        self.mapper.release()
        self.checker.armed = None
        gen_ms = self.checker.refresh()
        return {"gen_ms": gen_ms, "probe_ms": self.checker.probe()}

    def op_probe(self, msg):
        return {"probe_ms": self.checker.probe()}

    def op_arm(self, msg):
        self.checker.armed = None
        descs = msg.get("outputs")
        if not isinstance(descs, list) or len(descs) != len(self.checker.seeds):
            raise self.ipc.IpcError("one memory descriptor per call is required")
        n = self.checker.out_bytes
        before = self.mapper.opened
        self.addresses = [self.mapper.address(d, n) for d in descs]
        self.checker.arm(self.addresses)
        return {"opened": self.mapper.opened - before}

    def op_sample(self, msg):
        if self.checker.armed is None:
            raise self.ipc.IpcError("no outputs were described before the sample")
        stamps = [time.monotonic()]  # the operator's diagnostics (EVALUATOR_SAMPLES_DIR)
        self.checker.sample()
        stamps.append(time.monotonic())
        return {"stamps": stamps}

    def op_verify(self, msg):
        outputs = [self.ipc.view(a, self.checker.out_bytes) for a in self.addresses]
        problems, worst = self.checker.verify(outputs, str(msg.get("where", ""))[:200])
        self.addresses = []
        return {"problems": problems, "worst": worst}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m evaluator.judge.checker")
    p.add_argument("--task", required=True)
    p.add_argument("--in-fd", type=int, required=True)
    p.add_argument("--out-fd", type=int, required=True)
    p.add_argument("--drop-to", type=int, default=None)
    args = p.parse_args(argv)
    if args.drop_to is not None and os.geteuid() == 0:
        needed = [sys.prefix, sys.base_prefix, sys.exec_prefix, isolation.PACKAGE_ROOT,
                  *[d for d in sys.path if d and os.path.isdir(d)]]
        notes = isolation.drop_privileges(args.drop_to, args.drop_to, needed)
        if notes:
            sys.stderr.write("; ".join(notes) + "\n")
    isolation.make_undumpable()
    os.chdir(os.environ.get("HOME") or "/")
    Server(args.task, "cuda", args.in_fd, args.out_fd).serve()
    return 0


if __name__ == "__main__":
    # the judge waits for this exit: os._exit once the output is flushed, as `python -m evaluator`
    # ends (cli.finish), without Python's own shutdown of torch and CUDA
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
