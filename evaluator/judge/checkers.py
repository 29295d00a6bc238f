"""The judge's clients of the two checkers of an evaluation, one per side (batch.py, "one batch of
one side"): `CheckerProcess` on the GPU, a process of its own that writes the inputs into memory the
runner has mapped and reads the secret sample, a method per request of the checker's channel
(checker.py serves them); `LocalChecker` on the CPU, the same requests answered in the judge."""
from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time

import torch

from evaluator.wire import channel
from evaluator.wire import isolation
from evaluator.wire.messages import CheckerOp, CheckerReply
from evaluator.judge.batch import SPIN_S

class LocalChecker:
    """CPU: the judge's own Checker; inputs in a file of the side's work directory that the runner
    maps read-only, outputs copied by the runner into its output file before it answers."""

    def __init__(self, task, work):
        from evaluator.judge.checker import Checker

        self.checker = Checker(task, "cpu")
        self.work = work
        self.path = None

    def plan(self, shape: dict) -> dict:
        return self.checker.plan(shape)

    def buffer(self, slots: int) -> dict:
        nbytes = slots * self.checker.slot_bytes
        self._unlink()
        self.path = os.path.join(self.work.path, f"inputs-{secrets.token_hex(4)}.bin")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        # the runner (another uid when the judge is root) maps it: its mode is set here, never left
        # to the umask of whoever started the worker
        os.fchmod(fd, 0o644)
        os.ftruncate(fd, max(nbytes, 1))
        os.close(fd)
        self.checker.use_buffer(torch.from_file(self.path, shared=True, size=max(nbytes, 1), dtype=torch.uint8))
        return {"path": self.path, "nbytes": nbytes}

    last_probe_ms = 0.0  # the CPU has no probe: a stopped process computes nothing there
    last_write: dict = {}  # the checker's readings of the last fill (checker.WriteReadings)

    def fill(self, seeds) -> float:
        gen_ms = self.checker.fill(list(seeds))
        self.last_write = self.checker.last_write
        return gen_ms

    def refresh(self) -> float:
        return self.checker.refresh()

    def probe(self) -> float:
        return 0.0

    def verify(self, done: dict, where: str) -> tuple[list, float]:
        if done.get("stored") is not True:
            return [["protocol", "protocol violation: the runner did not store its outputs"]], 0.0
        n = self.checker.out_bytes
        count = len(self.checker.seeds)
        raw = torch.empty(n * count, dtype=torch.uint8)
        if n * count and self.work.read_buffer(raw.numpy()) != n * count:
            return [["protocol", "protocol violation: the output file is shorter than the outputs"]], 0.0
        return self.checker.verify([raw[k * n:(k + 1) * n] for k in range(count)], where)

    def close(self) -> None:
        self.checker.use_buffer(None)
        self._unlink()

    def _unlink(self) -> None:
        """The runner keeps its mapping of an unlinked file; a baseline's work directory may serve
        the next evaluation (baseline_keep), so inputs no one reads again do not pile up there."""
        if self.path:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.path = None


class CheckerProcess:
    """GPU: `python -m evaluator.judge.checker` as `uid` (the runner's), outside the runner's PID
    namespace. `cache`: its Triton cache, a directory the runner can neither write nor name."""

    def __init__(self, task: str, *, uid: int, cache: str, log_dir: str):
        to_r, self.to_checker = os.pipe()
        self.from_checker, from_w = os.pipe()
        args = [sys.executable, "-P", "-s", "-m", "evaluator.judge.checker", "--task", task,
                "--in-fd", str(to_r), "--out-fd", str(from_w)]
        if isolation.is_root() and uid != os.getuid():
            args += ["--drop-to", str(uid)]
        env = {k: os.environ[k] for k in isolation.ENV_PASSTHROUGH if k in os.environ}
        env.update(HOME=cache, TMPDIR=cache, TRITON_CACHE_DIR=os.path.join(cache, "triton"),
                   PYTHONPATH=isolation.PACKAGE_ROOT, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
        self.log = open(os.path.join(log_dir, f"checker-{secrets.token_hex(4)}.log"), "wb")
        self.proc = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=self.log, pass_fds=(to_r, from_w), start_new_session=True,
                                     close_fds=True, cwd="/")
        os.close(to_r)
        os.close(from_w)
        self.started = False
        self.exit_sent = False

    def call(self, op: str, timeout_s: float = 120.0, spin_s: float = 0.0, **fields) -> dict:
        try:
            if not self.started:
                hello = channel.recv(self.from_checker, time.monotonic() + 300)
                if hello.get("t") != CheckerReply.HELLO:
                    raise RuntimeError(f"the checker said {hello!r:.200}")
                self.started = True
            channel.send(self.to_checker, {"op": op, **fields})
            reply = channel.recv(self.from_checker, time.monotonic() + timeout_s, spin_s)
        except (OSError, channel.Timeout, channel.Closed, channel.ProtocolError) as e:
            raise RuntimeError(f"the checker failed on {op!r}: {type(e).__name__}: {e}; "
                               f"its log: {self.tail()}") from None
        if reply.get("t") != CheckerReply.OK:
            raise RuntimeError(f"the checker failed on {op!r}: {reply.get('message')}\n{reply.get('trace', '')}")
        return reply

    def ping(self) -> dict:
        return self.call(CheckerOp.PING)

    def plan(self, shape: dict) -> dict:
        return self.call(CheckerOp.PLAN, shape=shape)

    def buffer(self, slots: int) -> dict:
        return self.call(CheckerOp.BUFFER, slots=slots)

    last_probe_ms = 0.0  # the probe that followed the last fill or refresh (Checker.probe)

    last_write: dict = {}  # the checker's readings of the last fill (checker.WriteReadings)

    def fill(self, seeds) -> float:
        reply = self.call(CheckerOp.FILL, seeds=list(seeds))
        self.last_probe_ms = float(reply.get("probe_ms", 0.0))
        write = reply.get("write")
        self.last_write = write if isinstance(write, dict) else {}
        return float(reply["gen_ms"])

    def refresh(self) -> float:
        reply = self.call(CheckerOp.REFRESH)
        self.last_probe_ms = float(reply.get("probe_ms", 0.0))
        return float(reply["gen_ms"])

    def probe(self) -> float:
        return float(self.call(CheckerOp.PROBE)["probe_ms"])

    def arm(self, described: dict) -> dict:
        return self.call(CheckerOp.ARM, spin_s=SPIN_S, outputs=described.get("outputs"))

    def sample(self) -> dict:
        return self.call(CheckerOp.SAMPLE, spin_s=SPIN_S)

    def verify(self, done: dict, where: str) -> tuple[list, float]:
        reply = self.call(CheckerOp.VERIFY, timeout_s=600, where=where)
        return reply.get("problems", []), float(reply.get("worst", 0.0))

    def tail(self) -> str:
        try:
            with open(self.log.name, "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def begin_close(self) -> None:
        """Asks the checker to exit, without waiting (see Runner.begin_close)."""
        if not self.exit_sent:
            self.exit_sent = True
            try:
                channel.send(self.to_checker, {"op": CheckerOp.EXIT})
            except OSError:
                pass

    def close(self) -> None:
        self.begin_close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for fd in (self.to_checker, self.from_checker):
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()
