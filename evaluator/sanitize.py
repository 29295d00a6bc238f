"""Memory and race checks with NVIDIA's compute-sanitizer (GPU hosts where it works).

A ranked GPU evaluation that was not rejected runs the submission once more, on the smallest
test shape, under `compute-sanitizer --tool memcheck` and `--tool racecheck`. An out-of-bounds
access or a shared-memory race flags the submission with the tool's own finding. The child runs
as the runner's user (uid 65534 when the judge is root) with the same scrubbed environment; the
PyTorch caching allocator is off in it so that each tensor is its own allocation and a write past
its end lands outside any allocation, where memcheck sees it.

Used from the CLI and the Python API after the judge's verdict; the two tools run side by side, so
an evaluation waits for the slower of them (a process start plus the tool's slowdown; figures in
docs/bench/judge-clock.md).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOOLS = ("memcheck", "racecheck")
ERROR_EXIT = 86
LIMIT_S = float(os.environ.get("EVALUATOR_SANITIZER_LIMIT_S", 180))


def find_tool(variable: str, name: str, patterns: tuple[str, ...]) -> str | None:
    """A CUDA toolkit command: the path in `variable` (when set, nothing else), then PATH, then
    the newest match of `patterns` (the toolkit's usual places)."""
    explicit = os.environ.get(variable)
    if explicit:
        return explicit if os.path.exists(explicit) else None
    found = shutil.which(name)
    if found:
        return found
    for pattern in patterns:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def find_sanitizer() -> str | None:
    return find_tool("EVALUATOR_SANITIZER", "compute-sanitizer",
                     ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda-*/bin/compute-sanitizer",
                      "/opt/nvidia/*/compute-sanitizer/compute-sanitizer"))


def parse(output: str) -> list[str]:
    """The tool's findings: its error lines, first of each kind, without the banner."""
    findings = []
    for line in output.splitlines():
        text = line.removeprefix("=========").strip()
        if re.match(r"(Invalid|Error: Race|Race reported|Hazard|Out-of-range|Misaligned|Uninitialized|"
                    r"Barrier error|Program hit)", text):
            if text not in findings:
                findings.append(text)
    return findings[:5]


def run_tool(tool: str, source: bytes, *, task: str, shape: dict, seed: int) -> dict:
    """Run the submission once under one tool; {'tool', 'ok', 'findings', 'seconds', 'note'}."""
    from . import isolation

    sanitizer = find_sanitizer()
    if not sanitizer:
        return {"tool": tool, "ok": None, "findings": [], "seconds": 0.0, "note": "compute-sanitizer not found"}
    scratch = tempfile.mkdtemp(prefix="evaluator-sanitize-")
    os.chmod(scratch, 0o1777)  # the child (another user) keeps its caches here
    source_path = os.path.join(scratch, "submission.py")
    with open(source_path, "wb") as f:
        f.write(source)
    os.chmod(source_path, 0o644)
    env = {k: os.environ[k] for k in isolation.ENV_PASSTHROUGH if k in os.environ}
    env.update(HOME=scratch, TMPDIR=scratch, TRITON_CACHE_DIR=os.path.join(scratch, "triton"),
               PYTHONPATH=isolation.PACKAGE_ROOT, PYTHONDONTWRITEBYTECODE="1",
               PYTORCH_NO_CUDA_MEMORY_CACHING="1", PATH=os.environ.get("PATH", "/usr/bin:/bin"))
    args = [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", "20",
            "--target-processes", "all", sys.executable, "-P", "-s", "-m", "evaluator.sanitize",
            "child", "--task", task, "--source", source_path, "--shape", json.dumps(shape),
            "--seed", str(seed)]
    kwargs = {}
    if isolation.is_root():
        kwargs = dict(user=isolation.NOBODY, group=isolation.NOBODY, extra_groups=[])
    t0 = time.monotonic()
    try:
        done = subprocess.run(args, env=env, cwd=scratch, capture_output=True, text=True,
                              timeout=LIMIT_S, start_new_session=True, **kwargs)
    except subprocess.TimeoutExpired:
        return {"tool": tool, "ok": None, "findings": [], "seconds": LIMIT_S,
                "note": f"{tool} did not finish within {LIMIT_S:.0f} s"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.monotonic() - t0
    output = done.stdout + done.stderr
    findings = parse(output)
    if done.returncode == ERROR_EXIT or findings:
        return {"tool": tool, "ok": False, "findings": findings or [output[-300:]], "seconds": seconds, "note": ""}
    if done.returncode != 0:
        note = "device not supported" if "not supported" in output.lower() else output.strip()[-300:]
        return {"tool": tool, "ok": None, "findings": [], "seconds": seconds, "note": note}
    return {"tool": tool, "ok": True, "findings": [], "seconds": seconds, "note": ""}


def apply(report: dict, source: bytes) -> dict:
    """Run both tools for a ranked GPU report that is not rejected; flag it on any finding."""
    if report.get("device") != "cuda" or report.get("mode") != "ranked" or report.get("verdict") == "rejected":
        return report
    if os.environ.get("EVALUATOR_SANITIZE", "1") == "0":
        return report
    from .shapes import shape_size
    from .tasks import get_task

    task = get_task(report["task"])
    # the smallest shape that is more than one element: cheap under the tools, still a real launch
    shape = min(task.test_shapes, key=lambda s: shape_size(s) if shape_size(s) > 1 else 1 << 62)
    import secrets

    from concurrent.futures import ThreadPoolExecutor

    seed = secrets.randbits(62)
    started = time.monotonic()
    # the tools run side by side, each in its own process and GPU context: nothing is timed by
    # now, and most of each run is the tool's start and the child's import of torch
    with ThreadPoolExecutor(len(TOOLS)) as pool:
        results = list(pool.map(lambda tool: run_tool(tool, source, task=report["task"], shape=shape, seed=seed),
                                TOOLS))
    report["sanitizer"] = results
    report.setdefault("phases", {})["sanitizer_s"] = round(time.monotonic() - started, 3)
    for r in results:
        if r["ok"] is False:
            report["verdict"] = "flagged"
            report["reasons"].append(f"compute-sanitizer {r['tool']}: " + "; ".join(r["findings"])[:500])
            report["reason_codes"].append("sanitizer")
    return report


def _child(argv) -> int:
    """Inside the sanitizer: build the inputs, call the kernel once, synchronize."""
    p = argparse.ArgumentParser()
    p.add_argument("--task", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--shape", required=True)
    p.add_argument("--seed", type=int, required=True)
    a = p.parse_args(argv)
    import importlib.util

    import torch

    from .tasks import get_task

    task = get_task(a.task)
    inputs = task.make_inputs(json.loads(a.shape), a.seed, "cuda")
    spec = importlib.util.spec_from_file_location("submission", a.source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.custom_kernel(*inputs)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        sys.exit(_child(sys.argv[2:]))
    print("usage: python -m evaluator.sanitize child ...", file=sys.stderr)
    sys.exit(2)
