"""Does torch.compile of the same reference run at the same speed after every cold compile?

Calibration compares torch.compile-as-a-kernel with the torch.compile baseline, and the two sides
compile separately: the baseline runner in the judge's persistent cache, the candidate's runner
cold in a cache of its own. Inductor autotunes its reduction kernels among a few configurations at
the first call, so two cold compiles may pick differently (docs/bench/gpu-compile-variance.md).
This script compiles each task's reference in COMPILES fresh processes, each with an empty
inductor and Triton cache, and times each in a loop (L2 flushed, median of 50 calls). If the
medians differ by more than the 3 % calibration bound between cold compiles, the lottery is
torch.compile's own. Then COMPILES more processes share one warm cache (the same kernels and
picks): if those still differ, the variation is the process's, not the autotuner's.

With `--placements P`, each warm process instead times eager, torch.compile and the task's example
(examples/<task>.py) side by side on P sets of inputs and outputs made at different places in
device memory (a spacer of random size allocated between them), interleaved call by call, 60
calls each (L2 flushed before each). A kernel whose median moves between processes but not
between placements in one process varies with the process; one that moves between placements
varies with where its memory lies.

With `--batch K`, each warm process times the three as the judge does (K calls back to back on
K inputs held in slots of one buffer, the outputs alive until the next batch, the L2 flushed
before each batch, ten batches each): whether torch.compile's time per call in a batch moves
between processes, as it does between judged evaluations.

    python3 bench/gpu_compile_variance.py [--json OUT] [--tasks softmax] [--placements 3 | --batch 70]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILES = 4
CHILD = r"""
import json, statistics, sys, torch
sys.path.insert(0, sys.argv[2])
from evaluator.tasks import get_task
task = get_task(sys.argv[1])
shape = dict(task.bench_shapes("cuda")[0])
sets = [task.make_inputs(shape, 7 + k, "cuda") for k in range(4)]
fn = torch.compile(task.reference, dynamic=False)
for k in range(3):
    fn(*sets[k])
torch.cuda.synchronize()
buf = torch.empty((256 << 20) // 4, dtype=torch.int32, device="cuda")
evs = []
for i in range(50):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    buf.zero_()
    s.record()
    fn(*sets[i % 4])
    e.record()
    evs.append((s, e))
torch.cuda.synchronize()
print(json.dumps({"median_us": statistics.median(s.elapsed_time(e) * 1e3 for s, e in evs)}))
"""


# both modes: argv task, repository root, P or K, the example's path; the three kernels as `fns`
KERNELS = r"""
import importlib.util, json, random, statistics, sys, torch
sys.path.insert(0, sys.argv[2])
from evaluator.tasks import get_task
task = get_task(sys.argv[1])
shape = dict(task.bench_shapes("cuda")[0])
spec = importlib.util.spec_from_file_location("example", sys.argv[4])
example = importlib.util.module_from_spec(spec); spec.loader.exec_module(example)
fns = {"eager": task.reference, "compile": torch.compile(task.reference, dynamic=False),
       "example": example.custom_kernel}
"""

PLACED = KERNELS + r"""
rng = random.Random()
keep, places = [], []
for p in range(int(sys.argv[3])):
    keep.append(torch.empty(rng.randrange(1, 64) << 21, dtype=torch.uint8, device="cuda"))  # spacer
    inputs = [task.make_inputs(shape, 7 + 4 * p + k, "cuda") for k in range(2)]
    outs = {name: [fn(*x) for x in inputs] for name, fn in fns.items()}  # each side's own outputs here
    places.append(inputs)
torch.cuda.synchronize()
buf = torch.empty((256 << 20) // 4, dtype=torch.int32, device="cuda")
times = {name: [[] for _ in places] for name in fns}
for i in range(60):
    for p, inputs in enumerate(places):
        for name, fn in fns.items():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            buf.zero_()
            s.record()
            fn(*inputs[i % 2])
            e.record()
            times[name][p].append((s, e))
torch.cuda.synchronize()
print(json.dumps({name: [statistics.median(s.elapsed_time(e) * 1e3 for s, e in per) for per in ps]
                  for name, ps in times.items()}))
"""


# as the judge times them: K calls back to back on K inputs in slots of one buffer, the outputs alive
# until the next batch, the L2 flushed before each batch; the time per call from events around it
BATCHED = KERNELS + r"""
count = int(sys.argv[3])
first = task.make_inputs(shape, 7, "cuda")
sizes = [(t.numel() * t.element_size() + 255) // 256 * 256 for t in first]
slot = sum(sizes)
buf = torch.empty(count * slot, dtype=torch.uint8, device="cuda")
slots = []
for k in range(count):
    made, at, views = task.make_inputs(shape, 7 + k, "cuda"), k * slot, []
    for t, n in zip(made, sizes):
        v = buf[at:at + t.numel() * t.element_size()].view(t.dtype).view(t.shape)
        v.copy_(t); views.append(v); at += n
    slots.append(views)
for fn in fns.values():
    fn(*slots[0])
flush = torch.empty((256 << 20) // 4, dtype=torch.int32, device="cuda")
times, outs = {name: [] for name in fns}, None
for r in range(10):
    for name, fn in fns.items():
        outs = None
        flush.zero_()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        outs = [fn(*slots[k]) for k in range(count)]
        e.record()
        torch.cuda.synchronize()
        times[name].append(s.elapsed_time(e) * 1e3 / count)
print(json.dumps({name: [statistics.median(ts)] for name, ts in times.items()}))
"""


def placed(task: str, cache: str, placements: int, batch: int = 0) -> dict:
    """One warm process: {side: [median us per placement]} (with `batch`: [median us per call])."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
           "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
    example = ROOT / "examples" / f"{task}.py"
    child, n = (BATCHED, batch) if batch else (PLACED, placements)
    p = subprocess.run([sys.executable, "-c", child, task, str(ROOT), str(n), str(example)], env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def by_placement(task: str, placements: int, processes: int = COMPILES + 1, batch: int = 0) -> dict:
    """Warm processes (the first compiles into the shared cache and is not counted)."""
    with tempfile.TemporaryDirectory(prefix="compile-var-placed-") as cache:
        runs = [placed(task, cache, placements, batch) for _ in range(processes + 1)][1:]
    row = {"task": task, "placements": placements, "batch": batch, "processes": runs}
    for name in runs[0]:
        per_process = [statistics.median(r[name]) for r in runs]
        within = max(max(r[name]) / min(r[name]) for r in runs)
        row[name] = {"between_processes": max(per_process) / min(per_process), "within_process": within}
        print(f"{task:20s} {name:8s} per process " + " ".join(f"{t:7.1f}" for t in per_process)
              + f"   max/min between {row[name]['between_processes']:.4f}, within one (worst) {within:.4f}",
              flush=True)
    return row


def one(task: str, cache: str | None = None) -> float:
    """One process: compile (in `cache`, or in an empty one) and time. Median in us."""
    with tempfile.TemporaryDirectory(prefix="compile-var-") as tmp:
        cache = cache or tmp
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(cache, "inductor"),
               "TRITON_CACHE_DIR": os.path.join(cache, "triton")}
        p = subprocess.run([sys.executable, "-c", CHILD, task, str(ROOT)], env=env, capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-2000:])
        return json.loads(p.stdout.strip().splitlines()[-1])["median_us"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--tasks", nargs="+", default=["softmax", "layernorm"])
    ap.add_argument("--placements", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0, help="K calls a batch, as the judge times them")
    args = ap.parse_args()
    rows = []
    for task in args.tasks:
        if args.placements or args.batch:
            rows.append(by_placement(task, args.placements, batch=args.batch))
            continue
        times = [one(task) for _ in range(COMPILES)]
        # the same compiled kernels (one shared cache) in fresh processes: what varies is the
        # process (its memory placement), not the autotuner's pick
        with tempfile.TemporaryDirectory(prefix="compile-var-warm-") as cache:
            warm = [one(task, cache) for _ in range(COMPILES + 1)][1:]
        rows.append({"task": task, "cold_compile_medians_us": times, "max_over_min": max(times) / min(times),
                     "warm_cache_medians_us": warm, "warm_max_over_min": max(warm) / min(warm)})
        for label, ts in (("cold", times), ("warm", warm)):
            print(f"{task:20s} {label} " + " ".join(f"{t:7.1f}" for t in ts)
                  + f"   max/min {max(ts) / min(ts):.3f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
