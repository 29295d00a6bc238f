"""What both backends run: the layout inside the box, its environment, and what comes back.

Inside every box:
    /submission/submission.py   the upload, read-only
    /out/                       the judge's output directory: mode 0700, owned by root; only the
                                judge (root in the box) can enter it, the submission (uid 65534) can't
    /tmp, /dev/shm              size-capped tmpfs: scratch and compiler caches, gone with the box
    /opt/kernelboard/evaluator  the evaluator package, read-only
    /tasks/                     task definitions the site holds (a task file, a folder, a level's
                                directory), read-only, when the run is given any: trusted staff
                                code that only the evaluator in the box imports
    the Python runtime          read-only (host binds for the local image, or baked into the image)
"""
from __future__ import annotations

import dataclasses
import os
import re
import secrets
import shutil
import tempfile
from pathlib import Path

from .limits import Limits

SUBMISSION_DIR = "/submission"
SUBMISSION_FILE = "/submission/submission.py"
OUT_DIR = "/out"
REPORT_FILE = "/out/report.json"
PROGRESS_FILE = "/out/progress.jsonl"  # the judge's progress lines (evaluator/contract/progress.py)
PROFILE_FILE = "/out/profile.ncu-rep"  # profile mode on a GPU: Nsight Compute's report, when made
EVALUATOR_ROOT = "/opt/kernelboard"
TASKS_DIR = "/tasks"  # the site's task definitions (EVALUATOR_TASKS_PATH), read-only
JUDGE_CACHE = "/var/cache/kernelboard-judge"  # optional (SANDBOX_JUDGE_CACHE), judge-only
LABEL = "kernelboard.sandbox"  # on every container and cgroup we create: cleanup finds them by it
WORK_PREFIX = "kernelboard-sandbox-"

TASK_PATH_PART = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
MAX_TASK_FILES = 512
MAX_TASK_BYTES = 32 * 1024 * 1024

PASSWD = "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"

# Host variables that may cross into the box, by name. Nothing else does: the box's environment
# is built from scratch, so no secret of the worker (SECRET_KEY, DATABASE_URL, ...) can leak in.
# Both are the operator's and hold no secret: the tests' quick mode, and the CPU's rounds budget
# (evaluator/judge/timed.py), which the judge in the box must read for the worker's setting to count.
PASS_THROUGH = ("EVALUATOR_QUICK", "EVALUATOR_CPU_ROUNDS_S")


@dataclasses.dataclass(frozen=True)
class Bind:
    source: str
    target: str
    read_only: bool = True


@dataclasses.dataclass(frozen=True)
class Runtime:
    """How to start Python inside the box and which host paths make that possible."""

    python: str
    binds: tuple[Bind, ...] = ()
    symlinks: tuple[tuple[str, str], ...] = ()  # (target inside, link text): /lib -> usr/lib
    image: str | None = None  # Docker image; None for bwrap
    path: str = ""  # PATH inside, when the image defines its own
    # generated files inside the box, (path inside, text): the venv's pyvenv.cfg. In the local
    # image's root filesystem for Docker, written into the box's own root by bwrap: not a mount
    files: tuple[tuple[str, str], ...] = ()
    library_path: str = ""  # LD_LIBRARY_PATH inside, for an interpreter bound away from its own path


@dataclasses.dataclass(frozen=True)
class GpuPlan:
    index: int
    device_nodes: tuple[str, ...]  # host paths, passed as the same paths inside
    lib_binds: tuple[Bind, ...]  # driver libraries and CUDA tools' installs, read-only
    docker_request: bool  # Docker: use device_requests (NVIDIA runtime) instead of the nodes


@dataclasses.dataclass
class Box:
    argv: list[str]
    env: dict[str, str]
    runtime: Runtime
    workdir: Path  # host directory holding submission/ and out/
    limits: Limits
    gpu: GpuPlan | None = None
    run_id: str = ""  # "<deadline>-<random>": names the container label, cgroup and work dir
    # task definitions for /tasks, {relative path: bytes}; empty when the run needs none
    task_files: dict[str, bytes] = dataclasses.field(default_factory=dict)

    @property
    def submission_dir(self) -> Path:
        return self.workdir / "submission"

    @property
    def out_dir(self) -> Path:
        return self.workdir / "out"

    @property
    def tasks_dir(self) -> Path:
        return self.workdir / "tasks"


@dataclasses.dataclass
class Outcome:
    exit_code: int | None
    timed_out: bool
    oom_killed: bool
    logs: str
    wall_s: float  # everything: create, start, run, exit, remove
    payload_s: float  # the command itself, as far as the backend can see it
    # which box ran it, as the host knows it (backend, its version, the image): the report's `box`
    box: dict | None = None


def box_env(*, device: str, limits: Limits, extra_path: str = "", host_env=None) -> dict[str, str]:
    host_env = os.environ if host_env is None else host_env
    threads = str(max(1, int(limits.effective_cpus())))
    env = {
        "PATH": ":".join(p for p in (extra_path, "/usr/local/bin:/usr/bin:/bin") if p),
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": EVALUATOR_ROOT,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
    }
    env["EVALUATOR_PROGRESS_FILE"] = PROGRESS_FILE
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env["CUDA_VISIBLE_DEVICES"] = "0"  # the one GPU passed in; not isolation, just naming
        # which of the host's GPUs that is, for the report (the judge sees it as its device 0)
        env["EVALUATOR_HOST_GPU"] = str(limits.gpu_index if limits.gpu_index is not None else 0)
    for name in PASS_THROUGH:
        if name in host_env:
            env[name] = host_env[name]
    return env


def new_run_id(deadline: float) -> str:
    return f"{int(deadline)}-{secrets.token_hex(4)}"


def check_task_files(files: dict) -> dict[str, bytes]:
    """Task definitions as the box gets them: relative paths of plain names (letters, digits,
    '.', '_', '-'), no '..', at most MAX_TASK_FILES files and MAX_TASK_BYTES in all. ValueError
    otherwise: the caller named them, nothing inside the box did."""
    if not isinstance(files, dict) or len(files) > MAX_TASK_FILES:
        raise ValueError(f"task files: a dict of at most {MAX_TASK_FILES} files")
    checked, total = {}, 0
    for rel, data in files.items():
        parts = rel.split("/") if isinstance(rel, str) else []
        if not parts or not all(TASK_PATH_PART.match(p) and p not in (".", "..") for p in parts):
            raise ValueError(f"task files: not a plain relative path: {rel!r}")
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"task files: {rel}: bytes expected")
        total += len(data)
        checked[rel] = bytes(data)
    if total > MAX_TASK_BYTES:
        raise ValueError(f"task files: {total} bytes, more than {MAX_TASK_BYTES}")
    names = set(checked)
    for rel in checked:  # a file and a directory of one name cannot both be made
        parts = rel.split("/")
        if any("/".join(parts[:i]) in names for i in range(1, len(parts))):
            raise ValueError(f"task files: {rel!r} is below a file of the same name")
    return checked


def write_task_files(root: Path, files: dict[str, bytes]) -> None:
    """The files under `root`, directories 0755 and files 0644: the runner's user may read them
    (the judge's runner loads nothing from them, but the modes must not depend on the umask)."""
    root.mkdir(mode=0o755)
    os.chmod(root, 0o755)
    for rel, data in files.items():
        path = root
        for part in rel.split("/")[:-1]:
            path = path / part
            if not path.is_dir():
                path.mkdir(mode=0o755)
                os.chmod(path, 0o755)
        target = root / rel
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(target, 0o644)


def make_workdir(source: bytes, *, deadline: float, base: str | None = None,
                 task_files: dict[str, bytes] | None = None) -> Path:
    """A fresh host directory for one run: submission/ (world-readable, the runner reads it) and
    out/ (0700 root: see docs/sandbox.md for the non-root worker case). The name starts with the
    run's deadline so that cleanup knows when it is stale.

    The directory itself is 0700: on the host nobody but the worker's user reaches the upload or
    the report. Inside the box its subdirectories are mount points, so their own modes apply."""
    base = base or os.environ.get("SANDBOX_WORK_DIR") or None
    if base:
        os.makedirs(base, mode=0o700, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{int(deadline)}-", dir=base))
    os.chmod(work, 0o700)
    sub = work / "submission"
    sub.mkdir(mode=0o755)
    os.chmod(sub, 0o755)
    fd = os.open(sub / "submission.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(source)
    os.chmod(sub / "submission.py", 0o644)
    out = work / "out"
    out.mkdir(mode=0o700)
    os.chmod(out, 0o700 if os.geteuid() == 0 else 0o770)
    etc = work / "etc"
    etc.mkdir(mode=0o755)
    os.chmod(etc, 0o755)
    (etc / "passwd").write_text(PASSWD)
    (etc / "group").write_text(GROUP)
    for f in ("passwd", "group"):
        os.chmod(etc / f, 0o644)
    if task_files:
        # Docker binds this read-only at /tasks; bwrap writes the same bytes into the box's root
        write_task_files(work / "tasks", task_files)
    return work


def remove_workdir(work: Path) -> None:
    shutil.rmtree(work, ignore_errors=True)


class OutputKeeper:
    """Keeps the head and the tail of a stream within `limit` bytes; counts what it drops."""

    def __init__(self, limit: int):
        limit -= 64  # room for the "bytes cut" line, so the text never exceeds `limit`
        self.head_limit = limit // 4
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        kept = len(self.head) + len(self.tail)
        middle = b""
        if self.total > kept:
            middle = f"\n[... {self.total - kept} bytes of output cut ...]\n".encode()
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", "replace")


def truncate_text(data: bytes, limit: int) -> str:
    keeper = OutputKeeper(limit)
    keeper.feed(data)
    return keeper.text()
