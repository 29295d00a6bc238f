"""Starting, watching and stopping the runner process from the judge.

As root the runner runs as nobody (uid/gid 65534, no supplementary groups); it sets no_new_privs
itself before importing the submission, and the switch away from uid 0 clears its capabilities.
Another user cannot signal, trace or read the judge, nor open its /proc files. Not root: the runner
shares the judge's uid, the report says so, and the judge makes itself non-dumpable so its /proc
files (environ, mem) are still closed to the runner.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

NOBODY = 65534
PR_SET_DUMPABLE = 4
# environment passed through to the runner: paths and device selection, never credentials
ENV_PASSTHROUGH = ("PATH", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
                   "TORCH_CUDA_ARCH_LIST", "LANG", "LC_ALL", "TZ", "EVALUATOR_PID_NAMESPACE",
                   "PYTHONFAULTHANDLER",  # a crashing runner's stack, in the report's logs
                   # the timing's pre-flush writes and gate hold (A/B runs in bench/)
                   "EVALUATOR_GPU_WARM_MS", "EVALUATOR_GPU_GATE_HOLD_MS")
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)


def is_root() -> bool:
    return os.geteuid() == 0


def make_undumpable() -> None:
    """Close the judge's /proc/<pid>/{environ,mem,...} and ptrace to processes of its own uid."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except OSError:
        pass


class Workdir:
    """Per-evaluation directory. Layout (judge-owned unless noted):

        work/               0711: the runner can traverse but not list or create here
        work/submission.py  0644: the upload, read-only to the runner
        work/r/             0711 (0733 only while the runner's files are made)
        work/r/out.bin      owned by the runner: output bytes (the judge keeps its own fd)
        work/r/scratch/     0700, owned by the runner: its HOME, TMPDIR and compile caches
        work/stdout.log, stderr.log: the runner's output, through inherited fds
    """

    def __init__(self, source: bytes, root: str | None = None):
        self.path = Path(tempfile.mkdtemp(prefix="evaluator-", dir=root))
        os.chmod(self.path, 0o711)
        self.uid = NOBODY if is_root() else os.getuid()
        self.gid = NOBODY if is_root() else os.getgid()
        self.submission = self.path / "submission.py"
        self.submission.write_bytes(source)
        os.chmod(self.submission, 0o644)
        # Inside the sandbox the judge holds no CAP_CHOWN (nor DAC override): the runner's own
        # files are made by a child that has already become the runner's user, in a directory
        # that is writable (not listable) only while that child runs.
        home = self.path / "r"
        home.mkdir()
        self.scratch = home / "scratch"
        self.buffer_path = home / "out.bin"
        if is_root():
            os.chmod(home, 0o733)
            self.as_owner(lambda: self._make_runner_files(0o666))
            os.chmod(home, 0o711)
        else:
            self._make_runner_files(0o600)
        self.buffer_fd = os.open(self.buffer_path, os.O_RDWR)
        self.buffer_size = 0
        self.stdout_path = self.path / "stdout.log"
        self.stderr_path = self.path / "stderr.log"

    def as_owner(self, fn) -> None:
        """Run fn as the runner's user: in a forked child when that is another user (root judge)."""
        if self.uid != os.getuid():
            as_user(self.uid, self.gid, fn)
        else:
            fn()

    def _make_runner_files(self, buffer_mode: int) -> None:
        self.scratch.mkdir(mode=0o700)
        for sub in ("tmp", "triton", "inductor", "cache"):
            (self.scratch / sub).mkdir(mode=0o700)
        # 0666 only so that the judge, without DAC override, can open it once right now; it
        # lies in a directory nobody but the judge can list, and the judge keeps its own fd
        fd = os.open(self.buffer_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.fchmod(fd, buffer_mode)
        os.close(fd)

    def private_dir(self) -> str:
        """A directory of the runner's uid that the runner cannot name: a random name in a
        judge-owned directory it may traverse but not list (the checker's scratch and caches,
        which must not be writable by the submission). 0700."""
        parent = self.path / "p"
        parent.mkdir(mode=0o711, exist_ok=True)
        path = parent / secrets.token_hex(16)
        if self.uid != os.getuid():
            os.chmod(parent, 0o733)
            try:
                self.as_owner(lambda: path.mkdir(mode=0o700))
            finally:
                os.chmod(parent, 0o711)
        else:
            path.mkdir(mode=0o700)
        return str(path)

    def ensure_buffer(self, nbytes: int) -> int:
        if nbytes > self.buffer_size:
            # grow in steps so that most calls need no remap in the runner
            size = max(nbytes, 2 * self.buffer_size, 1 << 20)
            os.ftruncate(self.buffer_fd, size)
            self.buffer_size = size
        return self.buffer_size

    def read_buffer(self, into) -> int:
        """Copy the start of the output buffer into `into` (a writable buffer: the judge's private
        snapshot), through the judge's own fd, so renaming or replacing the file from the runner's
        side changes nothing. Returns the number of bytes read."""
        view = memoryview(into).cast("B")
        done = 0
        while done < len(view):
            n = os.preadv(self.buffer_fd, [view[done:]], done)
            if n <= 0:
                break
            done += n
        return done

    def remove(self) -> None:
        try:
            os.close(self.buffer_fd)
        except OSError:
            pass
        shutil.rmtree(self.path, ignore_errors=True)


def as_user(uid: int, gid: int, fn) -> None:
    """Run fn in a forked child that has switched to uid/gid (no Python state survives it)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            fn()
            code = 0
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(f"could not prepare the runner's directory as uid {uid}")


def runner_env(work: Workdir, device: str) -> dict:
    env = {k: os.environ[k] for k in ENV_PASSTHROUGH if k in os.environ}
    # the interpreter's own bin first: ninja and friends for load_inline live next to it
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable),
                                   env.get("PATH", "/usr/local/bin:/usr/bin:/bin")])
    scratch = str(work.scratch)
    env.update(
        HOME=scratch,
        TMPDIR=str(work.scratch / "tmp"),
        XDG_CACHE_HOME=str(work.scratch / "cache"),
        TRITON_CACHE_DIR=str(work.scratch / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(work.scratch / "inductor"),
        # compile in-process: no worker pools whose threads would look like the submission's
        TORCHINDUCTOR_COMPILE_THREADS="1",
        PYTHONPATH=PACKAGE_ROOT,
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        # one thread, like the judge's CPU baselines (see judge._single_thread)
        env["OMP_NUM_THREADS"] = "1"
    return env


class Runner:
    """The runner process plus the two pipes of the control channel."""

    def __init__(self, work: Workdir, *, task: str, device: str):
        to_runner_r, self.to_runner = os.pipe()
        self.from_runner, from_runner_w = os.pipe()
        self.work = work
        # -P: no unsafe sys.path entry (the cwd is the runner's scratch); -s: no user site
        args = [sys.executable, "-P", "-s", "-m", "evaluator.runner", "--task", task, "--device", device,
                "--in-fd", str(to_runner_r), "--out-fd", str(from_runner_w),
                "--source", str(work.submission), "--buffer", str(work.buffer_path)]
        if is_root():
            # the runner drops to nobody itself, first thing, before importing anything else: the
            # interpreter may sit under a directory nobody cannot enter (see drop_privileges)
            args += ["--drop-to", str(work.uid)]
        self.stdout = open(work.stdout_path, "wb")
        self.stderr = open(work.stderr_path, "wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            # cwd: the judge (no DAC override in the box) may not enter scratch; the runner
            # moves there itself once it is the runner's user
            args, cwd=work.scratch.parent, env=runner_env(work, device), stdin=subprocess.DEVNULL,
            stdout=self.stdout, stderr=self.stderr, pass_fds=(to_runner_r, from_runner_w),
            start_new_session=True, close_fds=True)
        os.close(to_runner_r)
        os.close(from_runner_w)
        self.pid = self.proc.pid
        self.killed_by_judge = False
        self.stopped = False

    # ---- process tree --------------------------------------------------------------------
    def tree(self) -> list[int]:
        """The runner and every descendant (found through /proc; setsid cannot hide a child)."""
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def thread_count(self) -> int:
        total = 0
        for pid in self.tree():
            try:
                total += len(os.listdir(f"/proc/{pid}/task"))
            except OSError:
                pass
        return total

    def signal_tree(self, sig: int) -> None:
        for pid in self.tree():
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        try:
            os.killpg(self.pid, sig)
        except OSError:
            pass

    def stop(self) -> None:
        self.signal_tree(signal.SIGSTOP)
        self.stopped = True
        # SIGSTOP is asynchronous: wait until every thread reports stopped (bounded)
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline and not self._all_stopped():
            time.sleep(0.0005)

    def _all_stopped(self) -> bool:
        return threads_stopped(self.tree())

    def wait_stopped(self, pids, limit_s: float = 0.5) -> None:
        """Wait until every thread of `pids` reports stopped (after a SIGSTOP to their group),
        reading only their own /proc entries: cheap enough to lie inside a timed window."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline and not threads_stopped(pids):
            time.sleep(0.0002)

    def cont(self) -> None:
        self.signal_tree(signal.SIGCONT)
        self.stopped = False

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.killed_by_judge = True
        self.signal_tree(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def exit_status(self, wait_s: float = 2.0) -> int | None:
        try:
            return self.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        self.kill()
        for fd in (self.to_runner, self.from_runner):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stdout.close()
        self.stderr.close()

    def submission_pid(self) -> int:
        """The process that imports the submission: the runner itself, or, when it made a PID
        namespace, its only child (the namespace's init). Called before the submission exists."""
        children = [p for p in self.tree() if p != self.pid and _ppid(p) == self.pid]
        return children[0] if len(children) == 1 else self.pid

    def status(self) -> dict:
        """uid, gid, groups, capabilities and no_new_privs of the runner, read by the judge."""
        out = {}
        pid = self.submission_pid()
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    out[key] = value.strip()
        except OSError:
            return {}
        return {
            "runner_uid": int(out.get("Uid", "-1").split()[0]),
            "runner_gid": int(out.get("Gid", "-1").split()[0]),
            "runner_groups": out.get("Groups", ""),
            "runner_cap_eff": out.get("CapEff", ""),
            "runner_cap_prm": out.get("CapPrm", ""),
            "runner_no_new_privs": out.get("NoNewPrivs", "") == "1",
            "runner_pid_namespace": len(out.get("NSpid", "").split()) > 1,
        }


def threads_stopped(pids) -> bool:
    """Every thread of these processes is stopped (or gone)."""
    for pid in pids:
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                if state not in ("T", "t", "Z", "X"):
                    return False
        except OSError:
            continue
    return True


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def logs(work: Workdir, limit: int = 64 * 1024) -> str:
    """The runner's stdout and stderr, each cut to its head and tail, 64 KiB in all."""
    half = limit // 2
    parts = []
    for name, path in (("stdout", work.stdout_path), ("stderr", work.stderr_path)):
        parts.append(f"--- runner {name} ---\n" + _head_tail(path, half))
    return "\n".join(parts)


def _head_tail(path: Path, limit: int) -> str:
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            if size <= limit:
                data = f.read(limit)
                return data.decode("utf-8", "replace")
            head_n = limit // 4
            head = f.read(head_n)
            f.seek(size - (limit - head_n))
            tail = f.read(limit - head_n)
    except OSError:
        return ""
    cut = size - len(head) - len(tail)
    return (head.decode("utf-8", "replace") + f"\n[... {cut} bytes cut ...]\n"
            + tail.decode("utf-8", "replace"))


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
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


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
        os.makedirs(path, mode=0o755, exist_ok=True)
        _check(libc.mount(spot.encode(), path.encode(), None, MS_BIND | MS_REC, None), "bind back")
        libc.umount2(spot.encode(), MNT_DETACH)
        os.rmdir(spot)
    os.rmdir(stage)
