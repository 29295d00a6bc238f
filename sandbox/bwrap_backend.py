"""The bubblewrap backend: the same box as Docker's, for hosts without a Docker engine.

Namespaces: mount, pid, net, ipc, uts and cgroup are new. The user namespace is NOT: the host
side runs as root so that, inside, the judge stays root with only CAP_SETUID, CAP_SETGID and
CAP_KILL and can start the submission's runner as uid 65534 (a user namespace made by bwrap maps
a single uid, so the judge and the submission would share one user). That is also why this
backend refuses to run as non-root: the judge must be another user than the submission.
"""
from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import threading
import time

from .box import (GROUP, OUT_DIR, PASSWD, SUBMISSION_DIR, TASKS_DIR, Box, Outcome, OutputKeeper)
from .seccomp import bpf_program
from .cgroup import Cgroup
from .errors import SandboxError

NAME = "bwrap"
JUDGE_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL")
# A fresh procfs lets uid 0 write host-global settings through plain file permissions (sysctls
# such as kernel.core_pattern need no capability): the judge is root, so, as Docker does, these
# are made read-only and the informational leaks are covered.
PROC_READ_ONLY = ("bus", "fs", "irq", "sys", "sysrq-trigger")
PROC_MASKED = ("acpi", "asound", "kcore", "keys", "latency_stats", "sched_debug", "scsi",
               "timer_list", "timer_stats")
KILL_GRACE_S = 5.0


def describe() -> dict:
    """The report's `box` for a run in this backend: bubblewrap and its version."""
    path = shutil.which("bwrap") or "bwrap"
    try:
        changed = os.stat(path).st_mtime_ns  # an upgraded bwrap is asked again
    except OSError:
        changed = 0
    return {"backend": "bubblewrap", "version": _version(path, changed), "image": None, "image_id": None}


@functools.lru_cache(maxsize=4)
def _version(path: str, changed: int) -> str | None:
    """`bwrap --version` ("bubblewrap 0.8.0") as "0.8.0"; None when it does not say."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                             env={"PATH": "/usr/bin:/bin"}).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out.split()[-1][:64] if out else None


def unavailable_reason() -> str | None:
    if not shutil.which("bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    if os.geteuid() != 0:
        return "the bwrap backend needs root: the judge must run as another user than the submission"
    return None


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def build_args(box: Box, *, status_fd: int, seccomp_fd: int | None = None, data=None) -> list[str]:
    """bwrap's options for `box`; the command (box.argv) follows them. `data(bytes)` gives a
    readable descriptor holding those bytes, for what bwrap writes into the box (default: a memory
    file the caller must close and pass on).

    What the box is given as bytes (its passwd and group, the venv's pyvenv.cfg, the upload, the
    blank /proc masks) is written by bwrap into the box's own root or its own tmpfs, so that
    /proc/self/mountinfo shows no host path for it: a bind mount shows its source's path within
    the host's filesystem, which would name the run's host work directory."""
    data = data or _memfile
    limits = box.limits
    args = [
        "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent", "--new-session", "--hostname", "sandbox",
        "--clearenv", "--cap-drop", "ALL",
    ]
    for cap in JUDGE_CAPS:
        args += ["--cap-add", cap]
    for name, value in sorted(box.env.items()):
        args += ["--setenv", name, value]
    # parents of every mount point first, world-traversable (bwrap would make them 0700)
    targets = [b.target for b in box.runtime.binds]
    targets += [b.target for b in (box.gpu.lib_binds if box.gpu else ())]
    targets += [t for t, _ in box.runtime.symlinks] + [t for t, _ in box.runtime.files]
    # the site's task definitions, as files of the box's own root like the upload: read-only
    # after --remount-ro /, and no host path of them in mountinfo
    task_files = [(f"{TASKS_DIR}/{rel}", content) for rel, content in sorted(box.task_files.items())]
    targets += [t for t, _ in task_files]
    made = set()
    for target in targets + ["/etc/passwd", f"{SUBMISSION_DIR}/x", f"{OUT_DIR}/x"]:
        for parent in _parents(target):
            if parent not in made:
                made.add(parent)
                args += ["--perms", "0755", "--dir", parent]
    for target, text in box.runtime.symlinks:
        args += ["--symlink", text, target]
    for bind in box.runtime.binds:
        args += ["--ro-bind" if bind.read_only else "--bind", bind.source, bind.target]
    # files in the box's root (read-only after --remount-ro /), not mounts
    upload = (box.submission_dir / "submission.py").read_bytes()
    for target, content in [*((t, text.encode()) for t, text in box.runtime.files),
                            ("/etc/passwd", PASSWD.encode()), ("/etc/group", GROUP.encode()),
                            (f"{SUBMISSION_DIR}/submission.py", upload), *task_files]:
        args += ["--perms", "0644", "--file", str(data(content)), target]
    # /out is the one host directory bound in: the judge's report comes back through it
    args += ["--bind", str(box.out_dir), OUT_DIR,
             "--proc", "/proc"]
    args += _proc_covers(data)
    args += ["--dev", "/dev",
             "--perms", "1777", "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm"]
    # read-only like Docker's: torch reads the CPU topology, CUDA / NVML the PCI tree
    if box.gpu:
        args += ["--ro-bind", "/sys", "/sys"]
    else:
        args += ["--ro-bind-try", "/sys/devices/system/cpu", "/sys/devices/system/cpu"]
    if box.gpu:
        for node in box.gpu.device_nodes:
            args += ["--dev-bind", node, node]
        for bind in box.gpu.lib_binds:
            args += ["--ro-bind", bind.source, bind.target]
    if seccomp_fd is not None:
        # loaded by bwrap right before it starts the judge: the whole box runs under it
        args += ["--seccomp", str(seccomp_fd)]
    args += ["--remount-ro", "/", "--chdir", "/tmp", "--json-status-fd", str(status_fd)]
    return args


def _proc_covers(data) -> list[str]:
    """Host paths are the sources: these /proc entries are global, not per pid namespace. A
    masked directory gets an empty read-only tmpfs, a masked file an empty read-only file that
    bwrap makes (`data`, see build_args): neither names a host path in mountinfo."""
    args = []
    for name in PROC_READ_ONLY:
        if os.path.exists(f"/proc/{name}"):
            args += ["--ro-bind", f"/proc/{name}", f"/proc/{name}"]
    for name in PROC_MASKED:
        path = f"/proc/{name}"
        if os.path.isdir(path):
            args += ["--perms", "0555", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--perms", "0444", "--ro-bind-data", str(data(b"")), path]
    return args


def _count_processes(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def _rlimits(box: Box, with_cgroup: bool) -> list[tuple[int, int]]:
    limits = box.limits
    values = [(resource.RLIMIT_NOFILE, limits.nofile), (resource.RLIMIT_CORE, 0)]
    if not with_cgroup:
        # No cgroup: RLIMIT_NPROC counts every process of the user, host-wide; the judge is root,
        # so leave room for root's existing processes. Memory: RLIMIT_DATA (never RLIMIT_AS,
        # which CUDA's address-space reservations would trip) for CPU runs only.
        values.append((resource.RLIMIT_NPROC, limits.pids + _count_processes(0)))
        if box.gpu is None:
            values.append((resource.RLIMIT_DATA, limits.memory_bytes))
    return values


def run(box: Box) -> Outcome:
    reason = unavailable_reason()
    if reason:
        raise SandboxError(reason)
    started = time.monotonic()
    filter_fd = _seccomp_fd()  # first: a missing program leaves nothing to clean up
    group = Cgroup.create(box.run_id, box.limits)
    keeper = OutputKeeper(box.limits.log_bytes)
    events: dict[str, float | int] = {}
    proc = None
    try:
        status_r, proc = _start(box, group, filter_fd)
        timed_out = _wait(proc, box, group, started, status_r, keeper, events)
        if group:
            group.kill_all()  # a child that outlived the judge, however it tried
        oom = bool(group and group.oom_killed())
        exit_code = events.get("exit-code", proc.returncode)
        if "child-pid" not in events and not timed_out:
            raise SandboxError(f"bwrap could not set up the box: {keeper.text()[-2000:]}")
    finally:
        if proc and proc.poll() is None:
            _kill(proc, group)
        if proc and proc.stdout:
            proc.stdout.close()
        if group:
            group.kill_all()
            group.remove()
    wall = time.monotonic() - started
    payload = events.get("exited_at", time.monotonic()) - events.get("started_at", started)
    return Outcome(exit_code=None if timed_out else int(exit_code), timed_out=timed_out,
                   oom_killed=oom, logs=keeper.text(), wall_s=wall, payload_s=max(0.0, payload),
                   box=describe())


def _start(box: Box, group: Cgroup | None, filter_fd: int) -> tuple[int, subprocess.Popen]:
    """Start bwrap; the child joins the cgroup and takes its rlimits before exec, so the box
    never runs a moment unconfined. Returns the read end of bwrap's status pipe and the process;
    the descriptors handed to the child are closed here either way."""
    rlimits = _rlimits(box, group is not None)
    status_r, status_w = os.pipe()
    if group:
        group.open_for_attach()

    def in_child():
        if group:
            group.attach_self()
        for which, value in rlimits:
            resource.setrlimit(which, (value, value))

    data_fds: list[int] = []

    def data(content: bytes) -> int:
        data_fds.append(_memfile(content))
        return data_fds[-1]

    args_fd = None
    try:
        args_fd = _args_file(build_args(box, status_fd=status_w, seccomp_fd=filter_fd, data=data))
        # bwrap's own process is the box's pid 1, whose command line every process in the box can
        # read: it gets its options (the host paths of every mount) from a file instead, and the
        # command line holds only the command, whose paths are the box's
        proc = subprocess.Popen(
            ["bwrap", "--args", str(args_fd), "--", *box.argv], executable=shutil.which("bwrap") or "bwrap",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            pass_fds=(status_w, filter_fd, args_fd, *data_fds),
            env={"PATH": "/usr/bin:/bin"}, preexec_fn=in_child, start_new_session=True,
            close_fds=True)
    except OSError as exc:
        os.close(status_r)
        raise SandboxError(f"could not start bwrap: {exc}") from exc
    finally:
        os.close(status_w)
        os.close(filter_fd)
        for fd in ([args_fd] if args_fd is not None else []) + data_fds:
            os.close(fd)
        if group:
            group.close_attach()
    return status_r, proc


def _memfile(content: bytes) -> int:
    """A memory file holding `content`, positioned at its start, for bwrap's --file and
    --ro-bind-data (each reads its descriptor to the end)."""
    fd = os.memfd_create("bwrap-data")
    os.write(fd, content)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _args_file(args: list[str]) -> int:
    """A memory file of bwrap's options, each NUL-terminated, for `--args FD`; bwrap reads it
    before the box starts and the box does not inherit it."""
    fd = os.memfd_create("bwrap-args")
    os.write(fd, b"".join(arg.encode() + b"\0" for arg in args))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _wait(proc, box: Box, group: Cgroup | None, started: float, status_r: int, keeper, events: dict) -> bool:
    """Wait for the box within its time limit while its output and bwrap's status are read.
    True when it ran out of time and was killed."""
    readers = [threading.Thread(target=_drain, args=(proc.stdout, keeper), daemon=True),
               threading.Thread(target=_status, args=(status_r, events), daemon=True)]
    for t in readers:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=max(0.0, box.limits.time_limit_s - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc, group)
    for t in readers:
        t.join(KILL_GRACE_S)
    return timed_out


def _seccomp_fd() -> int:
    """The box's seccomp program (sandbox/seccomp.py) in a memory file, read by bwrap."""
    program = bpf_program()
    fd = os.memfd_create("kernelboard-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _kill(proc: subprocess.Popen, group: Cgroup | None) -> None:
    if group:
        group.kill_all()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # bwrap dies; --die-with-parent takes the box down
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        raise SandboxError(f"bwrap pid {proc.pid} did not die after SIGKILL") from None


def _drain(stream, keeper: OutputKeeper) -> None:
    while True:
        chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
        if not chunk:
            return
        keeper.feed(chunk)


def _status(fd: int, events: dict) -> None:
    """bwrap's --json-status-fd: one JSON object when the command starts, one when it exits."""
    buf = b""
    try:
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if "child-pid" in obj:
                    events["child-pid"] = obj["child-pid"]
                    events["started_at"] = time.monotonic()
                if "exit-code" in obj:
                    events["exit-code"] = obj["exit-code"]
                    events["exited_at"] = time.monotonic()
    finally:
        os.close(fd)
