"""The warm-up and a ranked evaluation as a GPU worker runs them: in the box (bubblewrap), with the
worker's default judge cache. Results in docs/bench/judge-clock.md (wall time).

    python3 bench/warm_box.py OUT [--debs .debs] [--tasks softmax,transformer_block,...]

Runs as root with only torch, triton and this repository (no Django). bubblewrap, when missing on
the host, comes from the Debian package in --debs (unpacked with `dpkg -x` into /tmp/kb-debs).
Steps: `sandbox.warm_tasks(tasks, device="cuda")` in one box, as `manage.py warm_judge_cache` does
task by task, then each task's example ranked once through `sandbox.evaluate` with the sandbox's
own limits (SANDBOX_CPUS and the rest at their defaults) and compute-sanitizer on, as an upload is.
Each result goes to OUT/warm_box.jsonl: the box's wall, the report's phases (`sandbox_s` is the
box's own part), verdict and score. BENCH_BUDGET_S (default 420) stops starting evaluations.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEBS_ROOT = Path("/tmp/kb-debs")
TASKS = ("transformer_block", "softmax", "matmul_bias_relu", "layernorm", "gelu_bias_residual")


def bubblewrap(debs: str) -> None:
    if subprocess.run(["sh", "-c", "command -v bwrap"], check=False, capture_output=True).returncode == 0:
        return
    DEBS_ROOT.mkdir(parents=True, exist_ok=True)
    for deb in glob.glob(os.path.join(debs, "bubblewrap_*.deb")):
        subprocess.run(["dpkg", "-x", deb, str(DEBS_ROOT)], check=True)
    os.environ["PATH"] = f"{DEBS_ROOT}/usr/bin:{os.environ['PATH']}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--debs", default=str(ROOT / ".debs"))
    p.add_argument("--tasks", default=",".join(TASKS))
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + float(os.environ.get("BENCH_BUDGET_S", "420"))
    bubblewrap(args.debs)
    import sandbox

    tasks = args.tasks.split(",")

    def record(row: dict) -> None:
        with open(out / "warm_box.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")

    t = time.monotonic()
    warmed = sandbox.warm_tasks(tasks, device="cuda", backend="bwrap")
    record({"step": "warm", "box_wall_s": round(time.monotonic() - t, 1), "results": warmed,
            "cache": sandbox.judge_cache("cuda")})
    print(f"warm-up box {time.monotonic() - t:.1f}s: "
          + ", ".join(f"{r['task']} {r['state']} {r.get('seconds', 0):.1f}s" for r in warmed), flush=True)
    for task in tasks:
        if time.monotonic() > deadline:
            break
        source = (ROOT / "examples" / f"{task}.py").read_bytes()
        result = sandbox.evaluate(source=source, task=task, mode="ranked", device="cuda", backend="bwrap")
        r = result.report.to_json()
        record({"step": "ranked", "task": task, "wall_s": round(result.wall_s, 1), "verdict": r["verdict"],
                "codes": r["reason_codes"], "speedup_vs_compile": r["speedup_vs_compile"],
                "phases": r["phases"]})
        phases = ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in r["phases"].items() if v)
        print(f"ranked {task:20s} {r['verdict']:9s} vs compile {r['speedup_vs_compile']} wall {result.wall_s:.1f}s "
              f"({phases}) {','.join(r['reason_codes'])}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
