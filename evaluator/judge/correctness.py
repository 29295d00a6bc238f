"""The correctness phase: every test shape called with fresh inputs and checked (the smallest ones
twice on the same input, for determinism), one profiled call that records which operators and
kernels ran, and after timing a re-check on fresh inputs called exactly like timed calls."""
from __future__ import annotations

import dataclasses
import time

from evaluator.judge import calls
from evaluator.common import checks
from evaluator.contract import progress
from evaluator.common.checks import Failure
from evaluator.common.shapes import fmt, shape_size
from evaluator.judge.verdict import finite


@dataclasses.dataclass(slots=True)
class Profiled:
    """The correctness phase's output: the call that recorded which operators and kernels ran
    (the verdict phase weighs the library calls against it)."""
    shape: dict
    out_numel: int


def run(ev) -> Profiled:
    t = time.monotonic()
    shapes = ev.setup.test_shapes
    public = ev.setup.task.test_shapes  # the drawn shapes follow them
    for i, shape in enumerate(shapes):
        progress.note("correctness", k=i + 1, n=len(shapes))
        test_shape(ev, shape, ev.derive(ev.master, "test", i), hidden=i >= len(public))
    # one call recording which operators and kernels ran (a middle-sized public shape: big enough
    # that a library call shows, small enough for the CPU interpreter)
    shape = dict(sorted(public, key=shape_size)[len(public) // 2])
    out = ev.call(shape, ev.derive(ev.master, "profile"), f"test shape {fmt(shape)}", keep=True,
                  profile=True).out
    ev.threads.base += ev.threads.profiler_growth
    profiled = Profiled(shape, out.numel())
    ev.link.release(time.monotonic() + calls.CALL_LIMIT_S)
    ev.check_threads("during the correctness calls", "correctness")
    ev.report["phases"]["correctness_s"] = time.monotonic() - t
    return profiled


def test_shape(ev, shape: dict, seed: int, hidden: bool = False) -> None:
    """One row of the report's tests: passed, or the first failure (which ends the evaluation).
    `hidden`: the shape was drawn for this evaluation (it follows the public ones)."""
    where = f"test shape {fmt(shape)}"
    # a drawn shape is marked, with its input family (the report leaves both out otherwise)
    row = {"shape": {k: v for k, v in shape.items() if k != "family"}}
    if hidden:
        row["hidden"] = True
    if shape.get("family"):
        row["family"] = shape["family"]
    try:
        first = ev.call(shape, seed, where, check=True, keep=True, first=True)
        if shape in ev.setup.small_shapes:
            again = ev.call(shape, seed, where + " (second call, same input)", check=True, keep=True)
            if not checks.deterministic(first.out, again.out, ev.setup.task.tolerance):
                raise Failure(("nondeterministic", f"{where}: two calls on the same input "
                                                   "returned different answers"))
    except Failure as f:
        ev.report["tests"].append({**row, "passed": False, "max_abs_err": None,
                                   "message": f.problems[0][1][:1000]})
        raise
    ev.report["tests"].append({**row, "passed": True, "max_abs_err": finite(first.err), "message": ""})


def recheck(ev) -> None:
    """Fresh inputs on the small test shapes after timing, each call followed by the runner stopped
    (and the GPU probe sampled) as after a timed batch."""
    setup = ev.setup
    for i, shape in enumerate(setup.small_shapes):
        ev.call(shape, ev.derive(ev.master, "recheck", i), f"re-check on test shape {fmt(shape)}")
        ev.runner.stop()
        try:
            if setup.probe:
                setup.probe.sample()
                if i == len(setup.small_shapes) - 1 and setup.probe.slow():
                    setup.probe.confirm()
        finally:
            ev.runner.cont()
    ev.check_threads("after timing", "after")
