"""The judge's end of the runners' zygote (runner/zygote.py): a runner forked from a process that
has imported torch already, instead of a fresh interpreter that imports it.

One zygote per judge process and start-time environment, started at the first CPU runner and
kept while the judge lives: a judge that evaluates many submissions (the exploit pool, a test
process, `calibrate`) pays torch's import once, a judge in a box once per evaluation. The GPU's
runners start as before: this path has no GPU readings behind it.
Whatever goes wrong here, the caller starts the runner the old way (`spawn` returns None).

EVALUATOR_ZYGOTE=0 turns it off.
"""
from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time

# read by the interpreter, glibc or OpenMP when a process starts: a zygote serves only requests
# that agree with its own on every one of these
START_KEYS = ("PATH", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
              "OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "TRITON_INTERPRET",
              "LD_LIBRARY_PATH", "LD_PRELOAD", "CUDA_VISIBLE_DEVICES")
READY_S = 120.0


class ZygoteError(Exception):
    pass


class Child:
    """What the judge holds of a forked runner: the parts of Popen it uses."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str]):
        self.zygote, self.pid = zygote, pid
        self.args = [sys.executable, "-P", "-s", "-m", "evaluator.runner.harness", *args]  # as Popen.args
        self.returncode: int | None = None

    def _check(self) -> int | None:
        with self.zygote.lock:  # the judge's threads may wait for one runner together
            if self.returncode is None:
                self.zygote.pump(0)
                self.returncode = self.zygote.exits.pop(self.pid, None)
            return self.returncode

    def poll(self) -> int | None:
        if self._check() is None and _ended(self.pid):
            # dead already; the zygote's notice is on its way (Popen.poll would see it now)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.wait(timeout=1.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._check() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"runner {self.pid}", timeout)
            if not self.zygote.pump(min(left, 1.0) if left is not None else 1.0) and not self.zygote.alive():
                # the zygote is gone, and with it the news of this runner's end
                self.returncode = -signal.SIGKILL
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, signal.SIGKILL)


def _ended(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True


class Zygote:
    def __init__(self, env: dict):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.exits: dict[int, int] = {}
        self.replies: dict[int, dict] = {}
        self.next_id = 0
        self.lock = threading.RLock()
        self.owner = os.getpid()
        args = [sys.executable, "-P", "-s", "-m", "evaluator.runner.zygote", "--fd", str(theirs.fileno())]
        self.proc = subprocess.Popen(args, env=env, cwd="/", stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self.pid = self.proc.pid
        deadline = time.monotonic() + READY_S
        while not self.replies.pop(-1, None):
            left = deadline - time.monotonic()
            if left <= 0 or (not self.pump(left) and not self.alive()):
                self.close()
                raise ZygoteError("the zygote did not start")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def pump(self, timeout: float | None) -> bool:
        """Read what the zygote has said, waiting up to `timeout` for the first packet."""
        with self.lock:
            return self._pump(timeout)

    def _pump(self, timeout: float | None) -> bool:
        got = False
        while True:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return got
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                return got
            if not data:
                return got
            got, timeout = True, 0
            msg = json.loads(data)
            if msg.get("t") == "exit":
                self.exits[int(msg["pid"])] = int(msg["code"])
            elif msg.get("t") == "ready":
                self.replies[-1] = msg
            else:
                self.replies[int(msg.get("id") or 0)] = msg

    def spawn(self, args: list[str], env: dict, cwd: str, fds: dict[int, int]) -> Child:
        """fds: target number in the runner -> descriptor here to put there."""
        with self.lock:
            self.next_id += 1
            rid = self.next_id
            if "EVALUATOR_JUDGE_PID" in env:  # the baseline runner dies with its parent: the zygote
                env = {**env, "EVALUATOR_JUDGE_PID": str(self.pid)}
            req = {"id": rid, "args": args, "env": env, "cwd": cwd, "fds": list(fds)}
            socket.send_fds(self.sock, [json.dumps(req).encode()], list(fds.values()))
            deadline = time.monotonic() + 30
            while rid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or (not self.pump(left) and not self.alive()):
                    raise ZygoteError("the zygote did not answer")
            reply = self.replies.pop(rid)
        if reply.get("t") != "started":
            raise ZygoteError(reply.get("error", "refused"))
        return Child(self, int(reply["pid"]), args)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)


_zygotes: dict[tuple, Zygote] = {}
_lock = threading.Lock()


def enabled(device: str) -> bool:
    return device == "cpu" and os.environ.get("EVALUATOR_ZYGOTE", "1") != "0"


def spawn(args: list[str], env: dict, cwd: str, fds: dict[int, int]) -> Child | None:
    """A runner `python -m evaluator.runner.harness ARGS` forked from the zygote for `env`, or None
    when no zygote serves it (the caller then starts the runner itself)."""
    key = tuple(env.get(k) for k in START_KEYS)
    with _lock:
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.owner != os.getpid():
            _zygotes.clear()  # a forked copy of the judge: its parent's zygotes are not its own
            zygote = None
        elif zygote is not None and not zygote.alive():
            _zygotes.pop(key).close()
            zygote = None
        if zygote is None:
            try:
                zygote = Zygote({k: v for k, v in env.items() if k in START_KEYS})
            except (OSError, ZygoteError):
                return None
            _zygotes[key] = zygote
    try:
        return zygote.spawn(args, env, cwd, fds)
    except (OSError, ValueError, ZygoteError):
        with _lock:
            if _zygotes.get(key) is zygote:
                _zygotes.pop(key).close()
        return None
