"""Warming the judge's cache: a task's baselines compiled once, with no submission anywhere, so
that no ranked evaluation of that task on this machine compiles them cold.

Why: a cold compile benchmarks inductor's kernel configurations, which must not share the GPU
with a submission, so an evaluation with a cold cache compiles alone before the submission is
imported (18 s of a transformer_block evaluation on an H200). Once the judge's cache holds the
task's picks, the compile runs beside the correctness phase instead (baseline_compile.py). A
worker warms each task before its first GPU evaluation of that task (sandbox.warm_before), and
an operator may warm them all at deployment (`python manage.py warm_judge_cache`).

The compile here is the evaluation's own compile phase (baseline_compile.run, the same trusted
baseline runner, shapes and checks), and it marks the task warm the same way. Only a persistent
judge cache can be warmed: without one (a judge that is not root and has no
EVALUATOR_JUDGE_CACHE) each evaluation starts from an empty cache and there is nothing to keep.
"""
from __future__ import annotations

import time

from evaluator.judge import baseline_compile
from evaluator.judge import startup


def warm(task: str, device: str, time_limit_s: float = 600) -> dict:
    """Compile `task`'s baselines into the judge's cache unless they are there already. Returns
    {"task", "device", "state": "compiled" | "already warm" | "no judge cache", "seconds"}; a
    baseline that fails to compile raises (baseline.BaselineError)."""
    from evaluator.judge.evaluation import Evaluation

    started = time.monotonic()
    result = {"task": task, "device": device}
    if startup.judge_cache_dir() is None:
        return {**result, "state": "no judge cache", "seconds": 0.0}
    ev = Evaluation(b"", task=task, device=device, mode="ranked", time_limit_s=time_limit_s)
    ev.t0 = started
    ev.deadline = started + time_limit_s
    try:
        ev.setup = startup.prepare(ev)
        if baseline_compile.is_warm(ev):
            state = "already warm"
        else:
            baseline_compile.run(ev)
            state = "compiled"
    finally:
        if ev.base is not None:
            ev.base.idle = False  # not kept for a next evaluation: a warm-up only fills the cache
        ev.close()
    return {**result, "state": state, "seconds": round(time.monotonic() - started, 3)}
