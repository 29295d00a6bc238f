"""Optional CPU pinning of a GPU evaluation's processes for the timing phase (EVALUATOR_PIN_CPUS=1,
a core per process, or =shared, one core for both runners and one for both checkers; off by
default: on an H200 neither narrowed the score's spread, and both made waking a runner slower).

Why it exists: the fixed overhead of a timed batch is host work in five processes (the judge, each
side's checker, the candidate's runner, the baseline runner) handing off through pipes and
signals, and it moves by up to 0.4 ms between evaluations (docs/bench/judge-clock.md). Where the
scheduler puts those processes differs from one evaluation to the next; pinning takes that
difference away. It stays for bench/judge_clock.py's comparisons (`ab` step).

Every thread a process has when it is pinned is pinned, and threads it makes later inherit its
mask. The runner's process may change its own mask again: that changes only its own latency,
which it could already make worse, never the trusted sides' (the overhead comes from those).
"""
from __future__ import annotations

import os

from evaluator.wire.procinfo import threads

ROLES = ("judge", "cand_checker", "cand_runner", "base_checker", "base_runner")


def wanted(device: str) -> bool:
    return device == "cuda" and os.environ.get("EVALUATOR_PIN_CPUS", "0") in ("1", "shared")


def plan(allowed: set[int], shared: bool | None = None) -> dict[str, int] | None:
    """A core for each role, or None when there are too few: core 0 (where most interrupts land)
    is left out while other cores remain. No two roles share a core, except with `shared`
    (EVALUATOR_PIN_CPUS=shared): then both runners share one core and both checkers another, so
    that every window, the candidate's and the baselines', runs on the same cores. Only one side
    runs at a time (the other's runner is stopped, its checker waits on its pipe), and a host
    overhead that comes from where a process runs is then the same for both sides."""
    if shared is None:
        shared = os.environ.get("EVALUATOR_PIN_CPUS") == "shared"
    cores = sorted(allowed)
    needed = 3 if shared else len(ROLES)
    if len(cores) > needed:
        cores = cores[1:]
    if len(cores) < needed:
        return None
    if shared:
        judge, checker, runner = cores[:3]
        return {"judge": judge, "cand_checker": checker, "base_checker": checker,
                "cand_runner": runner, "base_runner": runner}
    return dict(zip(ROLES, cores))


def pin(processes: dict[str, list[int]], cores: dict[str, int] | None = None) -> dict[str, int] | None:
    """Pin every thread of each role's processes to its core (`cores`, else `plan` of the cores
    this process may use); returns the plan, or None when the machine has too few cores (nothing
    is pinned then). A thread that ends meanwhile is skipped."""
    cores = cores or plan(os.sched_getaffinity(0))
    if cores is None:
        return None
    for role, pids in processes.items():
        for tid in threads(pids):
            try:
                os.sched_setaffinity(tid, {cores[role]})
            except OSError:
                continue
    return cores


class Pinned:
    """The judge's own mask, restored when the timing ends (a judge that runs evaluations one after
    another must not stay on one core)."""

    def __init__(self, processes: dict[str, list[int]], cores: dict[str, int] | None = None):
        self.before = os.sched_getaffinity(0)
        self.judge_threads = threads([os.getpid()])
        self.cores = pin({"judge": [os.getpid()], **processes}, cores)

    def restore(self) -> None:
        if self.cores is None:
            return
        for tid in self.judge_threads + threads([os.getpid()]):
            try:
                os.sched_setaffinity(tid, self.before)
            except OSError:
                continue
