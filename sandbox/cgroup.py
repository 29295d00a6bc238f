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
        """A cgroup of this run's own with the limits written, v2 first; None when neither
        hierarchy can be used. A group that cannot be set up completely is removed."""
        for version, find, make in ((2, v2_root, cls._make_v2), (1, v1_roots, cls._make_v1)):
            group = cls(version, {})
            try:
                where = find()
                if where is None:
                    continue
                make(group, where, run_id)
                group._write_limits(limits)
                return group
            except OSError:
                group.remove()
        return None

    @staticmethod
    def _make_v2(group: "Cgroup", root: Path, run_id: str) -> None:
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
        group.dirs.update({c: path for c in ("memory", "pids", "cpu")})

    @staticmethod
    def _make_v1(group: "Cgroup", roots: dict[str, Path], run_id: str) -> None:
        for controller, root in roots.items():
            path = root / PARENT / run_id
            path.mkdir(parents=True)
            group.dirs[controller] = path

    def _write_limits(self, limits: Limits) -> None:
        quota = str(int(limits.effective_cpus() * 100000))
        if self.version == 2:
            path = self.dirs["memory"]
            _write(path / "memory.max", str(limits.memory_bytes))
            if (path / "memory.swap.max").exists():
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(limits.pids))
            if (path / "cpu.max").exists():
                _write(path / "cpu.max", f"{quota} 100000")
            return
        memory = self.dirs["memory"]
        _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        if (memory / "memory.memsw.limit_in_bytes").exists():
            _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
        _write(self.dirs["pids"] / "pids.max", str(limits.pids))
        if "cpu" in self.dirs and (self.dirs["cpu"] / "cpu.cfs_quota_us").exists():
            _write(self.dirs["cpu"] / "cpu.cfs_period_us", "100000")
            _write(self.dirs["cpu"] / "cpu.cfs_quota_us", quota)

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
