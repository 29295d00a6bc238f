"""Clocks and statistics shared by the judge and the runner.

Scored times come from the judge's own clock around a batch of calls (judge.py, batch.py); this
module holds what is left for single calls (the correctness calls' `time_call`, whose time is
never scored), the statistics of the batch times, the device ceilings behind the roofline floor,
and the busy probe.
"""
from __future__ import annotations

import math
import os
import statistics
import time

import torch

from evaluator.contract.readings import PROBE_SLOWDOWN  # the bound lives with the rule over the readings

# CPU "ceilings": deliberately above any CPU, so the floor only catches impossible times
CPU_BANDWIDTH = 1e12
CPU_PEAK_FLOPS = 1e13


def quick() -> bool:
    return os.environ.get("EVALUATOR_QUICK", "") not in ("", "0")


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def time_call(fn, inputs, device: str, after=None):
    """(output, milliseconds) of one correctness call; the milliseconds are informational only.
    `after(out)` runs the moment the call returns, before any synchronize (the runner's copy of
    the output for the deferred-write check)."""
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn(*inputs)
        if after is not None:
            after(out)
        torch.cuda.synchronize()
        end.record()
        end.synchronize()
        return out, start.elapsed_time(end)
    t0 = time.perf_counter()
    out = fn(*inputs)
    ms = (time.perf_counter() - t0) * 1e3
    if after is not None:
        after(out)
    return out, ms


def median(xs) -> float:
    return statistics.median(xs) if xs else math.nan


def quantile(xs, q: float) -> float:
    """The q-quantile by linear interpolation between order statistics (nan when empty)."""
    if not xs:
        return math.nan
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def rel_se_of_median(xs) -> float:
    """Relative standard error of the median, from the median absolute deviation (robust to the
    odd slow call): 1.2533 * 1.4826 * MAD / sqrt(n) / median."""
    if len(xs) < 3:
        return math.inf
    m = median(xs)
    mad = median([abs(x - m) for x in xs])
    if m <= 0:
        return math.inf
    return 1.2533 * 1.4826 * mad / math.sqrt(len(xs)) / m


def geomean(xs) -> float:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    if not xs:
        return math.nan
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


# ---- ceilings for the roofline floor -----------------------------------------------------------

def measure_ceilings(device: str) -> dict:
    """Copy bandwidth (bytes read + written per second) and bf16 matmul rate of this device.
    The best of several runs: the floor must not be set by a slow repetition."""
    if device != "cuda":
        return {"bandwidth_bytes_s": CPU_BANDWIDTH, "peak_flop_s": CPU_PEAK_FLOPS, "source": "estimate"}
    n = 1 << 28  # 1 GiB of fp32
    src = torch.empty(n, dtype=torch.float32, device="cuda").normal_()
    dst = torch.empty_like(src)
    best_copy = _best_ms(lambda: dst.copy_(src), 10)
    del src, dst
    k = 8192
    a = torch.randn(k, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, k, device="cuda", dtype=torch.bfloat16)
    best_mm = _best_ms(lambda: a @ b, 10)
    del a, b
    torch.cuda.empty_cache()
    return {
        "bandwidth_bytes_s": 2 * n * 4 / (best_copy / 1e3),
        "peak_flop_s": 2 * k ** 3 / (best_mm / 1e3),
        "source": "measured",
    }


def _best_ms(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = math.inf
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return best


# ---- the busy probe: is something else using the device while the runner is stopped? ------------

PROBE_PAUSE_S = 0.5  # before a slow reading is confirmed


class Probe:
    """A fixed GPU workload timed before the runner starts and again while it is stopped. A kernel
    the submission left running (a stopped process's GPU work goes on) makes it slower. A slow
    reading is confirmed once more, still stopped, before it counts (`confirm`): work the
    submission left running is still there, while a burst of someone else's work has passed."""

    def __init__(self, device: str):
        self.a = torch.randn(2048, 2048, device=device, dtype=torch.bfloat16)
        self.src = torch.empty(16 << 20, dtype=torch.float32, device=device)
        self.dst = torch.empty_like(self.src)
        self.samples: list[float] = []
        self.confirmed: list[float] = []
        self.once()
        self.reference = median([self.once() for _ in range(7)])

    def once(self) -> float:
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(4):
            self.a @ self.a
        self.dst.copy_(self.src)
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def sample(self, n: int = 3) -> None:
        self.samples.extend(self.once() for _ in range(n))

    def slow(self) -> bool:
        """The samples so far read slow, and no confirmation has been taken yet."""
        return not self.confirmed and self._ratio(self.samples) > PROBE_SLOWDOWN

    def confirm(self, n: int = 7) -> None:
        """Samples once more after a pause (the runner stopped throughout, by the caller)."""
        time.sleep(PROBE_PAUSE_S)
        self.confirmed = [self.once() for _ in range(n)]

    def slowdown(self) -> float:
        """How much slower the probe ran while the runner was stopped: the samples' median over
        the reference, or the confirmation's when it read faster."""
        ratio = self._ratio(self.samples)
        return min(ratio, self._ratio(self.confirmed)) if self.confirmed else ratio

    def describe(self) -> str:
        """The readings behind a flag, for the admin."""
        text = (f"{self.reference:.3g} ms before the run, median {median(self.samples):.3g} ms over "
                f"{len(self.samples)} samples while the runner was stopped")
        if self.confirmed:
            text += f", {median(self.confirmed):.3g} ms when confirmed after a {PROBE_PAUSE_S:g} s pause"
        return text

    def readings(self) -> dict:
        """The numbers behind `slowdown`, for the report's readings (ms, rounded to 4 places)."""
        out = {"probe_reference_ms": round(self.reference, 4), "probe_slowdown": round(self.slowdown(), 4)}
        if self.samples:
            out["probe_stopped_ms"] = round(median(self.samples), 4)
        if self.confirmed:
            out["probe_confirmed_ms"] = round(median(self.confirmed), 4)
        return out

    def _ratio(self, samples: list[float]) -> float:
        if not samples or not self.reference > 0:
            return 1.0
        return median(samples) / self.reference
