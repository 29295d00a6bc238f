"""Profile mode on a GPU host: which path works (Nsight Compute or the torch.profiler fallback),
directly and inside a bubblewrap box, and why.

    python3 bench/profile_check.py OUT [--debs .debs] [--budget 540] [--skip-box] [--device cuda|cpu]

Runs as root with only torch, triton and this repository (no Django, no pytest). Steps, each
recorded as it finishes (a step that fails or runs out of time is recorded too, and the rest go on):

1. probe outside the box: ncu (SpeedOfLight, one launch) on a tiny torch program as uid 65534
   the way the evaluator's profiling child runs (evaluator/runner/profile_child.py `launch`): whether the
   counters are readable, and ncu's own error when not;
2. `box`: examples/softmax.py in profile mode through sandbox.evaluate with the bwrap backend, as
   a worker runs it (bubblewrap from --debs when the host lacks it, as bench/sandbox_gpu_check.py
   does), and two ncu probes from inside the box (root in the box, then 65534). It comes before
   anything in this process touches the GPU: a worker starts no box while a process holds it;
3. `direct`: the same evaluation through evaluator.api.evaluate_file on this host (judge as root,
   the profiled child as 65534): verdict, tool, ncu status, the .ncu-rep; then the ncu probe as
   root;
4. environment: GPU, driver, torch, ncu's path and version, the driver's profiling restriction
   (RmProfilingAdminOnly in /proc/driver/nvidia/params), this process's uid and capabilities.

Results: OUT/profile_check.json (every step, and a `verdict` saying which path works where and
why), OUT/direct_report.json, OUT/box_report.json, and the .ncu-rep files when ncu worked
(OUT/direct.ncu-rep, OUT/box.ncu-rep). Exit status 0 when the profile-mode runs returned a
profile (by either path), 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

TINY = ("import torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); "
        "print('tiny sum', float((x * 2).sum()))")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Results:
    def __init__(self, out: Path, budget_s: float):
        self.out, self.rows, self.deadline = out, {}, time.monotonic() + budget_s

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def step(self, name: str, fn, *, needs_s: float = 0.0):
        """Run one step, record what it returned or how it failed, save at once."""
        if self.left() < needs_s:
            self.rows[name] = {"ok": False, "skipped": f"only {self.left():.0f} s of the budget left"}
            log(f"{name}: skipped (budget)")
            self.save()
            return None
        t0 = time.monotonic()
        try:
            detail = fn()
            self.rows[name] = {"ok": True, "seconds": round(time.monotonic() - t0, 1), "detail": detail}
        except Exception:
            self.rows[name] = {"ok": False, "seconds": round(time.monotonic() - t0, 1),
                               "error": traceback.format_exc()[-3000:]}
        log(f"{name}: {'done' if self.rows[name]['ok'] else 'FAILED'} in {self.rows[name]['seconds']} s")
        self.save()
        return self.rows[name].get("detail")

    def save(self) -> None:
        (self.out / "profile_check.json").write_text(json.dumps(self.rows, indent=1, default=str))


def run(cmd, timeout=120, **kw) -> dict:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired as exc:
        return {"rc": None, "timed_out": True, "output": str(exc.stdout or "")[-3000:]}
    except OSError as exc:
        return {"rc": None, "error": str(exc)}
    return {"rc": done.returncode, "output": (done.stdout + done.stderr)[-6000:]}


# ---- 1. environment ------------------------------------------------------------------------------
def environment() -> dict:
    from evaluator.judge.profile import find_ncu

    info = {"python": sys.version.split()[0], "kernel": platform.release(), "euid": os.geteuid()}
    with open("/proc/self/status") as f:
        info["caps"] = {k: v.strip() for k, _, v in (line.partition(":") for line in f) if k in ("CapEff", "CapBnd")}
    try:
        import torch
        import triton

        info.update(torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__,
                    gpu=torch.cuda.get_device_name() if torch.cuda.is_available() else None)
    except Exception as exc:
        info["torch_error"] = repr(exc)
    smi = shutil.which("nvidia-smi")
    if smi:
        info["driver"] = run([smi, "--query-gpu=driver_version,name", "--format=csv,noheader"])["output"].strip()
    ncu = find_ncu()
    info["ncu"] = ncu
    info["ncu_realpath"] = os.path.realpath(ncu) if ncu else None
    if ncu:
        info["ncu_version"] = run([ncu, "--version"])["output"].strip()[-300:]
    try:
        params = Path("/proc/driver/nvidia/params").read_text()
        info["driver_profiling_params"] = [line for line in params.splitlines() if "rofil" in line]
    except OSError as exc:
        info["driver_profiling_params"] = f"unreadable: {exc}"
    return info


# ---- 2. ncu probes -------------------------------------------------------------------------------
def probe_ncu(as_nobody: bool, python: str = sys.executable) -> dict:
    """ncu on one launch of a tiny torch program; as root, or dropped to 65534 as the evaluator's
    profiling child is."""
    from evaluator.judge.profile import find_ncu

    ncu = find_ncu()
    if not ncu:
        return {"ncu": None, "readable": False, "why": "ncu not found"}
    scratch = tempfile.mkdtemp(prefix="kb-ncu-probe-")
    os.chmod(scratch, 0o1777)
    cmd = [ncu, "--section", "SpeedOfLight", "--launch-count", "1", "--csv", python, "-c", TINY]
    env = {**os.environ, "HOME": scratch, "TMPDIR": scratch, "PYTHONPATH": str(ROOT)}
    if as_nobody:
        cmd = [python, "-P", "-s", "-m", "evaluator.runner.profile_child", "launch", "--drop-to", "65534",
               "--expose", os.path.dirname(os.path.realpath(ncu)), "--", *cmd]
    result = run(cmd, timeout=180, env=env, cwd=scratch)
    shutil.rmtree(scratch, ignore_errors=True)
    return _ncu_outcome(result, cmd)


def _ncu_outcome(result: dict, cmd) -> dict:
    from evaluator.contract.profile_report import ncu_problem, parse_ncu_csv

    output = result.get("output", "")
    kernels = parse_ncu_csv(output)
    outcome = {"cmd": " ".join(cmd)[-400:], "rc": result.get("rc"), "readable": bool(kernels),
               "kernels": [k["name"][:80] for k in kernels], "tail": output[-1500:]}
    if not kernels:
        outcome["status"], outcome["why"] = ncu_problem(output)
    return outcome


def ncu_lock_file() -> dict:
    """ncu's lock file in /tmp: who owns it (a root-owned one can stop ncu as another user)."""
    found = {}
    for path in ("/tmp/nsight-compute-lock", os.path.join(tempfile.gettempdir(), "nsight-compute-lock")):
        try:
            st = os.stat(path)
            found[path] = {"uid": st.st_uid, "mode": oct(st.st_mode & 0o7777)}
        except OSError as exc:
            found[path] = exc.strerror
    return found


# ---- 3. and 4. profile mode, directly and in the box ----------------------------------------------
def summarise(report: dict, wall_s: float) -> dict:
    p = report.get("profile") or {}
    return {"verdict": report.get("verdict"), "reasons": report.get("reasons"), "mode": report.get("mode"),
            "tool": p.get("tool"), "ncu": p.get("ncu"), "file_bytes": p.get("file_bytes"),
            "kernels": [{"name": k["name"][:80], "duration_ms": k.get("duration_ms"),
                         "sections": [s["name"] for s in k["sections"]]} for k in p.get("kernels") or []],
            "kernel_rows": [o["name"][:80] for o in p.get("ops") or [] if o["kind"] == "kernel"][:8],
            "floor_ms": p.get("floor_ms"), "notes": p.get("notes"), "phases": report.get("phases"),
            "wall_s": round(wall_s, 1)}


def direct(out: Path, limit_s: float, device: str) -> dict:
    from evaluator.api import evaluate_file

    t0 = time.monotonic()
    report = evaluate_file(ROOT / "examples" / "softmax.py", task="softmax", device=device, mode="profile",
                           time_limit_s=limit_s, profile_out=str(out / "direct.ncu-rep"))
    (out / "direct_report.json").write_text(json.dumps(report, indent=1))
    return summarise(report, time.monotonic() - t0)


def box_limits(limit_s: float, device: str):
    import dataclasses

    from sandbox_gpu_check import limits_for

    return dataclasses.replace(limits_for(device), time_limit_s=limit_s)


def in_box(out: Path, limit_s: float, device: str) -> dict:
    import sandbox

    reason = sandbox.BACKENDS["bwrap"].unavailable_reason()
    if reason:
        raise RuntimeError(f"bwrap backend not usable: {reason}")
    t0 = time.monotonic()
    result = sandbox.evaluate(source=(ROOT / "examples" / "softmax.py").read_bytes(), task="softmax",
                              mode="profile", device=device, backend="bwrap", limits=box_limits(limit_s, device))
    (out / "box_report.json").write_text(json.dumps(result.report.to_json(), indent=1))
    if result.profile_file:
        (out / "box.ncu-rep").write_bytes(result.profile_file)
    summary = summarise(result.report.to_json(), time.monotonic() - t0)
    summary.update(box_file_bytes=len(result.profile_file or b""), sandbox_logs_tail=result.logs[-1500:])
    return summary


def box_probe(out: Path) -> dict:
    """ncu's view from inside the box: found or not, and the counters as root in the box and as
    65534. Runs the probe code through the judge's seat of bench/sandbox_gpu_check.py."""
    from sandbox_gpu_check import judge_seat

    code = PROBE_IN_BOX % {"tiny": TINY}
    outcome = judge_seat("bwrap", code, "cuda", out / "box_probe.log")
    rows = [json.loads(line.split(" ", 1)[1]) for line in outcome.logs.splitlines() if line.startswith("PROBE ")]
    return {"probes": rows, "exit_code": outcome.exit_code, "tail": outcome.logs[-2000:] if not rows else ""}


PROBE_IN_BOX = r'''
import json, os, subprocess, sys, tempfile
sys.path.insert(0, "/opt/kernelboard")
from evaluator.judge.profile import find_ncu
from evaluator.contract.profile_report import ncu_problem, parse_ncu_csv

ncu = find_ncu()
print("PROBE", json.dumps({"who": "box", "ncu": ncu, "caps": [l for l in open("/proc/self/status")
      if l.startswith(("CapEff", "Uid"))]}), flush=True)
for who in ("root-in-box", "65534"):
    if not ncu:
        break
    scratch = tempfile.mkdtemp(prefix="probe-")
    os.chmod(scratch, 0o1777)
    cmd = [ncu, "--section", "SpeedOfLight", "--launch-count", "1", "--csv", sys.executable, "-c", %(tiny)r]
    if who == "65534":
        cmd = [sys.executable, "-P", "-s", "-m", "evaluator.runner.profile_child", "launch", "--drop-to", "65534",
               "--expose", os.path.dirname(os.path.realpath(ncu)), "--", *cmd]
    env = {**os.environ, "HOME": scratch, "TMPDIR": scratch, "PYTHONPATH": "/opt/kernelboard"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=150, env=env, cwd=scratch)
        text, rc = done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired:
        text, rc = "timed out", None
    kernels = parse_ncu_csv(text)
    row = {"who": who, "rc": rc, "readable": bool(kernels), "tail": text[-1200:]}
    if not kernels:
        row["status"], row["why"] = ncu_problem(text)
    print("PROBE", json.dumps(row), flush=True)
'''


# ---- the verdict -----------------------------------------------------------------------------------
def verdict(rows: dict) -> dict:
    def path(step):
        d = (rows.get(step) or {}).get("detail") or {}
        if not d.get("tool"):
            return {"path": None, "why": (rows.get(step) or {}).get("error", "no profile")[-500:]}
        ncu = d.get("ncu") or {}
        label = ("ncu" if d["tool"] == "ncu" else "torch.profiler operator table (CPU)" if not d.get("ncu")
                 else "fallback (torch.profiler CUDA kernel table)")
        return {"path": label,
                "ncu_status": ncu.get("status"), "why": ncu.get("note") or "", "verdict": d.get("verdict")}

    def readable(step):
        d = (rows.get(step) or {}).get("detail") or {}
        return {"readable": d.get("readable"), "why": d.get("why", "")}

    return {"direct": path("direct"), "box": path("box"),
            "counters_as_root_on_host": readable("probe_root"),
            "counters_as_65534_on_host": readable("probe_65534"),
            "driver_profiling_params": ((rows.get("environment") or {}).get("detail") or {}).get(
                "driver_profiling_params")}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--debs", default=str(ROOT / ".debs"))
    p.add_argument("--budget", type=float, default=540, help="seconds for all steps together")
    p.add_argument("--skip-box", action="store_true")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="cpu: try the script itself without a GPU (no ncu probes; torch.profiler only)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    os.environ.setdefault("SANDBOX_WORK_DIR", "/tmp/kb-sandbox-work")
    os.environ.setdefault("SANDBOX_STATE_DIR", "/tmp/kb-sandbox-state")
    res = Results(out, args.budget)
    gpu = args.device == "cuda"
    # 65534 first: ncu keeps a lock file in /tmp that a root run would leave behind unwritable
    # for other users (recorded in `tmp_lock` before and after)
    res.step("tmp_lock_before", ncu_lock_file)
    if gpu:
        res.step("probe_65534", lambda: probe_ncu(True), needs_s=30)
    # the box before anything in this process touches the GPU: a worker refuses to start a box
    # while any process holds the GPU, and the direct run leaves this one holding it
    if not args.skip_box:
        from sandbox_gpu_check import unpack_debs

        res.step("unpack_debs", lambda: unpack_debs(Path(args.debs)) or "done")
        res.step("box", lambda: in_box(out, min(300.0, res.left() - 30), args.device), needs_s=90)
        if gpu:
            res.step("box_probe", lambda: box_probe(out), needs_s=60)
    res.step("direct", lambda: direct(out, min(300.0, res.left() - 20), args.device), needs_s=90)
    if gpu:
        res.step("probe_root", lambda: probe_ncu(False), needs_s=30)
    res.step("tmp_lock_after", ncu_lock_file)
    res.step("environment", environment)
    res.rows["verdict"] = verdict(res.rows)
    res.save()
    log(json.dumps(res.rows["verdict"], indent=1))
    profiled = [s for s in ("direct", "box") if ((res.rows.get(s) or {}).get("detail") or {}).get("tool")]
    return 0 if profiled and all((res.rows[s]["detail"] or {}).get("verdict") == "verified" for s in profiled) else 1


if __name__ == "__main__":
    sys.exit(main())
