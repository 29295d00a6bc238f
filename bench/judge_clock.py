"""The judge's clock on a GPU: calibration, repeatability, attacks against their honest twins, and
the wall time of a ranked evaluation. Results in docs/bench/judge-clock.md.

    python bench/judge_clock.py OUTDIR [STEP ...]

Steps (all by default, in this order):
  smoke     examples/softmax.py ranked once (stops the run if it is not verified)
  attacks   per task (softmax, matmul_bias_relu, transformer_block): the example (with
            compute-sanitizer, as the site runs it), then the example with each section-D attack of
            tests/exploits/section_d appended, then the example again (BENCH_HONEST_AGAIN=0: not);
            every attack run with the source scan off, so that only run-time evidence decides
  warm      (only when named) each task's baselines compiled into the judge's cache with no
            submission, as a worker does before its first GPU evaluation of a task
            (evaluator/judge/warm.py, sandbox/warm.py); named before `wall`, no evaluation of it is cold
  wall      each task's example ranked once with compute-sanitizer, as the site runs it: the
            wall time and its phases (BENCH_WALL_TASKS, default every task)
  repeat    ranked evaluations of examples/softmax.py (BENCH_REPEAT, default five)
  calibrate the reference against eager and torch.compile against itself, every task
            (BENCH_CALIBRATE_TASKS), without compute-sanitizer (it moves no score)
  ab        examples/softmax.py under several settings of the judge, interleaved evaluation by
            evaluation so that a drift of the machine hits every setting alike, without
            compute-sanitizer: BENCH_AB="name:VAR=value,VAR=value name2:" (a name with no
            variables is the default), BENCH_AB_ROUNDS rounds (default 4); each setting's batches
            go to OUTDIR/samples-NAME for bench/clock_marks.py
Every evaluation's report goes to OUTDIR/reports.jsonl, with a digest of the judge's autotuning
picks after it (a change between evaluations means torch.compile ran other kernels); while the
steps run, nvidia-smi (where present) samples the GPU's clocks, temperature and power into
OUTDIR/gpu-clocks.csv every 200 ms, to set a change of speed between evaluations against them.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from evaluator.judge import calibrate
from evaluator.judge import startup  # noqa: E402
from evaluator.api import evaluate_source  # noqa: E402

ATTACKS = ROOT / "tests" / "exploits" / "section_d"
PLAN = {
    "softmax": tuple(os.environ.get("BENCH_SOFTMAX_ATTACKS", "lie_times precompute_thread superbatch "
                                    "persisting_l2 warmup_sleep gpu_left_running answer_before_sync "
                                    "answer_first").split()),
    "matmul_bias_relu": tuple(os.environ.get("BENCH_MATMUL_ATTACKS", "lie_times superbatch").split()),
    "transformer_block": tuple(os.environ.get("BENCH_BLOCK_ATTACKS", "lie_times").split()),
}
TASKS = ("softmax", "layernorm", "gelu_bias_residual", "matmul_bias_relu", "transformer_block")
STEPS = ("smoke", "attacks", "wall", "repeat", "calibrate")  # `ab` only when named
DEADLINE = time.monotonic() + float(os.environ.get("BENCH_BUDGET_S", "560"))


def run(out: Path, label: str, source: str, task: str, **kw) -> dict:
    t = time.monotonic()
    report = evaluate_source(source, task=task, device="cuda", mode="ranked", **kw)
    wall = time.monotonic() - t
    row = {"label": label, "task": task, "wall_s": round(wall, 1), "verdict": report["verdict"],
           "codes": report["reason_codes"], "speedup_vs_compile": report["speedup_vs_compile"],
           "speedup_vs_eager": report["speedup_vs_eager"], "phases": report["phases"],
           "shapes": report["shapes"], "reasons": report["reasons"][:4],
           "sanitizer": report.get("sanitizer", []), "picks": picks_digest()}
    with open(out / "reports.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
    sc = row["speedup_vs_compile"]
    print(f"{label:42s} {row['verdict']:9s} vs compile {sc if sc is None else round(sc, 4)!s:>8s} "
          f"wall {wall:5.1f}s {','.join(row['codes'])}", flush=True)
    return row


def picks_digest() -> str:
    """A digest of every autotuning pick (`*.best_config`) in the judge's inductor cache."""
    cache = startup.judge_cache_dir()
    if not cache:
        return ""
    h = hashlib.sha256()
    for path in sorted(Path(cache, "inductor").rglob("*.best_config")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


def clock_log(out: Path):
    """nvidia-smi sampling the GPU's clocks into OUTDIR/gpu-clocks.csv (reads only), or None."""
    if not shutil.which("nvidia-smi"):
        return None
    fields = "timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu"
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={fields}", "--format=csv", "-lms", "200",
                             "-f", str(out / "gpu-clocks.csv")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def example(task: str) -> str:
    return (ROOT / "examples" / f"{task}.py").read_text()


def step_smoke(out):
    row = run(out, "smoke softmax", example("softmax"), "softmax")
    if row["verdict"] != "verified":
        print("smoke failed:", row["reasons"], flush=True)
        sys.exit(1)


def step_attacks(out):
    try:
        _attacks(out)
    finally:
        os.environ.pop("EVALUATOR_SANITIZE", None)


def _attacks(out):
    tasks = os.environ.get("BENCH_TASKS", " ".join(PLAN)).split()
    for task, attacks in PLAN.items():
        if task not in tasks or time.monotonic() > DEADLINE:
            continue
        honest = example(task)
        # the first honest run keeps compute-sanitizer: its wall time is that of a ranked
        # evaluation as the site runs it; the sanitizer runs after the timing and moves no score
        os.environ["EVALUATOR_SANITIZE"] = "1"
        rows = [run(out, f"{task} honest", honest, task)]
        os.environ["EVALUATOR_SANITIZE"] = "0"
        for name in attacks:
            if time.monotonic() > DEADLINE:
                return
            attack = (ATTACKS / f"{name}.py").read_text()
            rows.append(run(out, f"{task} {name} (scan off)", honest + "\n\n" + attack, task, scan=False))
        if os.environ.get("BENCH_HONEST_AGAIN", "1") == "1":
            rows.append(run(out, f"{task} honest again", honest, task))
        base = [r["speedup_vs_compile"] for r in rows if "honest" in r["label"] and r["speedup_vs_compile"]]
        for r in [r for r in rows if "honest" not in r["label"]]:
            if r["speedup_vs_compile"] and base:
                gain = r["speedup_vs_compile"] / max(base) - 1
                print(f"  {r['label']:40s} gain over the better honest twin {gain:+.2%} ({r['verdict']})", flush=True)


def step_warm(out):
    from evaluator.judge.warm import warm

    for task in os.environ.get("BENCH_WALL_TASKS", " ".join(TASKS)).split():
        row = warm(task, "cuda")
        with open(out / "reports.jsonl", "a") as f:
            f.write(json.dumps({"label": f"warm {task}", **row}) + "\n")
        print(f"warm {task:36s} {row['state']} in {row['seconds']:.1f}s", flush=True)


def step_wall(out):
    os.environ.setdefault("EVALUATOR_SANITIZE", "1")
    for task in os.environ.get("BENCH_WALL_TASKS", " ".join(TASKS)).split():
        if time.monotonic() > DEADLINE:
            break
        row = run(out, f"wall {task}", example(task), task)
        phases = ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in row["phases"].items() if v)
        tools = ", ".join(f"{r['tool']} {r['ok']} {r['seconds']:.1f}s {r['note'][:80]}" for r in row["sanitizer"])
        print(f"  phases (s): {phases}; sanitizer: {tools or 'none'}", flush=True)


def step_repeat(out):
    scores = []
    for i in range(int(os.environ.get("BENCH_REPEAT", "5"))):
        if time.monotonic() > DEADLINE:
            break
        scores.append(run(out, f"repeat softmax {i + 1}", example("softmax"), "softmax")["speedup_vs_compile"])
    scores = [s for s in scores if s]
    if scores:
        print(f"{len(scores)} evaluations: {[round(s, 4) for s in scores]} max/min {max(scores) / min(scores):.4f}", flush=True)


def ab_settings() -> list[tuple[str, dict]]:
    settings = []
    for item in os.environ.get("BENCH_AB", "default: pinned:EVALUATOR_PIN_CPUS=1").split():
        name, _, assigns = item.partition(":")
        settings.append((name, dict(a.split("=", 1) for a in assigns.split(",") if a)))
    return settings


def step_ab(out):
    settings, scores = ab_settings(), {}
    saved = dict(os.environ)
    try:
        for i in range(int(os.environ.get("BENCH_AB_ROUNDS", "4"))):
            for name, env in settings:
                if time.monotonic() > DEADLINE:
                    break
                os.environ.clear()
                os.environ.update(saved, EVALUATOR_SANITIZE="0",
                                  EVALUATOR_SAMPLES_DIR=str(out / f"samples-{name}"), **env)
                row = run(out, f"ab {name} {i + 1}", example("softmax"), "softmax")
                scores.setdefault(name, []).append(row["speedup_vs_compile"])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    for name, got in scores.items():
        got = [s for s in got if s]
        spread = f"max/min {max(got) / min(got):.4f}" if got else ""
        print(f"{name:12s} {[round(s, 4) for s in got]} {spread}", flush=True)


def step_calibrate(out):
    # evaluator.judge.calibrate warms each task and runs without the sanitizer itself
    _calibrate(out, os.environ.get("BENCH_CALIBRATE_TASKS", " ".join(TASKS)).split())


def _calibrate(out, names):
    rows = []
    for name in names:
        if time.monotonic() > DEADLINE:
            break
        t = time.monotonic()
        rows += calibrate.calibrate([name], device="cuda")
        print(f"calibrated {name} in {time.monotonic() - t:.0f}s: reference vs eager "
              f"{rows[-1]['reference_vs_eager']}, compile vs compile {rows[-1]['compile_vs_compile']} "
              f"{rows[-1]['codes']}", flush=True)
        (out / "calibrate.json").write_text(json.dumps(rows, indent=1))
    print(calibrate.table(rows, "cuda"), flush=True)


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    steps = sys.argv[2:] or STEPS
    log = clock_log(out)
    try:
        for step in steps:
            globals()[f"step_{step}"](out)
    finally:
        if log:
            log.terminate()


if __name__ == "__main__":
    main()
