"""Processes as /proc shows them, for tests that look for what a submission left running."""
from __future__ import annotations

import os
from collections.abc import Callable


def alive(pid: int) -> bool:
    """Running or stopped, not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


def pids_where(match: Callable[[bytes], bool]) -> list[int]:
    """Host pids of live processes, in any PID namespace, whose raw command line (arguments
    separated by NUL) satisfies `match`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if match(cmdline) and alive(int(entry)):
            found.append(int(entry))
    return found
