"""Check and time the two heavy examples (matmul_bias_relu, transformer_block) on a GPU.

    python bench/tune_examples.py [--sections matmul,block,sweep,compile] [--out DIR]

Each section runs in its own process (a bad config that faults the GPU context loses only its
section) and writes DIR/<section>.json; the parent prints one table at the end.

  matmul   first-call compile time, correctness (task test shapes + 4096^3) against the fp32
           gold, config variants at 4096^3, eager and cuBLAS mm alone
  block    first-call compile time, correctness (task test shapes + both bench shapes), the
           example's time per bench shape, per-stage times, eager
  sweep    per-stage config variants of the block at both bench shapes (each variant's output
           checked against the default config's)
  final    example vs eager vs torch.compile per bench shape, interleaved in one process, in
           two timing styles: "evaluator" (synchronize after the L2 flush, so host launch
           latency counts, as in evaluator/common/timing.py) and "overlapped" (launch overlaps the
           flush: closer to device time)
  compile  torch.compile (default mode) of both task references, first-call time included

Timing: CUDA events around the call with a device synchronize before the end event (as the
evaluator does), 256 MB L2 flush before each call, median. Triton and inductor caches start
empty (fresh temp dirs) so first-call times include compilation.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("matmul", "block", "sweep", "final", "compile")
# TUNE_DRY=1: run every section on the CPU under the Triton interpreter at tiny shapes, to
# check this script before spending GPU time
DRY = os.environ.get("TUNE_DRY") == "1"
DEV = "cpu" if DRY else "cuda"
# TUNE_STAGES=attn,swiglu: the sweep section only times these keys of SWEEP (and their torch rows)
STAGES = [k for k in os.environ.get("TUNE_STAGES", "").split(",") if k]
DRY_SHAPES = {"matmul_bias_relu": [{"M": 200, "K": 64, "N": 136}],
              "transformer_block": [{"B": 2, "T": 40, "D": 256, "F": 320}]}


def _sync():
    import torch
    if not DRY:
        torch.cuda.synchronize()


def _empty_cache():
    import torch
    if not DRY:
        torch.cuda.empty_cache()


def _shapes(task):
    return DRY_SHAPES[task.name] if DRY else list(task.bench_shapes_gpu)


def _load(name):
    spec = importlib.util.spec_from_file_location(f"ex_{name}", ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Timer:
    def __init__(self):
        import torch
        self.torch = torch
        self.buf = None if DRY else torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")

    def __call__(self, fn, reps=30, warmup=5, host_sync=False):
        """Median ms. host_sync=True waits for the flush before the start event, as the
        evaluator does, so the host's launch latency is inside the window; otherwise the
        launch overlaps the flush and mostly device time is measured."""
        torch = self.torch
        if DRY:
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        # at least `warmup` calls and 20 ms of them: a GPU left idle by a compile ramps its clocks
        # up over milliseconds, and a variant timed straight after its compile read slow
        t0, n = time.perf_counter(), 0
        while n < warmup or time.perf_counter() - t0 < 0.02:
            fn()
            torch.cuda.synchronize()
            n += 1
        times = []
        for _ in range(reps):
            self.buf.zero_()
            if host_sync:
                torch.cuda.synchronize()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            torch.cuda.synchronize()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        return statistics.median(times)


def _first_call_s(fn):
    _sync()
    t = time.perf_counter()
    fn()
    _sync()
    return time.perf_counter() - t


def _check(task, fn, shape, seed=7):
    ins = task.make_inputs(shape, seed, DEV)
    out = fn(*ins)
    gold = task.reference_fp32(*ins)
    ok, max_abs, worst = task.tolerance.compare(out, gold)
    _, _, worst_eager = task.tolerance.compare(task.reference(*ins), gold)
    return {"shape": shape, "passed": ok, "max_abs": max_abs, "worst": worst,
            "eager_worst": worst_eager}


def _tflops(flop, ms):
    return flop / (ms * 1e-3) / 1e12


# ---------------------------------------------------------------------------------------------


def section_matmul(res):
    import torch
    from evaluator.tasks import get_task
    task = get_task("matmul_bias_relu")
    mm = _load("matmul_bias_relu")
    timer = Timer()
    shape = _shapes(task)[0]
    ins = task.make_inputs(shape, 1, DEV)
    res["first_call_s"] = _first_call_s(lambda: mm.custom_kernel(*ins))
    res["checks"] = [_check(task, mm.custom_kernel, s) for s in
                     list(task.test_shapes) + [{"M": 129, "K": 65, "N": 257},
                                               {"M": 1000, "K": 72, "N": 136}, shape]]
    flop = task.flops(shape)
    rows = res["rows"] = []
    a, b, bias = ins
    for label, fn in [("eager", lambda: task.reference(*ins)), ("cublas mm alone", lambda: a @ b)]:
        ms = timer(fn, reps=50, warmup=10)
        rows.append({"name": label, "ms": ms, "tflops": _tflops(flop, ms)})
    base = dict(mm.GPU_CONFIG)
    variants = [("default", {})] + (MATMUL_SWEEP[:2] if DRY else MATMUL_SWEEP)
    ref = mm.custom_kernel(*ins)
    for label, over in variants:
        cfg = dict(base, **over)
        try:
            t0 = time.perf_counter()
            out = mm.matmul_bias_relu(a, b, bias, config=cfg)
            _sync()
            comp = time.perf_counter() - t0
            diff = float((out.float() - ref.float()).abs().max())
            ms = timer(lambda: mm.matmul_bias_relu(a, b, bias, config=cfg), reps=30, warmup=5)
            rows.append({"name": f"triton {label}", "ms": ms, "tflops": _tflops(flop, ms),
                         "compile_s": comp, "max_diff_vs_default": diff, "config": cfg})
        except Exception as exc:  # a config that does not fit is a result too
            rows.append({"name": f"triton {label}", "error": repr(exc)[:300], "config": cfg})
        print(rows[-1], flush=True)


# ---------------------------------------------------------------------------------------------


def _stages(tb, ins, cfg):
    """The block's seven launches as separate closures over fixed buffers (for per-stage times)."""
    import torch
    x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down = ins
    B, T, D = x.shape
    F = w_gate.shape[1]
    M, H = B * T, D // tb.HEAD_DIM
    bf = torch.bfloat16
    xf = x.reshape(M, D)
    n1 = torch.empty((M, D), device=DEV, dtype=bf)
    qkv = torch.empty((M, 3 * D), device=DEV, dtype=bf)
    o = torch.empty((M, D), device=DEV, dtype=bf)
    h = torch.empty((M, D), device=DEV, dtype=bf)
    n2 = torch.empty((M, D), device=DEV, dtype=bf)
    g = torch.empty((M, (F + 7) // 8 * 8), device=DEV, dtype=bf)[:, :F]
    out = torch.empty((M, D), device=DEV, dtype=bf)
    c = dict(tb.GPU_CONFIG)
    c.update(cfg)
    sw = c["swiglu_short_k"] if D <= 2048 and "swiglu" not in cfg else c["swiglu"]
    stages = {
        "rmsnorm1": lambda: tb._rmsnorm(xf, w_norm1, n1, c["rmsnorm"]),
        "qkv": lambda: tb._gemm(n1, w_qkv, qkv, c["qkv"]),
        "attn": lambda: tb._attention(qkv, o, B, T, H, c["attn"]),
        "oproj": lambda: tb._gemm(o, w_o, h, c["oproj"], epi=tb.EPI_RESIDUAL, res=xf),
        "rmsnorm2": lambda: tb._rmsnorm(h, w_norm2, n2, c["rmsnorm"]),
        "swiglu": lambda: tb._gemm(n2, w_gate, g, sw, epi=tb.EPI_SWIGLU, b2=w_up),
        "down": lambda: tb._gemm(g, w_down, out, c["down"], epi=tb.EPI_RESIDUAL, res=h),
    }
    outputs = {"rmsnorm1": n1, "qkv": qkv, "attn": o, "oproj": h, "rmsnorm2": n2, "swiglu": g,
               "down": out}
    return stages, outputs


def _stage_flops(shape):
    B, T, D, F = shape["B"], shape["T"], shape["D"], shape["F"]
    M = B * T
    return {"rmsnorm1": 0, "qkv": 2.0 * M * D * 3 * D, "attn": 2.0 * B * T * T * D,
            "oproj": 2.0 * M * D * D, "rmsnorm2": 0, "swiglu": 4.0 * M * D * F,
            "down": 2.0 * M * F * D}


def section_block(res):
    import torch
    from evaluator.tasks import get_task
    task = get_task("transformer_block")
    tb = _load("transformer_block")
    timer = Timer()
    shapes = _shapes(task)
    ins0 = task.make_inputs(shapes[0], 1, DEV)
    res["first_call_s"] = _first_call_s(lambda: tb.custom_kernel(*ins0))
    del ins0
    res["checks"] = [_check(task, tb.custom_kernel, s) for s in
                     list(task.test_shapes) + [{"B": 3, "T": 200, "D": 256, "F": 700}] + shapes]
    rows = res["rows"] = []
    for shape in shapes:
        ins = task.make_inputs(shape, 1, DEV)
        flop = task.flops(shape)
        t_ex = timer(lambda: tb.custom_kernel(*ins), reps=30, warmup=5)
        t_eager = timer(lambda: task.reference(*ins), reps=30, warmup=5)
        rows.append({"shape": shape, "name": "triton example", "ms": t_ex,
                     "tflops": _tflops(flop, t_ex)})
        rows.append({"shape": shape, "name": "eager", "ms": t_eager,
                     "tflops": _tflops(flop, t_eager)})
        stages, _ = _stages(tb, ins, {})
        sf = _stage_flops(shape)
        for name, fn in stages.items():
            fn()
        for name, fn in stages.items():
            ms = timer(fn, reps=20, warmup=3)
            rows.append({"shape": shape, "name": f"stage {name}", "ms": ms,
                         "tflops": _tflops(sf[name], ms) if sf[name] else None})
        print(rows[-9:], flush=True)
        del ins, stages
        _empty_cache()


MODES = {"P": dict(PERSISTENT=True, FLATTEN=False), "F": dict(PERSISTENT=True, FLATTEN=True),
         "N": dict(PERSISTENT=False, FLATTEN=False),
         "P2": dict(PERSISTENT=True, FLATTEN=False, CTAS_PER_SM=2)}


def _v(bm, bn, bk, w, st, split, mode, group=8, **extra):
    label = f"{bm}x{bn}x{bk} w{w} s{st}{' split' if split else ''} {mode} g{group}"
    return label, dict(BM=bm, BN=bn, BK=bk, num_warps=w, num_stages=st, SPLIT=split,
                       GROUP_M=group, **MODES[mode], **extra)


# the variants near the best of wider sweeps (docs/bench/tune-examples.md): a short list keeps the
# sweep inside one device call
MATMUL_SWEEP = (
    [_v(128, 256, 64, 8, 3, False, "P", g) for g in (8, 16)]
    + [_v(128, 256, 64, 8, 3, False, "F", 16), _v(128, 256, 64, 8, 3, False, "N", 32),
       _v(128, 128, 64, 4, 3, True, "P2", 16)]
)

# per stage of the block; "resid" is the residual-epilogue GEMM (o-proj and down-proj)
SWEEP = {
    "qkv": [_v(128, 256, 64, 8, 3, False, m) for m in ("P", "F", "N")]
    + [_v(128, 128, 64, 4, 3, True, "P2")],
    "resid": [_v(128, 256, 64, 8, 3, True, m, g, RES_TMA=True) for m, g in
              (("N", 8), ("N", 16), ("P", 16))]
    + [_v(128, 128, 64, 4, 3, True, "P2", RES_TMA=True)],
    "swiglu": [_v(128, 128, 64, 8, 4, True, "N", g) for g in (8, 16)]
    + [_v(128, 64, 64, 4, 3, True, "P2")],
    # the example's own candidates (ATTN_CANDIDATES) are added in front when the sweep runs
    # (the tiles of docs/bench/tune-examples.md less the two candidates and the slowest)
    "attn": [
        ("128x32 w4 s4", dict(BM=128, BN=32, num_warps=4, num_stages=4)),
        ("128x64 w8 s4", dict(BM=128, BN=64, num_warps=8, num_stages=4)),
        ("128x64 w8 s3", dict(BM=128, BN=64, num_warps=8, num_stages=3)),
        ("128x128 w8 s2", dict(BM=128, BN=128, num_warps=8, num_stages=2)),
        ("64x32 w4 s4", dict(BM=64, BN=32, num_warps=4, num_stages=4)),
    ],
    "rmsnorm": [(f"{e} elems w{w}", dict(ELEMS=e, num_warps=w)) for e, w in
                ((4096, 4), (8192, 8))],
}


def _cfg_key(stage):
    return "rmsnorm" if stage.startswith("rmsnorm") else stage


def section_sweep(res):
    import torch
    import torch.nn.functional as F
    from evaluator.tasks import get_task
    task = get_task("transformer_block")
    tb = _load("transformer_block")
    timer = Timer()
    rows = res["rows"] = []
    for shape in _shapes(task):
        ins = task.make_inputs(shape, 1, DEV)
        stages, outs = _stages(tb, ins, {})
        for fn in stages.values():  # default config: every stage's inputs and reference output
            fn()
        _sync()
        sf = _stage_flops(shape)
        for key, variants in SWEEP.items():
            if STAGES and key not in STAGES:
                continue
            if key == "attn":
                variants = [(f"{tb._label(c)} (example)", c) for c in tb.ATTN_CANDIDATES] + variants
            for stage in {"resid": ("oproj", "down"), "rmsnorm": ("rmsnorm1",)}.get(key, (key,)):
                ref = outs[stage]
                for label, over in (variants[:2] if DRY else variants):
                    base = tb.GPU_CONFIG[_cfg_key(stage)]
                    cfg = dict(base if isinstance(base, dict) else {}, **over)  # attn: "pick"
                    dst = torch.empty_like(ref)
                    fn = _bind(tb, stage, ins, outs, dst, cfg)
                    try:
                        t0 = time.perf_counter()
                        fn()
                        _sync()
                        comp = time.perf_counter() - t0
                        diff = float((dst.float() - ref.float()).abs().max())
                        ms = timer(fn, reps=20, warmup=3)
                        rows.append({"shape": shape, "stage": stage, "name": label, "ms": ms,
                                     "tflops": _tflops(sf[stage], ms) if sf[stage] else None,
                                     "compile_s": comp, "max_diff_vs_default": diff,
                                     "config": cfg})
                    except Exception as exc:
                        rows.append({"shape": shape, "stage": stage, "name": label,
                                     "error": repr(exc)[:300], "config": cfg})
                    print(rows[-1], flush=True)
        # the same stages in PyTorch (cuBLAS, flash SDPA, eager rms_norm): the yardstick
        x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down = ins
        B, T, D = x.shape
        H = D // tb.HEAD_DIM
        q, k, v = outs["qkv"].view(B, T, 3, H, tb.HEAD_DIM).permute(2, 0, 3, 1, 4)
        n2, g = outs["rmsnorm2"], outs["swiglu"]
        refs = {
            "rmsnorm1": lambda: F.rms_norm(x, (D,), w_norm1, tb.EPS),
            "qkv": lambda: outs["rmsnorm1"] @ w_qkv,
            "attn": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            "oproj": lambda: outs["attn"] @ w_o,
            "swiglu": lambda: (n2 @ w_gate, n2 @ w_up),
            "down": lambda: g @ w_down,
        }
        for stage, fn in refs.items():
            if STAGES and _cfg_key(stage) not in STAGES and not ("resid" in STAGES and stage in ("oproj", "down")):
                continue
            ms = timer(fn, reps=20, warmup=3)
            rows.append({"shape": shape, "stage": stage, "name": "torch (cuBLAS/SDPA/eager)",
                         "ms": ms, "tflops": _tflops(sf[stage], ms) if sf[stage] else None})
            print(rows[-1], flush=True)
        del ins, stages, outs, q, k, v, n2, g, refs
        _empty_cache()


def section_final(res):
    """Example vs eager vs torch.compile per benchmark shape, measured in one process and
    interleaved (5 rounds of 10 calls each), in both timing styles."""
    import torch
    from evaluator.tasks import get_task
    timer = Timer()
    rows = res["rows"] = []
    res["checks"] = []
    for name in ("matmul_bias_relu", "transformer_block"):
        task = get_task(name)
        mod = _load(name)
        for shape in _shapes(task):
            ins = task.make_inputs(shape, 2, DEV)
            res["checks"].append(_check(task, mod.custom_kernel, shape, seed=11))
            first_example = _first_call_s(lambda: mod.custom_kernel(*ins))
            torch._dynamo.reset()  # a static compile per shape, as a fresh process gets
            compiled = torch.compile(task.reference)
            first_compile = _first_call_s(lambda: compiled(*ins))
            fns = {"example": lambda: mod.custom_kernel(*ins),
                   "eager": lambda: task.reference(*ins),
                   "torch.compile": lambda: compiled(*ins)}
            for style in ("evaluator", "overlapped"):
                samples = {k: [] for k in fns}
                for _ in range(1 if DRY else 5):
                    for k, fn in fns.items():
                        samples[k].append(timer(fn, reps=10, warmup=2,
                                                host_sync=style == "evaluator"))
                med = {k: statistics.median(v) for k, v in samples.items()}
                for k in fns:
                    rows.append({"task": name, "shape": shape, "name": f"{k} [{style}]",
                                 "ms": med[k], "tflops": _tflops(task.flops(shape), med[k]),
                                 "spread": [min(samples[k]), max(samples[k])],
                                 "vs_eager": med["eager"] / med[k],
                                 "vs_compile": med["torch.compile"] / med[k],
                                 "first_call_s": {"example": first_example,
                                                  "torch.compile": first_compile}.get(k)})
                    print(rows[-1], flush=True)
            del ins, compiled, fns
            _empty_cache()


def _bind(tb, stage, ins, outs, dst, cfg):
    """One stage of the block with config `cfg`, reading the default run's intermediates."""
    x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down = ins
    B, T, D = x.shape
    xf = x.reshape(B * T, D)
    if stage == "rmsnorm1":
        return lambda: tb._rmsnorm(xf, w_norm1, dst, cfg)
    if stage == "qkv":
        return lambda: tb._gemm(outs["rmsnorm1"], w_qkv, dst, cfg)
    if stage == "attn":
        return lambda: tb._attention(outs["qkv"], dst, B, T, D // tb.HEAD_DIM, cfg)
    if stage == "oproj":
        return lambda: tb._gemm(outs["attn"], w_o, dst, cfg, epi=tb.EPI_RESIDUAL, res=xf)
    if stage == "swiglu":
        return lambda: tb._gemm(outs["rmsnorm2"], w_gate, dst, cfg, epi=tb.EPI_SWIGLU, b2=w_up)
    if stage == "down":
        return lambda: tb._gemm(outs["swiglu"], w_down, dst, cfg, epi=tb.EPI_RESIDUAL,
                                res=outs["oproj"])
    raise KeyError(stage)


# ---------------------------------------------------------------------------------------------


def section_compile(res):
    import torch
    from evaluator.tasks import get_task
    timer = Timer()
    rows = res["rows"] = []
    for name in ("matmul_bias_relu", "transformer_block"):
        task = get_task(name)
        for shape in _shapes(task):
            torch._dynamo.reset()  # a static compile per shape, as a fresh process gets
            compiled = torch.compile(task.reference)
            ins = task.make_inputs(shape, 1, DEV)
            first = _first_call_s(lambda: compiled(*ins))
            ms = timer(lambda: compiled(*ins), reps=30, warmup=5)
            rows.append({"task": name, "shape": shape, "name": "torch.compile", "ms": ms,
                         "tflops": _tflops(task.flops(shape), ms), "first_call_s": first})
            print(rows[-1], flush=True)
            del ins
            _empty_cache()


# ---------------------------------------------------------------------------------------------


def _run_section(name, out_dir):
    sys.path.insert(0, str(ROOT))
    import torch
    res = {"section": name, "gpu": "cpu (dry run)" if DRY else torch.cuda.get_device_name(),
           "torch": torch.__version__}
    import triton
    res["triton"] = triton.__version__
    t0 = time.perf_counter()
    try:
        globals()[f"section_{name}"](res)
    except Exception:
        res["error"] = traceback.format_exc()[-3000:]
        print(res["error"], flush=True)
    res["wall_s"] = time.perf_counter() - t0
    (Path(out_dir) / f"{name}.json").write_text(json.dumps(res, indent=1, default=str))


def _fmt_shape(s):
    return "x".join(f"{k}{v}" for k, v in s.items()) if s else ""


def _table(out_dir, sections):
    lines = []
    for name in sections:
        p = Path(out_dir) / f"{name}.json"
        if not p.exists():
            lines.append(f"== {name}: no result")
            continue
        r = json.loads(p.read_text())
        lines.append(f"== {name} ({r.get('gpu')}, torch {r.get('torch')}, triton "
                     f"{r.get('triton')}) wall {r.get('wall_s', 0):.1f}s"
                     + (f" first call {r['first_call_s']:.2f}s" if "first_call_s" in r else ""))
        if r.get("error"):
            lines.append("ERROR " + r["error"].strip().splitlines()[-1][:200])
        for c in r.get("checks", []):
            lines.append(f"  check {_fmt_shape(c['shape']):28s} {'ok ' if c['passed'] else 'BAD'}"
                         f" worst {c['worst']:.3f} (eager {c['eager_worst']:.3f})")
        for row in r.get("rows", []):
            shape, stage = _fmt_shape(row.get("shape")), row.get("stage", "")
            head = f"  {shape:24s} {stage:8s} {row['name']:34s}"
            if "error" in row:
                lines.append(head + " ERROR " + row["error"][:80])
                continue
            extra = ""
            if "max_diff_vs_default" in row:
                extra += f" diff {row['max_diff_vs_default']:.3g}"
            if row.get("compile_s") is not None:
                extra += f" compile {row['compile_s']:.1f}s"
            if row.get("first_call_s") is not None:
                extra += f" first {row['first_call_s']:.1f}s"
            if row.get("vs_compile") is not None:
                extra += f" x{row['vs_eager']:.3f} eager x{row['vs_compile']:.3f} compile"
            tf = f"{row['tflops']:6.0f} TF/s" if row.get("tflops") else " " * 11
            lines.append(f"{head} {row['ms']:8.4f} ms {tf}{extra}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", default="matmul,block,sweep")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--section", help=argparse.SUPPRESS)
    args = ap.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.section:
        _run_section(args.section, args.out)
        return
    env = dict(os.environ)
    if DRY:
        env["TRITON_INTERPRET"] = "1"
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton_cache_"))
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="inductor_cache_"))
    env["PYTHONUNBUFFERED"] = "1"
    sections = [s for s in args.sections.split(",") if s]
    for s in sections:
        assert s in SECTIONS, s
        t = time.perf_counter()
        with open(Path(args.out) / "logs.txt", "a") as log:
            log.write(f"===== section {s}\n")
            log.flush()
            rc = subprocess.run([sys.executable, __file__, "--section", s, "--out", args.out],
                                env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        print(f"section {s}: rc {rc}, {time.perf_counter() - t:.1f}s", flush=True)
    table = _table(args.out, sections)
    (Path(args.out) / "table.txt").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
