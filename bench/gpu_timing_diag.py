"""Why did the runner read eager and torch.compile 1.2-2.4x slower than an in-process loop?

One process, no judge: the same functions (eager reference, torch.compile of it, the example
kernel) timed in several regimes, medians in microseconds, on the GPU benchmark shape of the
memory-bound tasks:

  loop      flush, start, fn, end back to back, no synchronize between calls (do_bench style)
  sync      flush (queued), start, fn, synchronize, end; calls back to back (hot CPU, busy GPU)
  gap       as sync, with a 100 ms host sleep before each call (the judge checking the last output)
  gap+spin  as gap, plus a GPU spin of SPIN_US queued after the flush (covers the CPU's launch)
  gap+warm  as gap+spin, with WARM_MS of flush writes queued first (raises the clocks)
  burst     after the gap, 4 calls in a row (sync regime); the median of calls 2-4
  gate      as gap, through the evaluator's own timing.time_call (warm writes, flush, gate)

    python bench/gpu_timing_diag.py [--json OUT]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator import timing  # noqa: E402
from evaluator.tasks import get_task  # noqa: E402

FLUSHER = None
FAST = os.environ.get("DIAG_FAST") == "1"  # loop, sync, gap and gate only

TASKS = ("softmax", "layernorm", "gelu_bias_residual")
SETS = 4  # input sets rotated, all fresh relative to the L2 (it is flushed anyway)
N = 15
SPIN_US = 300
WARM_MS = 2.0


def load_example(task):
    path = Path(__file__).resolve().parents[1] / "examples" / f"{task}.py"
    spec = importlib.util.spec_from_file_location(f"ex_{task}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.custom_kernel


class Gpu:
    def __init__(self):
        self.buf = torch.empty((256 << 20) // 4, dtype=torch.int32, device="cuda")
        # cycles per microsecond of torch.cuda._sleep, measured once
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        s.record()
        torch.cuda._sleep(1_000_000)
        e.record()
        e.synchronize()
        self.cycles_per_us = 1_000_000 / (s.elapsed_time(e) * 1e3)
        self.flush_ms = self._flush_ms()

    def _flush_ms(self):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.buf.zero_()
        s.record()
        for _ in range(10):
            self.buf.zero_()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) / 10

    def pre(self, spin_us=0, warm_ms=0.0):
        for _ in range(int(warm_ms / self.flush_ms)):
            self.buf.zero_()
        self.buf.zero_()
        if spin_us:
            torch.cuda._sleep(int(spin_us * self.cycles_per_us))


def one(gpu, fn, inputs, spin_us=0, warm_ms=0.0):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu.pre(spin_us, warm_ms)
    s.record()
    fn(*inputs)
    torch.cuda.synchronize()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) * 1e3


def regimes(gpu, fn, sets):
    def gated():
        xs = []
        for i in range(N):
            time.sleep(0.1)
            xs.append(timing.time_call(fn, sets[i % SETS], "cuda", FLUSHER)[1] * 1e3)
        return statistics.median(xs)

    out = {}
    # loop: no synchronize per call
    evs = []
    for i in range(N):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gpu.buf.zero_()
        s.record()
        fn(*sets[i % SETS])
        e.record()
        evs.append((s, e))
    torch.cuda.synchronize()
    out["loop"] = statistics.median(s.elapsed_time(e) * 1e3 for s, e in evs)
    out["sync"] = statistics.median(one(gpu, fn, sets[i % SETS]) for i in range(N))

    def gapped(**kw):
        xs = []
        for i in range(N):
            time.sleep(0.1)
            xs.append(one(gpu, fn, sets[i % SETS], **kw))
        return statistics.median(xs)

    out["gap"] = gapped()
    if FAST:
        out["gate"] = gated()
        return out
    out["gap+spin"] = gapped(spin_us=SPIN_US)
    out["gap+warm"] = gapped(spin_us=SPIN_US, warm_ms=WARM_MS)
    xs, firsts = [], []
    for i in range(6):
        time.sleep(0.1)
        burst = [one(gpu, fn, sets[(i + k) % SETS]) for k in range(4)]
        firsts.append(burst[0])
        xs.extend(burst[1:])
    out["burst"] = statistics.median(xs)
    out["burst_first"] = statistics.median(firsts)
    out["gate"] = gated()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    global FLUSHER
    gpu = Gpu()
    FLUSHER = timing.Flusher("cuda")
    print("gate", FLUSHER.gate_note, "warm writes", FLUSHER.warm_writes, flush=True)
    rows = []
    print(f"flush {gpu.flush_ms * 1e3:.1f} us, _sleep {gpu.cycles_per_us:.0f} cycles/us", flush=True)
    for name in TASKS:
        task = get_task(name)
        shape = dict(task.bench_shapes("cuda")[0])
        sets = [task.make_inputs(shape, 1000 + k, "cuda") for k in range(SETS)]
        fns = {"eager": task.reference, "compile": torch.compile(task.reference, dynamic=False),
               "example": load_example(name)}
        for label, fn in fns.items():
            for k in range(3):
                fn(*sets[k % SETS])
            torch.cuda.synchronize()
            r = regimes(gpu, fn, sets)
            r.update(task=name, fn=label)
            rows.append(r)
            print(name, label, " ".join(f"{k}={v:.1f}" for k, v in r.items() if isinstance(v, float)),
                  flush=True)
        del sets
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps({"flush_us": gpu.flush_ms * 1e3, "gate": FLUSHER.gate_note, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
