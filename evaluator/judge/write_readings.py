"""How the checker's write of a batch's inputs went on its own clocks (diagnostics only)."""
from __future__ import annotations

import gc
import resource
import time


class WriteReadings:
    """What this process did while it wrote a batch's inputs, from its own clocks: the host's time
    to issue each call's writes (a stall of this process shows as one slow call), its garbage
    collections, its context switches and page faults. Kept with the batch's record
    (EVALUATOR_SAMPLES_DIR) to tell a slow write caused here (a stall of this process, a Triton
    kernel compiled inside the write) from a device shared with other work (touched.py)."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.last = self.t0
        self.issue_ms: list[float] = []
        self.usage = resource.getrusage(resource.RUSAGE_SELF)
        self.gc_ms = 0.0
        self.gc_start = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase, info):
        if phase == "start":
            self.gc_start = time.perf_counter()
        else:
            self.gc_ms += (time.perf_counter() - self.gc_start) * 1e3

    def call_issued(self) -> None:
        now = time.perf_counter()
        self.issue_ms.append(round((now - self.last) * 1e3, 4))
        self.last = now

    def done(self) -> dict:
        gc.callbacks.remove(self._gc)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {"host_ms": round((time.perf_counter() - self.t0) * 1e3, 4),
                "issue_max_ms": max(self.issue_ms, default=0.0),
                "issue_median_ms": sorted(self.issue_ms)[len(self.issue_ms) // 2] if self.issue_ms else 0.0,
                "gc_ms": round(self.gc_ms, 4),
                "switches": usage.ru_nivcsw - self.usage.ru_nivcsw, "waits": usage.ru_nvcsw - self.usage.ru_nvcsw,
                "faults": usage.ru_minflt - self.usage.ru_minflt, "major_faults": usage.ru_majflt - self.usage.ru_majflt}
