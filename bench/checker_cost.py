"""What a timed batch costs the checker outside the window, on a GPU: writing the inputs (`fill`)
and verifying the outputs (`verify`), the torch path against the fast path (evaluator/common/fastgen.py
draws the inputs, evaluator/common/fastcheck.py checks them), per call and per part, for every task's
benchmark shapes; whether the two paths agree on honest, wrong, non-finite and modified data; and
whether the fast path's inputs keep each input law's shape. Results in docs/bench/checker-cost.md.

    python bench/checker_cost.py OUTDIR [--calls K] [--tasks a,b]

Each task's batch is K calls (default 16) of its first benchmark shape, as many as fit in 16 GiB.
Writes OUTDIR/checker-cost.json and prints a table.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluator.common import fastcheck
from evaluator.common import fastgen  # noqa: E402
from evaluator.judge.checker import Checker  # noqa: E402
from evaluator.tasks import TASKS, base, get_task  # noqa: E402

MEMORY = 16 << 30


@contextlib.contextmanager
def torch_path(checker=None):
    """The checker on its torch path: inputs drawn by torch, rebuilt and compared byte for byte,
    torch's comparison."""
    saved, prints = (fastcheck._kernels, fastgen._kernels), checker.prints if checker else None
    fastcheck._kernels = fastgen._kernels = False
    if checker:
        checker.prints = []
    try:
        yield
    finally:
        fastcheck._kernels, fastgen._kernels = saved
        if checker:
            checker.prints = prints


def timed(fn, repeat: int = 1) -> float:
    """Median ms of fn() over `repeat` runs, the device synchronized around each."""
    times = []
    for _ in range(repeat):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def parts(task, shape: dict) -> dict:
    """ms per call of each part, over four seeds (one per input distribution)."""
    got = {}
    for seed in range(4):
        for k, v in _parts_of(task, shape, seed).items():
            got.setdefault(k, []).append(round(v, 4))
    return got


def _parts_of(task, shape: dict, seed: int) -> dict:
    inputs = task.make_inputs(shape, seed, "cuda")
    with base.full_fp32():
        gold = task.reference_fp32(*inputs)
    out = task.reference(*inputs).to(task.output_dtype)
    row = {
        "make_inputs": timed(lambda: task.make_inputs(shape, seed, "cuda"), 3),
        "make_inputs_fast": timed(lambda: fast_inputs(task, shape, seed), 3),
        "copy": timed(lambda: [x.clone() for x in inputs], 3),
        "fingerprint": timed(lambda: [fastcheck.fingerprint(x, 12345) for x in inputs], 3),
        "same_bytes": timed(lambda: [torch.equal(x, x.clone()) for x in inputs], 3),
        "gold": timed(lambda: task.reference_fp32(*inputs), 3),
        "compare_fast": timed(lambda: fastcheck.compare(out, gold, task.tolerance.atol, task.tolerance.rtol), 3),
    }
    with torch_path():
        row["compare_torch"] = timed(lambda: task.tolerance.compare(out, gold), 3)
    return row


def fast_inputs(task, shape: dict, seed: int):
    with base.fast_inputs():
        return task.make_inputs(shape, seed, "cuda")


def laws(rows: int = 4096, cols: int = 8192) -> dict:
    """Per input law, the fast path's draws beside torch's: spread, kurtosis and the 99.9th
    percentile of |x|; `ok` when the two agree within sampling error."""
    found = {}
    for dist in range(base.N_DISTRIBUTIONS):
        row = {}
        for path in ("torch", "fast"):
            with base.fast_inputs() if path == "fast" else contextlib.nullcontext():
                x = base.signed_matrix(base.generator(77 + dist, "cuda"), rows, cols, "cuda", dist).double()
            c = x - x.mean()
            row[path] = {"mean": float(x.mean()), "std": float(x.std()),
                         "kurtosis": float((c ** 4).mean() / (c ** 2).mean() ** 2),
                         "q999": float(x.abs().flatten().kthvalue(int(0.999 * x.numel())).values)}
        t, f = row["torch"], row["fast"]
        row["ok"] = (abs(f["mean"]) < 0.01 and abs(f["std"] - 1) < 0.01 and abs(f["q999"] / t["q999"] - 1) < 0.03
                     and (dist == 3 or abs(f["kurtosis"] / t["kurtosis"] - 1) < 0.05))
        found[dist] = row
    return found


def batch_costs(task, shape: dict, calls: int) -> dict:
    """ms per call of fill and verify on one buffer of `calls` slots, each path on inputs it wrote
    itself (their draws differ), and each path's verdicts on honest, spoiled and modified data."""
    checker = Checker(task, "cuda")
    plan = checker.plan(shape)
    calls = max(1, min(calls, MEMORY // (plan["slot_bytes"] + plan["out_bytes"])))
    checker.use_buffer(torch.empty(calls * plan["slot_bytes"], dtype=torch.uint8, device="cuda"))
    seeds = list(range(1000, 1000 + calls))
    result = {"calls": calls, "honest": {}, "checks": {}}
    checker.fill(seeds[:1])  # the kernels compile here, not in the figures
    for path in ("torch", "fast"):
        with torch_path(checker) if path == "torch" else contextlib.nullcontext():
            result[f"fill_{path}_ms"] = checker.fill(seeds) / calls
            outs = [task.reference(*checker.slot(k)).to(task.output_dtype).contiguous().reshape(-1).view(torch.uint8)
                    for k in range(calls)]
            result[f"verify_{path}_ms"] = timed(lambda: verify(checker, outs)) / calls
            result["honest"][path] = verify(checker, outs)
            result["checks"][path] = agreement(task, checker, outs)
    checker.use_buffer(None)
    return result


def verify(checker: Checker, outs: list):
    """The window's sample of the outputs, then the verification, as a batch has them."""
    checker.arm([o.data_ptr() for o in outs])
    checker.sample()
    return checker.verify(outs, "bench")


def agreement(task, checker: Checker, outs: list) -> dict:
    """The verdicts on a wrong output, a NaN and a modified input (the path is the caller's)."""
    found = {}
    wrong = [o.clone() for o in outs]
    last = wrong[-1].view(task.output_dtype)
    cases = {
        "scaled_output": lambda: last.mul_(1.001),
        "nan_output": lambda: last.view(-1)[last.numel() // 2].fill_(float("nan")),
    }
    for name, spoil in cases.items():
        wrong[-1].copy_(outs[-1])
        spoil()
        problems, worst = verify(checker, wrong)
        found[name] = [problems[0][0] if problems else None, worst]
    slot = checker.slot(len(outs) - 1)[0].reshape(-1).view(torch.uint8)
    slot[slot.numel() // 3] ^= 1
    problems, _ = verify(checker, outs)
    found["one_input_bit"] = problems[0][0] if problems else None
    slot[slot.numel() // 3] ^= 1
    return found


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--calls", type=int, default=16)
    p.add_argument("--tasks", default=",".join(TASKS))
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "tasks": {}, "laws": laws()}
    print("laws", json.dumps(report["laws"]), flush=True)
    for name in a.tasks.split(","):
        task = get_task(name)
        shape = task.bench_shapes("cuda")[0]
        row = {"shape": shape, "parts": parts(task, shape), **batch_costs(task, shape, a.calls)}
        report["tasks"][name] = row
        print(name, shape, json.dumps({k: v for k, v in row.items() if k not in ("shape",)}), flush=True)
    (out / "checker-cost.json").write_text(json.dumps(report, indent=1))
    wrong = [n for n, r in report["tasks"].items()
             if r["honest"]["fast"][0] or r["honest"]["torch"][0]
             or any(c["one_input_bit"] != "input_modified" for c in r["checks"].values())
             or any(r["checks"]["fast"][k][0] != r["checks"]["torch"][k][0] for k in ("scaled_output", "nan_output"))]
    wrong += [f"law {d}" for d, r in report["laws"].items() if not r["ok"]]
    if wrong:
        print("the paths disagree on:", wrong, flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
