"""The trusted baseline runner: the same harness (`python -m evaluator.runner.harness`) and the same
prepare / go / done protocol as the candidate, but its "submission" is source the judge generates
from the task name alone. Eager and torch.compile are timed on exactly the code path the candidate
is timed on, so the task's reference submitted as a kernel reads 1.00 against eager.

It never sees the submission: its work directory, source file, output buffer and pipes are its own.
It runs as the judge's uid (it runs only trusted code; a separate uid buys nothing), without the
runner's privilege drop and PID namespace, and uses the judge's compile cache, which the candidate
runner (uid nobody when the judge is root) cannot write. When the judge is not root the baseline
makes itself non-dumpable, like the judge, so a runner of the same uid cannot read or trace it.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evaluator.wire import channel
from evaluator.judge import runner_process
from evaluator.wire import workdir

# one process serves both baselines: prepare's `fn` picks eager or compile
SOURCE = """\
import torch
from evaluator.tasks import get_task

custom_kernel = get_task({name!r}).reference
compiled_kernel = torch.compile(custom_kernel, dynamic=False)
"""


def source(task: str) -> str:
    """The baseline runner's whole program: a function of the task's name (with its parameters'
    seed, tasks.task_ref), nothing else."""
    return SOURCE.format(name=task)


class BaselineError(RuntimeError):
    """The trusted baseline failed: the evaluator's failure, never a verdict on the submission."""


class Workdir(workdir.Workdir):
    """Like the runner's work directory, all of it owned by the judge's uid (mode 0700)."""

    def __init__(self, task: str, root: str | None = None):  # noqa: D107 - no super(): other owner
        self.path = Path(tempfile.mkdtemp(prefix="evaluator-baseline-", dir=root))
        self.uid, self.gid = os.getuid(), os.getgid()
        self.text = source(task)
        self.submission = self.path / "baseline.py"
        self.submission.write_text(self.text)
        home = self.path / "r"
        home.mkdir(mode=0o700)
        self.scratch = home / "scratch"
        self.buffer_path = home / "out.bin"
        self._make_runner_files(0o600)
        self.buffer_fd = os.open(self.buffer_path, os.O_RDWR)
        self.buffer_size = 0
        self.stdout_path = self.path / "stdout.log"
        self.stderr_path = self.path / "stderr.log"


class Runner(runner_process.Runner):
    """The baseline process; stop / cont / kill / close / tree as for the candidate's runner."""

    def __init__(self, work: Workdir, *, task: str, device: str, cache: str):  # noqa: D107
        env = runner_process.runner_env(work, device)
        # the judge's own persistent cache: repeat evaluations do not recompile torch.compile
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
        env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
        # On the CPU, Inductor precompiles its C++ headers into TMPDIR (fresh for every evaluation)
        # before it loads a kernel, even one already in the cache above: seconds of compiler work
        # per evaluation for a file that is thrown away. Without it a cached kernel loads at once
        # and a new one compiles from the plain headers; the kernels are the same either way.
        env["TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"] = "0"
        # it ends with the judge, even one killed with no time to close it: a runner kept for the
        # next evaluation (baseline_keep.py) waits stopped, in a session of its own
        env["EVALUATOR_JUDGE_PID"] = str(os.getpid())
        self.spawn(work, task=task, device=device, env=env, extra=["--baseline"])

    def send(self, msg: dict) -> None:
        try:
            channel.send(self.to_runner, msg)
        except OSError as e:
            raise self.error(f"could not send {msg.get('op')!r}: {e}") from None

    def expect(self, kind: str, deadline: float, spin_s: float = 0.0) -> dict:
        try:
            msg = channel.recv(self.from_runner, deadline, spin_s)
        except (channel.Timeout, channel.Closed, channel.ProtocolError) as e:
            raise self.error(f"no {kind!r} ({type(e).__name__}: {e})") from None
        if msg.get("t") != kind:
            raise self.error(f"expected {kind!r}, got {msg!r:.300}")
        return msg

    def error(self, what: str) -> BaselineError:
        self.kill()
        return BaselineError(f"the baseline runner failed: {what}; its stderr:\n"
                             + workdir.logs(self.work)[-4000:])
