"""The per-evaluation work directory the judge makes for a runner, and the runner's logs in it."""
from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from pathlib import Path

from evaluator.wire.isolation import NOBODY, is_root


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
        """Idempotent: the fd's number is forgotten once closed, so a second call cannot close a
        file that reused it."""
        if self.buffer_fd >= 0:
            try:
                os.close(self.buffer_fd)
            except OSError:
                pass
            self.buffer_fd = -1
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


def write_atomic(path: str, text: str | bytes) -> None:
    """Write through a new file renamed over `path`: a file or symlink planted at `path` (say in
    /tmp, by the runner's user) is replaced, never written through."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".report-")
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
