"""Processes as /proc shows them, read by the judge: a process's descendants and threads (the
runner's tree, the pinned processes), and where the processes of one session wait (the
operator's diagnostic for a sanitizer tool that has not ended when its wait runs out). Reads
only; a process that ends while it is read is left out."""
from __future__ import annotations

import os

MAX_LINES = 24


def _printable(text: str) -> str:
    """Control characters as spaces: a command line and a thread name are the submission's to
    choose, and a newline in one would write a line of its own into the operator's log."""
    return "".join(c if c.isprintable() else " " for c in text)


def _read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _thread(pid: int, tid: int) -> str:
    """`state wchan syscall-number [top kernel frames]` of one thread."""
    base = f"/proc/{pid}/task/{tid}"
    stat = _read(f"{base}/stat").rsplit(") ", 1)[-1][:1] or "?"
    wchan = _read(f"{base}/wchan").strip() or "-"
    syscall = (_read(f"{base}/syscall").split() or ["?"])[0]
    # the kernel stack needs root; its top frames name the lock or device call it sleeps in
    frames = [line.split()[-1].split("+")[0] for line in _read(f"{base}/stack").splitlines()[:4] if line.split()]
    return f"{stat} {wchan} sys={syscall}" + (f" [{' < '.join(frames)}]" if frames else "")


def _parents() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, session id) of every process."""
    found = {}
    for entry in (e for e in os.listdir("/proc") if e.isdigit()):
        fields = _read(f"/proc/{entry}/stat").rsplit(") ", 1)[-1].split()
        if len(fields) >= 4:  # after comm: state ppid pgrp session
            found[int(entry)] = (int(fields[1]), int(fields[3]))
    return found


def parent(pid: int) -> int:
    """The parent's pid, or -1 when the process is gone."""
    fields = _read(f"/proc/{pid}/stat").rsplit(") ", 1)[-1].split()
    return int(fields[1]) if len(fields) >= 2 else -1


def descendants(root: int, parents: dict | None = None) -> list[int]:
    """`root` and every process below it (setsid cannot hide a child)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in (parents if parents is not None else _parents()).items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def threads(pids: list[int]) -> list[int]:
    """Thread ids of these processes."""
    found = []
    for pid in pids:
        try:
            found += [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            continue
    return found


def thread_names(pids: list[int]) -> list[str]:
    """The name (comm) of every thread of these processes. A process may name its own threads
    as it likes: an audit hint, never evidence."""
    names = []
    for pid in pids:
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/comm", "rb") as f:
                    names.append(f.read(64).decode("utf-8", "replace").strip())
            except OSError:
                continue
    return names


def _family(sid: int) -> list[int]:
    """Pids of session `sid` and of every descendant of its leader (a child that made a session
    of its own is still a descendant)."""
    parents = _parents()
    members = {pid for pid, (_, session) in parents.items() if session == sid}
    return sorted(members | set(descendants(sid, parents)) & set(parents))


def session(sid: int) -> str:
    """One line per process of session `sid` (its leader's pid) and its descendants: pid,
    command, and where each of its threads waits, identical threads counted once."""
    lines = []
    for entry in _family(sid):
        command = _printable(_read(f"/proc/{entry}/cmdline").replace("\0", " ")).strip()[:90]
        tids = sorted(threads([entry]))
        if not tids:
            continue
        waits: dict[str, int] = {}
        for tid in tids:
            what = _printable(_thread(entry, tid))
            waits[what] = waits.get(what, 0) + 1
        where = "; ".join(f"{n}x {w}" if n > 1 else w for w, n in waits.items())
        lines.append(f"pid {entry} ({command}): {where}")
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... {len(lines) - MAX_LINES} more"]
    return "\n".join(lines)
