"""A cgroup per bwrap run: memory (no swap on top), pids and CPU limits, OOM detection, kill-all.

cgroup v2 where the unified hierarchy has the controllers, else v1 (one directory per controller).
Every run gets `<hierarchy>/kernelboard-sandbox/<run id>`; `cleanup` removes stale ones.
`create` returns None when no hierarchy is writable (not root, or a locked-down container): the
bwrap backend then falls back to prlimit.
"""
from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

from .limits import Limits

PARENT = "kernelboard-sandbox"
V2_CONTROLLERS = ("memory", "pids", "cpu")


def _mounts() -> list[tuple[str, str, set[str]]]:
    found = []
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                _, where, kind, options, *_ = line.split()
                if kind in ("cgroup", "cgroup2"):
                    found.append((kind, where, set(options.split(","))))
    except OSError:
        pass
    return found


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def v2_root() -> Path | None:
    for kind, where, _ in _mounts():
        if kind == "cgroup2":
            try:
                available = Path(where, "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if all(c in available for c in ("memory", "pids")):
                return Path(where)
    return None


def v1_roots() -> dict[str, Path] | None:
    roots = {}
    for kind, where, options in _mounts():
        if kind == "cgroup":
            for controller in ("memory", "pids", "cpu"):
                if controller in options:
                    roots.setdefault(controller, Path(where))
    if "memory" in roots and "pids" in roots:
        return roots
    return None


class Cgroup:
    def __init__(self, version: int, dirs: dict[str, Path]):
        self.version = version
        self.dirs = dirs  # controller -> directory (v2: one directory under every name)
        self._procs_fds: list[int] = []

    # -- setup ---------------------------------------------------------------------------
    @classmethod
    def create(cls, run_id: str, limits: Limits) -> "Cgroup | None":
        for make in (cls._create_v2, cls._create_v1):
            try:
                group = make(run_id, limits)
            except OSError:
                group = None
            if group:
                return group
        return None

    @classmethod
    def _create_v2(cls, run_id, limits):
        root = v2_root()
        if root is None:
            return None
        parent = root / PARENT
        parent.mkdir(exist_ok=True)
        wanted = [c for c in V2_CONTROLLERS if c in (root / "cgroup.controllers").read_text().split()]
        for where in (root, parent):
            enabled = (where / "cgroup.subtree_control").read_text().split()
            missing = [c for c in wanted if c not in enabled]
            if missing:
                _write(where / "cgroup.subtree_control", " ".join("+" + c for c in missing))
        path = parent / run_id
        path.mkdir()
        group = cls(2, {c: path for c in ("memory", "pids", "cpu")})
        try:
            _write(path / "memory.max", str(limits.memory_bytes))
            if (path / "memory.swap.max").exists():
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(limits.pids))
            if (path / "cpu.max").exists():
                _write(path / "cpu.max", f"{int(limits.effective_cpus() * 100000)} 100000")
        except OSError:
            group.remove()
            raise
        return group

    @classmethod
    def _create_v1(cls, run_id, limits):
        roots = v1_roots()
        if roots is None:
            return None
        dirs = {}
        group = cls(1, dirs)
        try:
            for controller, root in roots.items():
                path = root / PARENT / run_id
                path.mkdir(parents=True)
                dirs[controller] = path
            memory = dirs["memory"]
            _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
            if (memory / "memory.memsw.limit_in_bytes").exists():
                _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
            _write(dirs["pids"] / "pids.max", str(limits.pids))
            if "cpu" in dirs and (dirs["cpu"] / "cpu.cfs_quota_us").exists():
                _write(dirs["cpu"] / "cpu.cfs_period_us", "100000")
                _write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(limits.effective_cpus() * 100000)))
        except OSError:
            group.remove()
            raise
        return group

    # -- use -----------------------------------------------------------------------------
    def open_for_attach(self) -> None:
        """Opened before fork, written in the child: no allocation or lookup after fork."""
        seen = set()
        for path in self.dirs.values():
            if path not in seen:
                seen.add(path)
                self._procs_fds.append(os.open(path / "cgroup.procs", os.O_WRONLY))

    def attach_self(self) -> None:
        for fd in self._procs_fds:
            os.write(fd, b"0")

    def close_attach(self) -> None:
        for fd in self._procs_fds:
            os.close(fd)
        self._procs_fds = []

    def pids(self) -> list[int]:
        try:
            text = (self.dirs["pids"] / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]

    def oom_killed(self) -> bool:
        memory = self.dirs["memory"]
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (memory / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except OSError:
            pass
        return False

    def kill_all(self, timeout_s: float = 5.0) -> None:
        if self.version == 2 and (self.dirs["pids"] / "cgroup.kill").exists():
            try:
                _write(self.dirs["pids"] / "cgroup.kill", "1")
            except OSError:
                pass
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.pids()
            if not pids or time.monotonic() > deadline:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        self.close_attach()
        for path in set(self.dirs.values()):
            remove_dir(path)


def remove_dir(path: Path, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                return False
            time.sleep(0.02)


def stale_groups() -> list[Path]:
    """Every per-run cgroup directory we created, in any hierarchy."""
    found = []
    seen_roots = set()
    for _, where, _ in _mounts():
        if where in seen_roots:
            continue
        seen_roots.add(where)
        parent = Path(where, PARENT)
        if parent.is_dir():
            found.extend(p for p in parent.iterdir() if p.is_dir())
    return found
