"""Where the processes of one session wait, as /proc shows them: the operator's diagnostic for a
tool that has not ended when its wait runs out (sanitize.Run.finish logs it before stopping the
tool). Reads only; a process that ends while it is read is left out."""
from __future__ import annotations

import os

MAX_LINES = 24


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _thread(pid: str, tid: str) -> str:
    """`state wchan syscall-number [top kernel frames]` of one thread."""
    base = f"/proc/{pid}/task/{tid}"
    stat = _read(f"{base}/stat").rsplit(") ", 1)[-1][:1] or "?"
    wchan = _read(f"{base}/wchan").strip() or "-"
    syscall = (_read(f"{base}/syscall").split() or ["?"])[0]
    # the kernel stack needs root; its top frames name the lock or device call it sleeps in
    frames = [line.split()[-1].split("+")[0] for line in _read(f"{base}/stack").splitlines()[:4] if line.split()]
    return f"{stat} {wchan} sys={syscall}" + (f" [{' < '.join(frames)}]" if frames else "")


def _family(sid: int) -> list[str]:
    """Pids of session `sid` and of every descendant of its leader (a child that made a session
    of its own is still a descendant)."""
    parent, members = {}, set()
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        fields = _read(f"/proc/{entry}/stat").rsplit(") ", 1)[-1].split()
        if len(fields) >= 4:  # after comm: state ppid pgrp session
            parent[entry] = fields[1]
            if fields[3] == str(sid):
                members.add(entry)
    for pid in parent:
        up, seen = pid, 0
        while up in parent and seen < 64:
            if up == str(sid):
                members.add(pid)
                break
            up, seen = parent[up], seen + 1
    return sorted(members, key=int)


def session(sid: int) -> str:
    """One line per process of session `sid` (its leader's pid) and its descendants: pid,
    command, and where each of its threads waits, identical threads counted once."""
    lines = []
    for entry in _family(sid):
        command = _read(f"/proc/{entry}/cmdline").replace("\0", " ").strip()[:90]
        try:
            tids = sorted(os.listdir(f"/proc/{entry}/task"), key=int)
        except OSError:
            continue
        waits: dict[str, int] = {}
        for tid in tids:
            what = _thread(entry, tid)
            waits[what] = waits.get(what, 0) + 1
        where = "; ".join(f"{n}x {w}" if n > 1 else w for w, n in waits.items())
        lines.append(f"pid {entry} ({command}): {where}")
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... {len(lines) - MAX_LINES} more"]
    return "\n".join(lines)
