"""Shared by the sandbox tests (a plain module: conftest.py holds only fixtures)."""
from __future__ import annotations

import json
import os

import sandbox
from sandbox import Limits

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# small limits keep the suite quick. The time limit only matters to the endless-loop test (which
# sets 20 s); an honest evaluation takes 5-8 s here, but up to 30 s on a loaded 2-CPU machine
LIMITS = Limits(time_limit_s=60, memory_bytes=2 * 1024**3, pids=256, cpus=2,
                tmpfs_bytes=512 * 1024**2)

HONEST = """
import torch

def custom_kernel(x):
    return torch.softmax(x, dim=-1)
"""

WRONG = """
import torch

def custom_kernel(x):
    return torch.zeros_like(x)
"""

# what a run that hit a wall or broke the box reports; a clean run has none of them
UNCLEAN = {"timeout", "out_of_memory", "sandbox", "crash"}


def evaluate(backend: str, source: str, *, limits: Limits = LIMITS, mode: str = "test"):
    return sandbox.evaluate(source=source.encode(), task="softmax", mode=mode, device="cpu",
                            backend=backend, limits=limits)


def observations(result) -> dict[str, str]:
    """`OBS key value` lines the hostile code printed (they reach us through the judge's report)."""
    found = {}
    for text in (result.report.to_json().get("logs", ""), result.logs):
        for line in text.splitlines():
            if line.startswith("OBS "):
                _, key, *rest = line.split(" ", 2)
                found.setdefault(key, rest[0] if rest else "")
    return found


def everything(result) -> str:
    return json.dumps(result.report.to_json()) + result.logs
