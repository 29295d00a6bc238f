"""The card's ceilings and every task's baselines on a GPU, as published in docs/bench/gpu-baselines.md.

    python bench/gpu_baselines.py --json OUT.json

Ceilings: a large device-to-device copy (bytes read + written) and an 8192^3 bf16 matrix product
on random data. Per task and benchmark shape: eager, torch.compile (default) and torch.compile
(max-autotune-no-cudagraphs) medians with CUDA events, the L2 flushed before every call, inputs
rotated over several fresh sets, 10 warm-ups then 50 timed calls, and the roofline floor
(bytes / copy bandwidth or FLOPs / matmul rate, whichever is larger).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.tasks import TASKS  # noqa: E402

FLUSH = None


def flush_l2():
    global FLUSH
    if FLUSH is None:
        FLUSH = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")
    FLUSH.zero_()


def time_calls(fn, input_sets, warmup=10, reps=50):
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        args = input_sets[i % len(input_sets)]
        flush_l2()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), times


def ceilings():
    n = 2 * 2**30  # 2 GiB each way
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    med, _ = time_calls(lambda: dst.copy_(src), [()], warmup=3, reps=20)
    bandwidth = 2 * n / (med / 1e3)
    del src, dst
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    med, _ = time_calls(lambda: a @ b, [()], warmup=3, reps=20)
    flops = 2 * 8192**3 / (med / 1e3)
    return {"copy_bytes_per_s": bandwidth, "bf16_flop_per_s": flops}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", required=True)
    parser.add_argument("--tasks", default=",".join(TASKS))
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "shapes": []}
    out["ceilings"] = ceilings()
    print(f"ceilings: copy {out['ceilings']['copy_bytes_per_s']/1e12:.2f} TB/s, "
          f"bf16 matmul {out['ceilings']['bf16_flop_per_s']/1e12:.0f} TFLOP/s", flush=True)
    for name in args.tasks.split(","):
        task = TASKS[name]
        for shape in task.bench_shapes_gpu:
            input_sets = [task.make_inputs(shape, 1000 + i, "cuda") for i in range(3)]
            row = {"task": name, "shape": shape}
            floor = task.floor_ms(shape, bandwidth_bytes_s=out["ceilings"]["copy_bytes_per_s"],
                                  peak_flop_s=out["ceilings"]["bf16_flop_per_s"])
            row["floor_ms"] = floor
            variants = {
                "eager": task.reference,
                "compile": torch.compile(task.reference),
                "compile_max_autotune": torch.compile(task.reference, mode="max-autotune-no-cudagraphs"),
            }
            for label, fn in variants.items():
                t0 = time.perf_counter()
                fn(*input_sets[0])
                torch.cuda.synchronize()
                first_s = time.perf_counter() - t0
                med, _ = time_calls(fn, input_sets)
                row[f"{label}_ms"] = med
                row[f"{label}_first_call_s"] = first_s
            out["shapes"].append(row)
            Path(args.json).write_text(json.dumps(out, indent=1))  # partial results survive a timeout
            print(f"{name} {shape}: eager {row['eager_ms']:.3f} compile {row['compile_ms']:.3f} "
                  f"max-autotune {row['compile_max_autotune_ms']:.3f} floor {floor:.3f} ms", flush=True)
            del input_sets
            torch.cuda.empty_cache()
    Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
