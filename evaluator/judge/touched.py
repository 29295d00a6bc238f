"""Timed rounds that ran beside other work on the GPU: never scored, and flagged when the readings
show work that a stopped runner left on the device.

A runner is stopped (SIGSTOP) while the other sides run, but the kernels it queued go on, and
the device time-slices them against the trusted processes' kernels: a stopped submission that
leaves a spinning kernel behind its batches slows the baselines' windows and so raises its own
score, and a kernel left waiting could read the next inputs while the checker writes them
(docs/evaluator.md, "Work left running"). Once the runner is stopped it can launch nothing, so
any such work is already resident when the next fill or window starts. Three readings, all from
trusted processes, tell a touched batch:

- the probe: each side's checker launches a one-element kernel and waits for it, right after it
  writes a batch's inputs and again once the window has closed (Checker.probe). Alone on the
  device it returns in a few hundredths of a millisecond; beside another context's resident
  kernel each launch waits for that context's time slice;
- a baseline's own device time per call (its runner's CUDA events) against that side's median
  over the shape's rounds;
- a checker's time to write one call's inputs against that checker's median over the shape's
  fresh writes: writing is device work too, but it is also host work of the checker's process.

A round with any touched batch is left out of the score whole (its candidate batches too, so
that the ratios stay round by round). Whether the evaluation is also flagged `extra_threads`
depends on what touched it (`flags`):

- a probe over PROBE_FLAG_MS or a baseline's own clock over its bound flags, in one round or
  many: each is device work beside a trusted batch that no honest run has shown;
- a probe over its floor but under PROBE_FLAG_MS, or a slow write, flags only when such rounds
  are more than WRITE_FLAG_SHARE of the shape's. Honest runs on one H100 read probes of 0.28 and
  0.31 ms in two rounds (docs/bench/gpu-site.md), beside slow writes of the same rounds; one
  write's time is the checker's own host time as much as the device's: on H100s a fill that met
  a new case of a Triton kernel compiled it inside the write (200 ms once per case and process,
  docs/evaluator.md), and an isolated slow write of an honest run is a stall of that process.
  Such a round is left out of the score all the same, so isolated slow rounds move nothing; work
  that reaches many rounds still flags, and a kernel left resident beside a probe makes it wait
  for its time slice (2.25-2.30 ms on the H100), far over PROBE_FLAG_MS.

The bounds sit far from an honest run's spread and well inside what a spin does
(docs/evaluator.md gives the GPU readings they are set from).
"""
from __future__ import annotations

import dataclasses

from evaluator.common import timing

# a probe this slow is never an idle device's. An absolute bound, not one relative to the shape's
# probes: work left running through every round slows them all
PROBE_FLOOR_MS = 0.25
# a probe this slow flags in any round: three times the slowest honest probe read on an H100
# (0.314 ms), under half of one beside a resident spin there (2.25 ms)
PROBE_FLAG_MS = 1.0
DEVICE_RATIO = 1.5  # a baseline batch's device time per call over its side's median
WRITE_RATIO = 2.0  # a checker's write per call over its own median
WRITE_FLAG_SHARE = 0.25  # slow writes alone flag when they reach more than this share of rounds
BASELINES = ("eager", "compile")
DEVICE_KINDS = ("probe", "device")  # readings that flag wherever they are seen


@dataclasses.dataclass(frozen=True)
class Reading:
    """One reading over its bound: `kind` is probe, device or write."""
    kind: str
    text: str

    def __str__(self) -> str:
        return self.text


def touched_rounds(got: dict, rounds: dict) -> dict[int, list[Reading]]:
    """round -> the readings that show it touched, for the rounds of one shape. `got`: side -> its
    batches (batch.Timed), `rounds`: side -> the round of each."""
    found: dict[int, list[Reading]] = {}

    def mark(r: int, kind: str, why: str) -> None:
        found.setdefault(r, []).append(Reading(kind, why))

    limit = PROBE_FLOOR_MS
    for side, batches in got.items():
        for t, r in zip(batches, rounds.get(side, [])):
            waited = max(t.probe_before_ms, t.probe_after_ms)
            if waited > limit:
                when = "before" if t.probe_before_ms >= t.probe_after_ms else "after"
                mark(r, "probe" if waited > PROBE_FLAG_MS else "slow_probe",
                     f"a probe kernel {when} {_whose(side)} batch waited {waited:.3g} ms (an idle device: under "
                     f"{limit:.3g} ms)")
    for side in BASELINES:
        batches = got.get(side, [])
        device = timing.median([t.device_ms / t.calls for t in batches if t.calls])
        for t, r in zip(batches, rounds.get(side, [])):
            if t.calls and device > 0 and t.device_ms / t.calls > DEVICE_RATIO * device:
                mark(r, "device", f"the {side} baseline took {t.device_ms / t.calls:.3g} ms a call on its own "
                                  f"clock, its median {device:.3g} ms")
    for side, batches in got.items():
        fresh = [(t, r) for t, r in zip(batches, rounds.get(side, [])) if t.fresh and t.calls]
        write = timing.median([t.gen_ms / t.calls for t, _ in fresh])
        for t, r in fresh:
            if write > 0 and t.gen_ms / t.calls > WRITE_RATIO * write:
                mark(r, "write", f"writing {_whose(side)} inputs took {t.gen_ms / t.calls:.3g} ms a call, its "
                                 f"median {write:.3g} ms")
    return found


def flags(touched: dict[int, list[Reading]], total: int) -> bool:
    """Whether the touched rounds of a shape of `total` rounds flag the evaluation: a probe over
    PROBE_FLAG_MS or a baseline-clock reading does; slower probes and slow writes do when their
    rounds are more than WRITE_FLAG_SHARE of the shape's."""
    if any(reading.kind in DEVICE_KINDS for readings in touched.values() for reading in readings):
        return True
    return len(touched) > WRITE_FLAG_SHARE * total


def _whose(side: str) -> str:
    return "the submission's" if side == "cand" else f"the {side} baseline's"


def untouched(got: dict, rounds: dict, touched: dict) -> tuple[dict, dict]:
    """`got` and `rounds` without the batches of touched rounds; unchanged where that would leave
    a side with none (every round touched: nothing clean to score, and the flag says so)."""
    keep = {side: [i for i, r in enumerate(rounds[side]) if r not in touched] for side in got}
    if not all(keep.values()):
        return got, rounds
    return ({side: [got[side][i] for i in keep[side]] for side in got},
            {side: [rounds[side][i] for i in keep[side]] for side in got})


def reason(where: str, touched: dict, total: int, scored: bool) -> str:
    """How many rounds, and the first readings: the flag's reason, or the note of rounds left out."""
    readings = [str(why) for r in sorted(touched) for why in touched[r]]
    left = (f"{len(touched)} of {total} timed rounds ran beside other work on the GPU and were not scored"
            if scored else f"every one of the {total} timed rounds ran beside other work on the GPU: the speedups "
                           "shown are not a clean measurement")
    more = f" (and {len(readings) - 3} more readings)" if len(readings) > 3 else ""
    return f"{where}: {left}: " + "; ".join(readings[:3]) + more
