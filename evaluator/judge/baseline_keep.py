"""Trusted baseline runners kept between the CPU evaluations of one judge process.

Why: starting the baseline runner (torch, dynamo, and torch.compile's baselines loaded from the
judge's cache) is most of a quick ranked CPU evaluation: about 8 s of 11 s on a 2-core machine.
A process that evaluates many submissions in a row (the test suite's pools, calibration, a script
over `evaluator.api`) hands the next evaluation of the same task the runner the last one left,
stopped, with its work directory. The next evaluation still calls eager and torch.compile once on
every benchmark shape and checks each output against its gold answer before it times anything.

When a runner is kept: the device is the CPU, the judge is root (the candidates run as another
uid and cannot signal or trace the kept runner, so no submission can leave a mark on the next
one's baselines), the evaluation ended with the runner between two requests, and
EVALUATOR_KEEP_BASELINE is not 0, and the evaluation runs on the process's main thread. A kept
runner ends with the process: at exit (atexit), or, when the process is killed with no time for
that, by the parent-death signal every baseline runner asks for (runner.py), which fires when the
thread that started it ends; hence the main thread only. On the GPU every evaluation starts its
own: the baseline's inputs live in its checker's memory through CUDA IPC, and the checker ends
with the evaluation.
What a runner is kept under: the task, the judge's cache, the runner's program and the environment
it was started with; a later evaluation that differs in any of them starts a runner of its own.
"""
from __future__ import annotations

import atexit
import os
import threading

from evaluator.judge import baseline
from evaluator.wire import isolation

MAX_KEPT = 2  # runners kept at once (each holds torch and the compiled baselines: a few hundred MB)
_kept: dict[tuple, tuple[baseline.Runner, baseline.Workdir]] = {}


def enabled(device: str) -> bool:
    # the main thread only: a baseline runner dies with the thread that started it (runner.py,
    # PR_SET_PDEATHSIG), and a worker thread may end while its process goes on
    return (device == "cpu" and isolation.is_root() and threading.current_thread() is threading.main_thread()
            and os.environ.get("EVALUATOR_KEEP_BASELINE", "1") != "0")


def key(task: str, device: str, cache: str) -> tuple:
    env = tuple(sorted((k, os.environ[k]) for k in isolation.ENV_PASSTHROUGH if k in os.environ))
    return task, device, cache, baseline.source(task), env


def take(kept_as: tuple, device: str):
    """(runner, work directory) kept under this key (`key`) and still alive, continued; else None."""
    if not enabled(device):
        return None
    kept = _kept.pop(kept_as, None)
    if kept is None:
        return None
    runner, work = kept
    if runner.proc.poll() is not None:
        _close(runner, work)
        return None
    runner.cont()
    return runner, work


def give(kept_as: tuple, device: str, runner: baseline.Runner, work: baseline.Workdir) -> bool:
    """Keep a runner that is alive and waiting for its next request, under the key it was started
    or taken with; False: the caller closes it as before. The judge hands it over stopped (after
    compiling, and after every timed batch), and `take` continues it."""
    if not enabled(device) or runner.proc.poll() is not None:
        return False
    old = _kept.pop(kept_as, None)
    if old:
        _close(*old)
    while len(_kept) >= MAX_KEPT:
        _close(*_kept.pop(next(iter(_kept))))
    _kept[kept_as] = (runner, work)
    return True


def close_all() -> None:
    while _kept:
        _close(*_kept.popitem()[1])


def _close(runner: baseline.Runner, work: baseline.Workdir) -> None:
    runner.close()
    work.remove()


atexit.register(close_all)
