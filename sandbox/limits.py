"""Resource limits of one evaluation, and how they are read from the worker's environment."""
from __future__ import annotations

import dataclasses
import os

from .errors import SandboxError

GIB = 1024**3
MIB = 1024**2


def worker_cores() -> list[int]:
    """The cores this process may run on: a worker started under `taskset` (or a CPU set of its
    own) keeps its boxes, and the evaluations in them, on those cores."""
    return sorted(os.sched_getaffinity(0))


def narrowed_cores() -> str | None:
    """The worker's cores as a cpuset list ("1", "0,2"), or None where it may run on every core
    of the machine."""
    cores = worker_cores()
    if len(cores) >= (os.cpu_count() or len(cores)):
        return None
    return ",".join(str(c) for c in cores)


@dataclasses.dataclass(frozen=True)
class Limits:
    time_limit_s: float = 300.0  # wall clock, enforced from outside the box
    memory_bytes: int = 16 * GIB  # RAM; swap is not allowed on top
    pids: int = 512  # processes + threads (torch and the compiler start many threads)
    cpus: float = 4.0  # clamped to the cores the worker may run on
    tmpfs_bytes: int = 2 * GIB  # /tmp: scratch, Triton / Inductor caches, compiled extensions
    shm_bytes: int = 64 * MIB  # /dev/shm
    nofile: int = 4096
    log_bytes: int = 64 * 1024  # stdout/stderr kept and shown to the submitter
    report_bytes: int = 4 * MIB  # the report file is refused beyond this
    gpu_index: int | None = None  # the worker's GPU (device "cuda" only)

    def __post_init__(self):
        for name in ("time_limit_s", "memory_bytes", "pids", "cpus", "tmpfs_bytes", "shm_bytes",
                     "nofile", "log_bytes", "report_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{name} must be a positive number, not {value!r}")
        if self.gpu_index is not None and (not isinstance(self.gpu_index, int) or self.gpu_index < 0):
            raise ValueError(f"Limits.gpu_index must be a GPU index, not {self.gpu_index!r}")

    def effective_cpus(self) -> float:
        return min(float(self.cpus), float(len(worker_cores())))

    @classmethod
    def from_env(cls, env: os._Environ | dict | None = None) -> "Limits":
        """SANDBOX_TIME_LIMIT (s), SANDBOX_MEMORY (bytes, or with K/M/G suffix), SANDBOX_PIDS,
        SANDBOX_CPUS, SANDBOX_TMPFS, SANDBOX_GPU (index); anything unset keeps its default."""
        env = os.environ if env is None else env
        values = {}
        parsers = {
            "SANDBOX_TIME_LIMIT": ("time_limit_s", float),
            "SANDBOX_MEMORY": ("memory_bytes", parse_bytes),
            "SANDBOX_PIDS": ("pids", int),
            "SANDBOX_CPUS": ("cpus", float),
            "SANDBOX_TMPFS": ("tmpfs_bytes", parse_bytes),
            "SANDBOX_GPU": ("gpu_index", int),
        }
        for var, (field, parse) in parsers.items():
            raw = env.get(var, "").strip()
            if raw:
                try:
                    values[field] = parse(raw)
                except ValueError:
                    raise SandboxError(f"{var}={raw!r} is not a valid value") from None
        try:
            return cls(**values)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None


def parse_bytes(text: str) -> int:
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1024, "M": MIB, "G": GIB}.get(text[-1:], 1)
    number = text[:-1] if scale != 1 else text
    value = int(float(number) * scale)
    if value <= 0:
        raise ValueError(text)
    return value
