"""Starting, watching and stopping a runner process from the judge: its environment, its process
tree (found through /proc), signals to all of it, and its uid and capabilities as the kernel
reports them."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from evaluator.judge import zygote_client
from evaluator.wire import procinfo
from evaluator.wire.isolation import ENV_PASSTHROUGH, PACKAGE_ROOT, is_root
from evaluator.wire.workdir import Workdir


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
    # one host thread for torch's CPU work: on the CPU like the judge's baselines (see
    # judge._single_thread); on a GPU host, where nothing timed runs on the CPU, because a problem's
    # parameters initialised on the CPU (nn.Linear's, say) otherwise start torch's thread pool, one
    # thread per core, which the thread-count rule then reads as the submission's (15 new threads on
    # a 16-core H100 host, docs/bench/gpu-site.md)
    env["OMP_NUM_THREADS"] = "1"
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        # glibc's malloc, fixed: by default it moves its mmap threshold as large blocks are freed
        # and trims the heap, so whether a call's fresh output pages fault in depends on the
        # process's history, and the same softmax runs 0.2 or 0.7 ms a call in one runner or the
        # other. Fixed, both runners reuse their heap (docs/evaluator.md: the CPU ruler and malloc)
        env["MALLOC_MMAP_THRESHOLD_"] = str(32 << 20)
        env["MALLOC_TRIM_THRESHOLD_"] = str(1 << 30)
    return env


class Runner:
    """The runner process plus the two pipes of the control channel."""

    def __init__(self, work: Workdir, *, task: str, device: str):
        # the runner drops to nobody itself, first thing, before importing anything else: the
        # interpreter may sit under a directory nobody cannot enter (see drop_privileges)
        self.spawn(work, task=task, device=device, env=runner_env(work, device),
                   extra=["--drop-to", str(work.uid)] if is_root() else [])

    def spawn(self, work: Workdir, *, task: str, device: str, env: dict, extra: list[str]) -> None:
        to_runner_r, self.to_runner = os.pipe()
        self.from_runner, from_runner_w = os.pipe()
        self.work = work
        # -P: no unsafe sys.path entry (the cwd is the runner's scratch); -s: no user site
        args = [sys.executable, "-P", "-s", "-m", "evaluator.runner.harness", "--task", task, "--device", device,
                "--in-fd", str(to_runner_r), "--out-fd", str(from_runner_w),
                "--source", str(work.submission), "--buffer", str(work.buffer_path), *extra]
        self.stdout = open(work.stdout_path, "wb")
        self.stderr = open(work.stderr_path, "wb")
        self.started = time.monotonic()
        self.proc = self._forked(args[5:], env, str(work.scratch.parent), device,
                                 to_runner_r, from_runner_w) or subprocess.Popen(
            # cwd: the judge (no DAC override in the box) may not enter scratch; the runner
            # moves there itself once it is the runner's user
            args, cwd=work.scratch.parent, env=env, stdin=subprocess.DEVNULL,
            stdout=self.stdout, stderr=self.stderr, pass_fds=(to_runner_r, from_runner_w),
            start_new_session=True, close_fds=True)
        os.close(to_runner_r)
        os.close(from_runner_w)
        self.pid = self.proc.pid
        self.killed_by_judge = False
        self.stopped = False

    def _forked(self, args, env, cwd, device, *pass_fds):
        """The runner forked from the judge's zygote (zygote_client.py), or None."""
        if not zygote_client.enabled(device):
            return None
        with open(os.devnull, "rb") as devnull:
            fds = {0: devnull.fileno(), 1: self.stdout.fileno(), 2: self.stderr.fileno(),
                   **{fd: fd for fd in pass_fds}}
            return zygote_client.spawn(args, env, cwd, fds)

    # ---- process tree --------------------------------------------------------------------
    def tree(self) -> list[int]:
        """The runner and every descendant (found through /proc; setsid cannot hide a child)."""
        return procinfo.descendants(self.pid)

    def thread_names(self) -> list[str]:
        return procinfo.thread_names(self.tree())

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

    def begin_close(self) -> None:
        """SIGKILL to the whole tree, without waiting: the judge ends every process of an
        evaluation at once, since each one's exit (its CUDA context torn down) takes a while."""
        if self.proc.poll() is None:
            self.killed_by_judge = True
        self.signal_tree(signal.SIGKILL)

    def kill(self) -> None:
        self.begin_close()
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
            with contextlib.suppress(OSError):
                os.close(fd)
        self.stdout.close()
        self.stderr.close()

    def submission_pid(self) -> int:
        """The process that imports the submission: the runner itself, or, when it made a PID
        namespace, its only child (the namespace's init). Called before the submission exists."""
        children = [p for p in self.tree() if p != self.pid and procinfo.parent(p) == self.pid]
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
