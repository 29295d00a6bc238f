"""How the runner is isolated from the judge: its user, its privileges, its PID namespace.

As root the runner runs as nobody (uid/gid 65534, no supplementary groups); it sets no_new_privs
itself before importing the submission, and the switch away from uid 0 clears its capabilities.
Another user cannot signal, trace or read the judge, nor open its /proc files. Not root: the runner
shares the judge's uid, the report says so, and the judge makes itself non-dumpable so its /proc
files (environ, mem) are still closed to the runner.

The judge side (the work directory, the runner process) is in workdir.py and runner_process.py;
the functions below `drop_privileges` are called by the runner and the checker themselves.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import tempfile
from pathlib import Path

NOBODY = 65534
PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
# environment passed through to the runner: paths and device selection, never credentials
ENV_PASSTHROUGH = ("PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
                   "TORCH_CUDA_ARCH_LIST", "LANG", "LC_ALL", "TZ", "EVALUATOR_PID_NAMESPACE",
                   "PYTHONFAULTHANDLER",  # a crashing runner's stack, in the report's logs
                   # the timing's pre-flush writes and gate hold (A/B runs in bench/)
                   "EVALUATOR_GPU_WARM_MS", "EVALUATOR_GPU_GATE_HOLD_MS",
                   "EVALUATOR_FAST_INPUTS",  # the checker's input writer (A/B runs in bench/)
                   "EVALUATOR_TASKS_PATH")  # where the tasks beyond the built-in ones are (tasks/loader.py)
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def is_root() -> bool:
    return os.geteuid() == 0


def _prctl(option: int, arg: int) -> bool:
    """prctl(option, arg); False when it failed or libc could not be loaded."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, arg, 0, 0, 0) == 0
    except OSError:
        return False


def make_undumpable() -> None:
    """Close the judge's /proc/<pid>/{environ,mem,...} and ptrace to processes of its own uid."""
    _prctl(PR_SET_DUMPABLE, 0)


def die_with_parent(parent: int) -> bool:
    """SIGKILL this process when the thread that started it ends (PR_SET_PDEATHSIG); True when set
    and the parent is still `parent` (it may have ended before the call)."""
    return _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() == parent


# ---- runner side: called by the runner before it imports anything but the standard library ----

CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x2, 0x4, 0x8
MNT_DETACH = 2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38


def drop_privileges(uid: int, gid: int, needed: list[str]) -> list[str]:
    """Become uid/gid with no groups, no capabilities and no_new_privs. Returns notes on what
    could not be done (an empty list is full success).

    The interpreter may live under a directory that `uid` cannot enter (e.g. /root/.pyenv): in a
    private mount namespace such a directory is covered with an empty tmpfs into which only the
    `needed` paths are bind-mounted back, so the runner sees the interpreter and nothing else of it.
    """
    notes = []
    libc = ctypes.CDLL(None, use_errno=True)
    blocked = _blocked(needed, uid, gid)
    if blocked:
        try:
            _expose(libc, blocked)
        except OSError as e:
            notes.append(f"could not expose the interpreter to uid {uid}: {e}")
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    # what this user writes for the judge to read (a profile's output, ncu's report) is readable by
    # it, which holds no DAC override inside the box, whatever umask the worker was started with
    os.umask(0o022)
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    except OSError as e:
        notes.append(f"could not switch to uid {uid}: {e}")
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        notes.append("could not set no_new_privs")
    return notes


def enter_pid_namespace(child_fds=()) -> list[str]:
    """Fork into a new PID namespace: the child continues as its init, this process waits and
    leaves the way the child did (same status, same signal). When the init dies the kernel kills
    everything else in the namespace, so no process of the submission outlives the runner, not even
    a double-forked one in its own session. Notes on failure, empty on success."""
    if os.environ.get("EVALUATOR_PID_NAMESPACE", "1") == "0":
        return ["PID namespace disabled by EVALUATOR_PID_NAMESPACE=0"]
    libc = ctypes.CDLL(None, use_errno=True)
    # with a mount namespace too, so that the init can mount a /proc of its own namespace: the
    # CUDA driver reads /proc/self and /proc/<getpid()>, which must agree with getpid()
    if libc.unshare(CLONE_NEWPID | CLONE_NEWNS) != 0:
        return [f"no PID namespace: {os.strerror(ctypes.get_errno())}"]
    pid = os.fork()
    if pid == 0:
        notes = []
        if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
                libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
            notes.append(f"no private /proc: {os.strerror(ctypes.get_errno())}")
        return notes
    for fd in child_fds:  # the channel belongs to the child; EOF must follow its death
        with contextlib.suppress(OSError):
            os.close(fd)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        if os.WIFEXITED(status):
            os._exit(os.WEXITSTATUS(status))
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            signal.signal(sig, signal.SIG_DFL)
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)


def set_no_new_privs() -> bool:
    return _prctl(PR_SET_NO_NEW_PRIVS, 1)


def _traversable(path: str, uid: int, gid: int) -> bool:
    st = os.stat(path)
    if st.st_uid == uid:
        return bool(st.st_mode & 0o100)
    if st.st_gid == gid:
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)


def _blocked(needed: list[str], uid: int, gid: int) -> dict[str, list[str]]:
    """{first ancestor uid cannot enter: [needed paths under it]}."""
    out: dict[str, list[str]] = {}
    for path in sorted({os.path.realpath(p) for p in needed if os.path.isdir(p)}):
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            ancestor = "/" + "/".join(parts[:i])
            if not _traversable(ancestor, uid, gid):
                paths = out.setdefault(ancestor, [])
                if not any(path == p or path.startswith(p + "/") for p in paths):
                    paths[:] = [p for p in paths if not p.startswith(path + "/")] + [path]
                break
    return out


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _makedirs_open(path: str) -> None:
    """Each missing directory of path, 0755 whatever the umask: the runner (another uid) must
    traverse them."""
    missing = []
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for p in reversed(missing):
        os.mkdir(p)
        os.chmod(p, 0o755)


def _expose(libc, blocked: dict[str, list[str]]) -> None:
    _check(libc.unshare(CLONE_NEWNS), "unshare")
    _check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount private")
    stage = tempfile.mkdtemp(prefix="evaluator-stage-")
    staged = []
    for ancestor, paths in blocked.items():
        for path in paths:
            spot = os.path.join(stage, str(len(staged)))
            os.mkdir(spot)
            _check(libc.mount(path.encode(), spot.encode(), None, MS_BIND | MS_REC, None), "bind")
            staged.append((spot, path))
        _check(libc.mount(b"tmpfs", ancestor.encode(), b"tmpfs", 0, b"mode=755"), "tmpfs")
    for spot, path in staged:
        _makedirs_open(path)
        _check(libc.mount(spot.encode(), path.encode(), None, MS_BIND | MS_REC, None), "bind back")
        libc.umount2(spot.encode(), MNT_DETACH)
        os.rmdir(spot)
    os.rmdir(stage)
