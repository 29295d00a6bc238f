"""One call of a kernel through the control channel, the same for the candidate's runner and the
trusted baseline runner: prepare, go, done, result, then every check on the bytes the judge reads.

The judge builds the inputs and the gold answer itself from the call's seed. The runner builds
the same inputs, makes the call and stores the output's bytes in its output file; the judge reads
them through its own descriptor and rebuilds a tensor with the dtype and shape it expects. The
output is bound to the moment the call returned by a keyed checksum (the key is sent with `go`):
work left running after the return that changes the answer is a deferred write.

A failed check raises checks.Failure; for the baseline the judge turns that into the evaluator's
own error (its output is the reference, so any failure there is the evaluator's).
"""
from __future__ import annotations

import dataclasses
import os
import time

import torch

from evaluator.common import checks
from evaluator.common import timing
from evaluator.common.checks import Failure
from evaluator.judge.link import Link

# per call: the first call on a shape may JIT-compile or autotune; later ones may not take long
FIRST_CALL_LIMIT_S = float(os.environ.get("EVALUATOR_FIRST_CALL_LIMIT_S", 120))
CALL_LIMIT_S = float(os.environ.get("EVALUATOR_CALL_LIMIT_S", 30))
SETTLE_S = 0.01  # check calls: how long the runner waits for late writers before comparing


def call_limit_s(first: bool) -> float:
    return FIRST_CALL_LIMIT_S if first else CALL_LIMIT_S


@dataclasses.dataclass(frozen=True)
class Call:
    """One call as the judge checked it."""
    out: torch.Tensor  # the judge's own tensor, rebuilt from the bytes the runner stored
    ms: float  # the runner's own time for the call: trusted only from the baseline runner
    wall_ms: float  # the judge's clock from `go` to `done`
    err: float  # the largest absolute error against the gold answer
    checksum_ms: float  # the judge's time to recompute the output's checksum


class Caller:
    """Makes calls for one evaluation: the task, the device, the secret master seed (the source of
    every checksum key), and the judge's staging memory for the bytes it reads."""

    def __init__(self, task, device: str, master: int):
        from evaluator.tasks import base

        self.task, self.device, self.master = task, device, master
        self.full_fp32 = base.full_fp32
        self.derive = base.derive_seed
        self.count = 0
        self.staging = None

    def call(self, link: Link, shape: dict, seed: int, where: str, *, check: bool = False,
             keep: bool = False, profile: bool = False, first: bool = False) -> Call:
        """`check`: the runner hands back its inputs as built (compared with the judge's before the
        call and after it: a submission that writes into its inputs, or into how they are made,
        fails) and waits SETTLE_S for late host threads before it compares the output with its
        copy taken at the return. `keep`: the runner keeps the inputs alive (no address reuse
        across the correctness calls). `profile`: the call records which operators ran."""
        inputs = self.task.make_inputs(shape, seed, self.device)
        with self.full_fp32():
            gold = self.task.reference_fp32(*inputs)
        timing.sync(self.device)
        out_bytes = gold.numel() * torch.empty((), dtype=self.task.output_dtype).element_size()
        in_bytes = [x.numel() * x.element_size() for x in inputs] if check else []
        size = link.work.ensure_buffer(out_bytes + sum(in_bytes))
        deadline = time.monotonic() + call_limit_s(first)
        prepared = link.prepare({"shape": dict(shape), "seed": seed, "snap": True,
                                 "settle": SETTLE_S if check else 0.0, "back": check, "keep": keep,
                                 "profile": profile, "size": size}, deadline)
        if check:
            self._inputs_as_built(link, prepared, inputs, in_bytes, where)
        self.count += 1
        key = self.derive(self.master, "checksum", self.count)
        t = time.perf_counter()
        done = link.go(size, key, deadline)
        wall = (time.perf_counter() - t) * 1e3
        ms = checks.number(done, "ms")
        claimed = done.get("fp")
        if claimed is not None and (isinstance(claimed, bool) or not isinstance(claimed, int)):
            raise checks.protocol("'fp' must be an integer")
        result = link.result(deadline)
        problems = checks.result_problems(result)
        if problems:
            raise Failure(*[(c, f"{where}: {m}") for c, m in problems])
        checks.check_meta(result, dtype=self.task.output_dtype, shape=tuple(gold.shape), device=self.device,
                          where=where)
        if result.get("stored") is not True:
            raise checks.protocol("the runner did not store the output")
        data = self.snapshot(link.work, out_bytes + sum(in_bytes))
        out = checks.from_bytes(data[:out_bytes], self.task.output_dtype, tuple(gold.shape), self.device)
        t = time.perf_counter()
        actual = checks.fingerprint(checks.raw_bytes(out), key)
        checksum_ms = (time.perf_counter() - t) * 1e3
        if claimed != actual:
            raise Failure(("deferred_write", f"{where}: the output stored after the call is not the "
                                             "output the call returned (work done after it returned)"))
        err = checks.compare(out, gold, self.task.tolerance, where)
        if check and not self._same_inputs(data[out_bytes:], inputs, in_bytes):
            raise Failure(("input_modified", f"{where}: custom_kernel modified its input tensors"))
        return Call(out, ms, wall, err, checksum_ms)

    def _inputs_as_built(self, link: Link, prepared: dict, inputs, in_bytes: list, where: str) -> None:
        """The inputs as the runner built them, before any submission code saw them."""
        if prepared.get("stored") is not True:
            raise checks.protocol("the runner did not store its inputs")
        if not self._same_inputs(self.snapshot(link.work, sum(in_bytes)), inputs, in_bytes):
            raise Failure(("input_modified", f"{where}: the runner's inputs differ from the judge's "
                                             "before the call: the submission tampered with how "
                                             "inputs are made"))

    def _same_inputs(self, data: torch.Tensor, inputs, in_bytes: list) -> bool:
        offset = 0
        for x, n in zip(inputs, in_bytes):
            stored = checks.from_bytes(data[offset:offset + n], x.dtype, tuple(x.shape), self.device)
            if not checks.same_bytes(stored, x):
                return False
            offset += n
        return True

    def snapshot(self, work, nbytes: int) -> torch.Tensor:
        """The first nbytes of the work directory's output file, copied into the judge's own staging
        memory (page-locked on the GPU, so that the copy to the device is one fast DMA)."""
        if self.staging is None or self.staging.numel() < nbytes:
            self.staging = torch.empty(max(nbytes, 1 << 20), dtype=torch.uint8, pin_memory=self.device == "cuda")
        view = self.staging[:nbytes]
        if nbytes and work.read_buffer(view.numpy()) != nbytes:
            raise checks.protocol("the output buffer is shorter than the output")
        return view

