"""The judge's GPU-only rules over the readings it writes into the report (`report["readings"]`):
the runner's thread counts and the busy probe after the re-check. Pure functions of those numbers,
so that the GPU records kept under tests/data/gpu_records are replayed through the same code on
the CPU.

Standard library only."""
from __future__ import annotations

PROBE_SLOWDOWN = 1.5  # the probe while the runner is stopped vs before it started
THREAD_PHASES = ("import", "correctness", "timing", "after")


def busy_after_recheck(readings: dict) -> bool:
    """The device was busy while the runner was stopped after the re-check: the probe read more
    than PROBE_SLOWDOWN times its reference (timing.Probe.slowdown, confirmed once)."""
    return float(readings.get("probe_slowdown", 1.0)) > PROBE_SLOWDOWN


def threads_over_base(readings: dict) -> dict[str, int]:
    """The phases whose largest thread count exceeded the count before the import, with that
    count: any of them flags `extra_threads`."""
    base = readings.get("threads_base")
    if not isinstance(base, int):
        return {}
    return {phase: readings[f"threads_{phase}"] for phase in THREAD_PHASES
            if isinstance(readings.get(f"threads_{phase}"), int) and readings[f"threads_{phase}"] > base}
