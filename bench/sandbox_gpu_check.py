"""The box's seccomp filter on a GPU host, both backends: what must still work does, what it denies
fails.

    python3 bench/sandbox_gpu_check.py OUT [--debs .debs] [--wheels .whl] [--backends bwrap,docker]
                                           [--device cuda]

Runs as root with only torch, triton and this repository (no Django, no pytest). For each backend
(bubblewrap, and Docker with the box's seccomp profile), inside the box:

1. the judge's seat (root in the box): CUDA initialises, a matmul matches the CPU, Triton compiles
   and runs a kernel, a CUDA tensor crosses to a second process of the same uid through CUDA IPC
   (torch.multiprocessing: cudaIpcGetMemHandle / cudaIpcOpenMemHandle), and every denied call fails
   (tests/sandbox/seccomp_probe.py);
2. an evaluation of examples/softmax.py in test mode (`sandbox.evaluate`, as a worker runs it),
   and one in ranked mode (the timing, and on a GPU compute-sanitizer inside the box);
3. the submission's seat (uid 65534, through the evaluator): the same denied calls fail, and the
   honest kernel beside them still passes.

Tools missing on the host come from Debian packages in --debs, unpacked with `dpkg -x` into
/tmp/kb-debs (bubblewrap; for Docker: docker.io, containerd, runc, tini, libseccomp2). A Docker
engine that does not answer is started from them (state under /tmp/kb-docker). The docker Python
SDK, when not importable, comes from the wheels in --wheels. Results: OUT/sandbox_gpu_check.json
(one entry per check) and OUT/details.tgz (the boxes' logs and reports, the environment, dockerd's
log). Exit status 0 when every check passed.

--device cpu runs the same checks without a GPU (Triton through its interpreter; no CUDA checks),
to try the script itself on any machine.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))

DEBS_ROOT = Path("/tmp/kb-debs")
DOCKER_STATE = Path("/tmp/kb-docker")
DOCKER_SOCKET = DOCKER_STATE / "docker.sock"

# Runs in the judge's seat (root in the box), from a file (Triton reads its kernels' source, and
# a spawned process imports the main module by path). Prints one line per check: CHECK {json}
JUDGE_CHECKS = r'''
import json, os, sys, traceback

import torch
import triton
import triton.language as tl

def check(name, fn):
    try:
        detail = fn()
        print("CHECK", json.dumps({"check": name, "ok": True, "detail": detail}), flush=True)
    except BaseException:
        print("CHECK", json.dumps({"check": name, "ok": False, "detail": traceback.format_exc()[-1500:]}),
              flush=True)

DEVICE = %(device)r

def cuda():
    assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
    a = torch.randn(512, 512, device="cuda")
    b = torch.randn(512, 512, device="cuda")
    err = ((a @ b).cpu() - a.cpu() @ b.cpu()).abs().max().item()
    assert err < 1e-2, err
    return {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "matmul_max_err": err}

@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def triton_kernel():
    x = torch.randn(10000, device=DEVICE)
    y = torch.randn(10000, device=DEVICE)
    out = torch.empty_like(x)
    add[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    assert torch.equal(out, x + y)
    return {"triton": triton.__version__, "device": DEVICE}

def _ipc_child(tensor, queue):
    queue.put(float(tensor.sum().item()))
    tensor.add_(1)

def tensor_ipc():
    """CUDA: the tensor crosses by CUDA IPC handle. CPU: by shared memory, its fd passed over a
    Unix socket (SCM_RIGHTS)."""
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    t = torch.arange(1024, dtype=torch.float32, device=DEVICE)
    if DEVICE == "cpu":
        t.share_memory_()
    queue = ctx.Queue()
    p = ctx.Process(target=_ipc_child, args=(t, queue))
    p.start()
    seen = queue.get(timeout=120)
    p.join(120)
    assert p.exitcode == 0, p.exitcode
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    assert seen == float(sum(range(1024))), seen
    assert t[0].item() == 1.0, "the child's write through the IPC handle did not reach the parent"
    return {"child_saw": seen, "parent_sees_child_write": True}

if __name__ == "__main__":
    if DEVICE == "cuda":
        check("cuda", cuda)
    check("triton", triton_kernel)
    check(f"{DEVICE}_ipc", tensor_ipc)
'''


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# ---- tools from Debian packages and wheels --------------------------------------------------------
def unpack_debs(debs: Path) -> None:
    """Debian packages (`*.deb`), and tarballs of files taken from them (`*.tar.xz`, paths as in
    the packages): the Docker packages whole are larger than a device call may carry beside the
    repository, so their binaries can travel as one smaller tarball."""
    files = sorted(glob.glob(str(debs / "*.deb"))) + sorted(glob.glob(str(debs / "*.tar.xz")))
    if not files:
        log(f"no .deb or .tar.xz files in {debs}: using the host's tools")
        return
    DEBS_ROOT.mkdir(parents=True, exist_ok=True)
    for f in files:
        cmd = ["dpkg", "-x", f, str(DEBS_ROOT)] if f.endswith(".deb") else ["tar", "-xJf", f, "-C", str(DEBS_ROOT)]
        done = run(cmd)
        if done.returncode != 0:
            log(f"{' '.join(cmd[:2])} {f} failed: {done.stderr.strip()[:300]}")
    bins = [str(DEBS_ROOT / d) for d in ("usr/sbin", "usr/bin", "sbin", "bin")]
    os.environ["PATH"] = os.pathsep.join(bins + [os.environ.get("PATH", "/usr/bin:/bin")])
    libs = [str(p) for p in (DEBS_ROOT / "usr/lib/x86_64-linux-gnu", DEBS_ROOT / "lib/x86_64-linux-gnu") if p.is_dir()]
    if libs:
        # after the host's own: the packages only fill what the host lacks
        os.environ["LD_LIBRARY_PATH"] = os.pathsep.join(
            [p for p in [os.environ.get("LD_LIBRARY_PATH", "")] if p] + ["/usr/lib/x86_64-linux-gnu"] + libs)
    log(f"unpacked {len(files)} packages into {DEBS_ROOT}")
    register_missing_libs(libs)


def register_missing_libs(libs: list[str]) -> None:
    """Shared libraries of the packages that the host lacks, made known to the dynamic loader
    (root only). dockerd re-executes itself to unpack image layers with a cleared environment,
    so LD_LIBRARY_PATH does not reach that child; a copy in a directory of its own keeps the
    host's versions of everything else first."""
    if os.geteuid() != 0:
        return
    # `ldconfig -p` lists sonames (libseccomp.so.2), not file names (libseccomp.so.2.5.4)
    known = {line.split()[0] for line in run(["ldconfig", "-p"]).stdout.splitlines()[1:] if line.strip()}
    missing = [f for d in libs for f in glob.glob(os.path.join(d, "lib*.so.*"))
               if not os.path.islink(f) and os.path.basename(f) not in known and _soname(f) not in known]
    if not missing:
        return
    own = Path("/usr/local/lib/kb-debs")
    own.mkdir(parents=True, exist_ok=True)
    for f in missing:
        shutil.copy2(f, own / os.path.basename(f))
    Path("/etc/ld.so.conf.d/zz-kb-debs.conf").write_text(f"{own}\n")
    run(["ldconfig"])
    log(f"registered {', '.join(sorted(os.path.basename(f) for f in missing))} with the loader")


def _soname(path: str) -> str:
    """libfoo.so.1.2.3 -> libfoo.so.1, the usual soname (libdevmapper's is its whole file name,
    which the caller checks as well)."""
    name = os.path.basename(path)
    stem, _, version = name.partition(".so.")
    return f"{stem}.so.{version.split('.')[0]}" if version else name


def import_docker_sdk(wheels: Path) -> str:
    try:
        import docker  # noqa: F401

        return "installed"
    except ImportError:
        pass
    found = sorted(glob.glob(str(wheels / "*.whl")))
    for whl in found:
        sys.path.append(whl)  # pure-Python wheels import straight from the zip
    os.environ["PYTHONPATH"] = os.pathsep.join([p for p in [os.environ.get("PYTHONPATH", "")] if p] + found)
    try:
        import docker  # noqa: F401,F811

        return f"from {len(found)} wheels in {wheels}"
    except ImportError as exc:
        return f"missing ({exc}); carry docker, requests, urllib3, idna, certifi, charset_normalizer wheels"


def docker_answers() -> bool:
    """The engine answers a ping through the SDK (the docker command-line client is not needed)."""
    try:
        import docker

        docker.from_env(timeout=10).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means "not answering"
        return False


def start_dockerd(out: Path) -> str:
    if docker_answers():
        return "an engine already answers"
    dockerd = shutil.which("dockerd")
    if not dockerd:
        return "no dockerd (carry docker.io, containerd, runc, tini)"
    DOCKER_STATE.mkdir(parents=True, exist_ok=True)
    os.environ["DOCKER_HOST"] = f"unix://{DOCKER_SOCKET}"
    # no bridge, no iptables (every box runs with network "none"); vfs: works on any filesystem
    # (the local image is a few kilobytes); cgroupfs: no systemd needed
    argv = [dockerd, "-H", os.environ["DOCKER_HOST"], "--data-root", str(DOCKER_STATE / "data"),
            "--exec-root", str(DOCKER_STATE / "exec"), "--pidfile", str(DOCKER_STATE / "dockerd.pid"),
            "--bridge", "none", "--iptables=false", "--ip-masq=false", "--storage-driver", "vfs",
            "--exec-opt", "native.cgroupdriver=cgroupfs"]
    logf = open(out / "dockerd.log", "w")
    subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    for _ in range(150):
        if docker_answers():
            return f"started: {' '.join(argv)}"
        time.sleep(0.2)
    return f"dockerd did not answer within 30 s (see {out / 'dockerd.log'})"


# ---- the checks -----------------------------------------------------------------------------------
class Results:
    def __init__(self, out: Path):
        self.out = out
        self.details = out / "details"  # logs and reports; packed into details.tgz at the end
        self.details.mkdir(parents=True, exist_ok=True)
        self.rows: list[dict] = []

    def add(self, backend: str, check: str, ok: bool, detail) -> None:
        self.rows.append({"backend": backend, "check": check, "ok": bool(ok), "detail": detail})
        log(f"{backend:6s} {check:28s} {'ok' if ok else 'FAILED'}")
        self.save()

    def save(self) -> None:
        summary = {"all_ok": bool(self.rows) and all(r["ok"] for r in self.rows), "checks": self.rows}
        (self.out / "sandbox_gpu_check.json").write_text(json.dumps(summary, indent=1, default=str))


def limits_for(device: str):
    from sandbox import Limits

    return Limits(time_limit_s=600, memory_bytes=32 * 1024**3, pids=1024, cpus=8, tmpfs_bytes=8 * 1024**3,
                  gpu_index=int(os.environ.get("SANDBOX_GPU", "0")) if device == "cuda" else None)


def judge_seat(name: str, code: str, device: str, logfile: Path):
    import sandbox
    from sandbox import box

    backend = sandbox.BACKENDS[name]
    # written to a file in the box's /tmp first, then run from there
    boot = f"import runpy; open('/tmp/kb_check.py', 'w').write({code!r}); runpy.run_path('/tmp/kb_check.py', run_name='__main__')"
    made = sandbox.make_box(backend, source=b"", device=device, limits=limits_for(device),
                            argv_for=lambda python: [python, "-c", boot])
    try:
        outcome = backend.run(made)
    finally:
        box.remove_workdir(made.workdir)
    logfile.write_text(outcome.logs)
    return outcome


def check_backend(name: str, device: str, res: Results, *, ranked: bool) -> None:
    import sandbox
    from seccomp_probe import parse, probe_source, problems

    reason = sandbox.BACKENDS[name].unavailable_reason()
    if reason:
        res.add(name, "backend available", False, reason)
        return
    res.add(name, "backend available", True, "")

    # 1. the judge's seat: CUDA, Triton, CUDA IPC
    outcome = judge_seat(name, JUDGE_CHECKS % {"device": device}, device, res.details / f"{name}_judge_checks.log")
    rows = [json.loads(line.split(" ", 1)[1]) for line in outcome.logs.splitlines() if line.startswith("CHECK ")]
    if not rows:
        res.add(name, "judge seat: checks ran", False, outcome.logs[-3000:])
    for row in rows:
        res.add(name, f"judge seat: {row['check']}", row["ok"], row["detail"])

    # 1b. the judge's seat: every denied call fails
    outcome = judge_seat(name, probe_source(), device, res.details / f"{name}_judge_seccomp.log")
    found = parse(outcome.logs)
    filtered = "SECCOMP 2 uid 0" in outcome.logs
    res.add(name, "judge seat: filter on", filtered, outcome.logs.splitlines()[:1])
    res.add(name, "judge seat: denied calls fail", filtered and not problems(found), problems(found))

    # 2. an evaluation of examples/softmax.py, test mode, as a worker runs it
    source = (ROOT / "examples" / "softmax.py").read_bytes()
    result = sandbox.evaluate(source=source, task="softmax", mode="test", device=device, backend=name,
                              limits=limits_for(device))
    (res.details / f"{name}_eval_softmax.json").write_text(json.dumps(result.report.to_json(), indent=1))
    tests = result.report.to_json().get("tests") or []
    ok = result.report.to_json()["verdict"] == "verified" and tests and all(t["passed"] for t in tests)
    res.add(name, "evaluate examples/softmax.py", ok,
            {"verdict": result.report.to_json()["verdict"], "reasons": result.report.to_json()["reasons"],
             "wall_s": round(result.wall_s, 2), "overhead_s": round(result.overhead_s, 3)})

    # 2b. ranked: the timing, and on a GPU compute-sanitizer (memcheck, racecheck) in the box
    if ranked:
        result = sandbox.evaluate(source=source, task="softmax", mode="ranked", device=device, backend=name,
                                  limits=limits_for(device))
        (res.details / f"{name}_eval_softmax_ranked.json").write_text(json.dumps(result.report.to_json(), indent=1))
        res.add(name, "evaluate ranked (sanitizer)", result.report.to_json()["verdict"] in ("verified", "flagged")
                and not set(result.report.to_json()["reason_codes"]) & {"crash", "sandbox", "timeout", "out_of_memory"},
                {"verdict": result.report.to_json()["verdict"], "reasons": result.report.to_json()["reasons"],
                 "speedup_vs_compile": result.report.to_json().get("speedup_vs_compile"),
                 "phases": result.report.to_json().get("phases"), "wall_s": round(result.wall_s, 2)})
        if device == "cuda":
            # both tools ran in the box and found nothing in the honest kernel (ok None: could not run)
            tools = result.report.to_json().get("sanitizer") or []
            res.add(name, "ranked: compute-sanitizer ran", len(tools) == 2 and all(t["ok"] is True for t in tools),
                    tools)

    # 3. the submission's seat: the denied calls fail there too; the honest kernel still passes
    honest = (ROOT / "examples" / "softmax.py").read_text()
    result = sandbox.evaluate(source=probe_source(honest + "\n").encode(), task="softmax", mode="test",
                              device=device, backend=name, limits=limits_for(device))
    (res.details / f"{name}_runner_seccomp.json").write_text(json.dumps(result.report.to_json(), indent=1))
    text = result.report.to_json().get("logs", "") + result.logs
    found = parse(text)
    filtered = "SECCOMP 2 uid 65534" in text
    res.add(name, "runner seat: filter on, uid 65534", filtered, [l for l in text.splitlines() if "SECCOMP" in l][:1])
    res.add(name, "runner seat: denied calls fail", filtered and not problems(found), problems(found))
    tests = result.report.to_json().get("tests") or []
    res.add(name, "runner seat: kernel still passes", bool(tests) and all(t["passed"] for t in tests),
            {"verdict": result.report.to_json()["verdict"], "reason_codes": result.report.to_json()["reason_codes"]})


def environment(out: Path, device: str) -> dict:
    info = {"python": sys.version.split()[0], "machine": platform.machine(), "kernel": platform.release()}
    try:
        import torch
        import triton

        info.update(torch=torch.__version__, cuda=torch.version.cuda, triton=triton.__version__)
        if device == "cuda":
            info["gpu"] = torch.cuda.get_device_name()
    except Exception as exc:
        info["torch_error"] = repr(exc)
    for tool in ("bwrap", "docker", "dockerd", "runc", "containerd", "nvidia-smi"):
        path = shutil.which(tool)
        version = ""
        if path and tool != "nvidia-smi":
            version = (run([path, "--version"], timeout=30).stdout or "").strip().splitlines()[:1]
        info[tool] = {"path": path, "version": version}
    (out / "environment.json").write_text(json.dumps(info, indent=1))
    return info


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--debs", default=str(ROOT / ".debs"))
    p.add_argument("--wheels", default=str(ROOT / ".whl"))
    p.add_argument("--backends", default="bwrap,docker")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--no-ranked", dest="ranked", action="store_false",
                   help="skip the ranked evaluation (about a minute per backend on the H200)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    os.environ.setdefault("SANDBOX_WORK_DIR", "/tmp/kb-sandbox-work")
    os.environ.setdefault("SANDBOX_STATE_DIR", "/tmp/kb-sandbox-state")
    res = Results(out)
    if os.geteuid() != 0:
        res.add("-", "running as root", False, "the bwrap backend and Docker's engine need root")
        return 1
    unpack_debs(Path(args.debs))
    backends = [b for b in args.backends.split(",") if b]
    if "docker" in backends:
        res.add("docker", "docker SDK", True, import_docker_sdk(Path(args.wheels)))
        status = start_dockerd(res.details)
        res.add("docker", "engine", docker_answers(), status)
    log(json.dumps(environment(res.details, args.device)))
    for name in backends:
        try:
            check_backend(name, args.device, res, ranked=args.ranked)
        except Exception:
            res.add(name, "ran to the end", False, traceback.format_exc()[-3000:])
    res.save()
    # two files come back: the summary and one archive (the device tool returns few files)
    subprocess.run(["tar", "czf", str(out / "details.tgz"), "-C", str(out), "details"], check=False)
    shutil.rmtree(res.details, ignore_errors=True)
    failed = [r for r in res.rows if not r["ok"]]
    log(f"{len(res.rows) - len(failed)} of {len(res.rows)} checks passed; results in {out}/sandbox_gpu_check.json")
    for r in failed:
        log(f"FAILED {r['backend']} {r['check']}: {str(r['detail'])[:500]}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
