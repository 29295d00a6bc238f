"""Timed rounds that ran beside other work on the GPU, which are never scored.

A runner is stopped (SIGSTOP) while the other sides run, but the kernels it queued go on, and
the device time-slices them against the trusted baselines' kernels: a stopped submission that
leaves a spinning kernel behind each of its batches slows the baselines' windows and so raises
its own score (docs/evaluator.md, "Work left running"). Once the runner is stopped it can launch
nothing, so any such work is already resident when a baseline's window opens. Three readings,
all from trusted processes, tell a touched batch:

- the probe: the baselines' checker launches a one-element kernel and waits for it, right after
  it writes a baseline batch's inputs and again once the window has closed (Checker.probe).
  Alone on the device it returns in a few hundredths of a millisecond; beside another context's
  resident kernel each launch waits for that context's time slice;
- a baseline's own device time per call (its runner's CUDA events) against that side's median
  over the shape's rounds;
- a checker's time to write one call's inputs against that checker's median over the shape's
  fresh writes, for every side: writing is device work too, and a spin left behind by a
  candidate's batch slows the writes that follow it.

A round with any touched batch is left out of the score whole (its candidate batches too, so
that the ratios stay round by round), and the evaluation is flagged `extra_threads` with the
readings. The bounds sit far from an honest run's spread and well inside what a spin does: the
probe's bound is several times an idle probe; an honest baseline's device time per call varies
by a few per cent between rounds, where a stopped process's spin doubled it on an H200; the
writes took four times their time there (docs/evaluator.md). The two medians see a round that
differs from the others; the probe's absolute bound sees work that covers every round.
"""
from __future__ import annotations

from . import timing

# a probe this slow is never an idle device's. An absolute bound, not one relative to the shape's
# probes: work left running through every round slows them all
PROBE_FLOOR_MS = 0.25
DEVICE_RATIO = 1.5  # a baseline batch's device time per call over its side's median
WRITE_RATIO = 2.0  # a checker's write per call over its own median
BASELINES = ("eager", "compile")


def touched_rounds(got: dict, rounds: dict) -> dict[int, list[str]]:
    """round -> what shows it touched, for the rounds of one shape. `got`: side -> its batches
    (batch.Timed), `rounds`: side -> the round of each."""
    found: dict[int, list[str]] = {}

    def mark(r: int, why: str) -> None:
        found.setdefault(r, []).append(why)

    limit = PROBE_FLOOR_MS
    for side in BASELINES:
        batches = got.get(side, [])
        device = timing.median([t.device_ms / t.calls for t in batches if t.calls])
        for t, r in zip(batches, rounds.get(side, [])):
            waited = max(t.probe_before_ms, t.probe_after_ms)
            if waited > limit:
                when = "before" if t.probe_before_ms >= t.probe_after_ms else "after"
                mark(r, f"a probe kernel {when} the {side} batch waited {waited:.3g} ms (an idle device: "
                        f"under {limit:.3g} ms)")
            if t.calls and device > 0 and t.device_ms / t.calls > DEVICE_RATIO * device:
                mark(r, f"the {side} baseline took {t.device_ms / t.calls:.3g} ms a call on its own clock, "
                        f"its median {device:.3g} ms")
    for side, batches in got.items():
        fresh = [(t, r) for t, r in zip(batches, rounds.get(side, [])) if t.fresh and t.calls]
        write = timing.median([t.gen_ms / t.calls for t, _ in fresh])
        for t, r in fresh:
            if write > 0 and t.gen_ms / t.calls > WRITE_RATIO * write:
                whose = "the submission's" if side == "cand" else f"the {side} baseline's"
                mark(r, f"writing {whose} inputs took {t.gen_ms / t.calls:.3g} ms a call, its median {write:.3g} ms")
    return found


def untouched(got: dict, rounds: dict, touched: dict) -> tuple[dict, dict]:
    """`got` and `rounds` without the batches of touched rounds; unchanged where that would leave
    a side with none (every round touched: nothing clean to score, and the flag says so)."""
    keep = {side: [i for i, r in enumerate(rounds[side]) if r not in touched] for side in got}
    if not all(keep.values()):
        return got, rounds
    return ({side: [got[side][i] for i in keep[side]] for side in got},
            {side: [rounds[side][i] for i in keep[side]] for side in got})


def reason(where: str, touched: dict, total: int, scored: bool) -> str:
    """The flag's reason: how many rounds, and the first readings."""
    readings = [why for r in sorted(touched) for why in touched[r]]
    left = (f"{len(touched)} of {total} timed rounds ran beside other work on the GPU and were not scored"
            if scored else f"every one of the {total} timed rounds ran beside other work on the GPU: the speedups "
                           "shown are not a clean measurement")
    more = f" (and {len(readings) - 3} more readings)" if len(readings) > 3 else ""
    return f"{where}: {left}: " + "; ".join(readings[:3]) + more
