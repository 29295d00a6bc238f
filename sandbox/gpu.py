"""One GPU per box, and the worker's check that nothing else holds it.

The worker's GPU is `Limits.gpu_index` (SANDBOX_GPU). Docker gets it through `device_requests`
when the NVIDIA runtime is installed; otherwise (and for bwrap) the device nodes of that GPU,
/dev/nvidiactl and /dev/nvidia-uvm are passed explicitly, with the driver's user-space libraries
bound read-only. CUDA_VISIBLE_DEVICES is only a name inside the box, never the isolation.

Before and after every run, `nvidia-smi --query-compute-apps` must list no process on the GPU;
if one is there the GPU is taken out of service (a flag file) and SandboxError is raised, so the
worker stops taking CUDA jobs until someone looks at it and removes the flag.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import time
from pathlib import Path

from .box import Bind, GpuPlan
from .errors import SandboxError
from .image import PROJECT_ROOT

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64")
# The driver's user-space side: what CUDA, NVML and the PTX JIT load at run time.
DRIVER_LIBS = ("libcuda.so*", "libnvidia-ml.so*", "libnvidia-ptxjitcompiler.so*",
               "libnvidia-nvvm.so*", "libnvidia-gpucomp.so*")
LIBS_INSIDE = "/usr/local/nvidia/lib64"


def state_dir() -> Path:
    return Path(os.environ.get("SANDBOX_STATE_DIR") or PROJECT_ROOT / "var" / "sandbox")


def flag_path(index: int) -> Path:
    return state_dir() / f"gpu{index}.out-of-service"


def mark_out_of_service(index: int, reason: str) -> None:
    path = flag_path(index)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')} {reason}\n")


def check_in_service(index: int) -> None:
    path = flag_path(index)
    if path.exists():
        raise SandboxError(f"GPU {index} is out of service ({path.read_text().strip()}); "
                           f"remove {path} once it is free")


def compute_apps(index: int) -> list[str]:
    """Processes that hold the GPU now, as nvidia-smi lists them (host pids)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise SandboxError("nvidia-smi is not installed: cannot check the GPU is free")
    try:
        done = subprocess.run(
            [smi, "-i", str(index), "--query-compute-apps=pid,process_name,used_memory",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"nvidia-smi failed: {exc}") from exc
    if done.returncode != 0:
        raise SandboxError(f"nvidia-smi failed: {(done.stderr or done.stdout).strip()[:500]}")
    return parse_compute_apps(done.stdout)


def parse_compute_apps(text: str) -> list[str]:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return [line for line in lines if not line.lower().startswith("no running")]


def ensure_idle(index: int, when: str, *, settle_s: float = 2.0) -> None:
    """`when` is "before" or "after" the run. After a run, a context can take a moment to go."""
    apps = compute_apps(index)
    deadline = time.monotonic() + (settle_s if when == "after" else 0.0)
    while apps and time.monotonic() < deadline:
        time.sleep(0.2)
        apps = compute_apps(index)
    if apps:
        reason = f"{when} a run, processes held GPU {index}: {'; '.join(apps)[:500]}"
        mark_out_of_service(index, reason)
        raise SandboxError(f"GPU {index} taken out of service: {reason}")


# installs of CUDA tools that may lie outside /usr (Nsight Compute's default place)
TOOL_DIRS = ("/opt/nvidia/nsight-compute",)


def device_nodes(index: int, dev: str = "/dev") -> tuple[str, ...]:
    nodes = (f"{dev}/nvidia{index}", f"{dev}/nvidiactl", f"{dev}/nvidia-uvm")
    missing = [n for n in nodes if not os.path.exists(n)]
    if missing:
        raise SandboxError(f"GPU {index}: missing device nodes {', '.join(missing)} "
                           "(is the NVIDIA driver loaded, and nvidia-uvm?)")
    return nodes


def driver_libs(lib_dirs=LIB_DIRS) -> list[str]:
    found, names = [], set()
    for directory in lib_dirs:
        for pattern in DRIVER_LIBS:
            for path in sorted(glob.glob(os.path.join(directory, pattern))):
                name = os.path.basename(path)
                if name not in names and os.path.isfile(path):
                    names.add(name)
                    found.append(path)
    if not any(os.path.basename(p).startswith("libcuda.so") for p in found):
        raise SandboxError("the NVIDIA driver library libcuda.so was not found on this host")
    return found


def plan(index: int, *, runtime_binds=(), nvidia_runtime: bool = False) -> GpuPlan:
    """What to pass into the box for GPU `index`. Driver libraries already visible through the
    runtime binds (the local image binds all of /usr) are not bound a second time; the CUDA
    tools' installs outside them (tool_binds) are bound with either runtime."""
    bound = [b.source for b in runtime_binds if b.source == b.target]
    if nvidia_runtime:
        return GpuPlan(index=index, device_nodes=(), lib_binds=tuple(tool_binds(bound)), docker_request=True)
    nodes = device_nodes(index)
    libs = []
    for path in driver_libs():
        if any(path.startswith(root.rstrip("/") + "/") for root in bound):
            continue
        libs.append(Bind(path, f"{LIBS_INSIDE}/{os.path.basename(path)}"))
    libs += tool_binds(bound)
    return GpuPlan(index=index, device_nodes=nodes, lib_binds=tuple(libs), docker_request=False)


def tool_binds(bound, dirs=None) -> list[Bind]:
    """Read-only binds, at the same path, of the CUDA tools' installs that the runtime binds do not
    already show: the `ncu` in the toolkit's bin is a script that runs the Nsight Compute install
    it finds under the toolkit or under /opt/nvidia, and without it profile mode in the box falls
    back to torch.profiler."""
    found = []
    for directory in TOOL_DIRS if dirs is None else dirs:
        if not os.path.isdir(directory) or any(directory == r or directory.startswith(r.rstrip("/") + "/")
                                               for r in bound):
            continue
        found.append(Bind(directory, directory))
    return found


def judge_cache(device: str) -> str:
    """The host directory the boxes' judges keep their compile cache in, or "" for none:
    SANDBOX_JUDGE_CACHE when it names one ("off": none); unset, one under SANDBOX_STATE_DIR,
    since without it every ranked evaluation compiles its baselines cold and alone (on a GPU it
    autotunes them too; on a 2-core CPU the compile takes 25 s cold against 9 s warm).
    `device` is kept for the callers: both kinds keep the same directory."""
    named = os.environ.get("SANDBOX_JUDGE_CACHE", "").strip()
    if named == "off":
        return ""
    return named or str(state_dir() / "judge-cache")
