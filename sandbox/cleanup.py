"""Remove what a crashed worker may have left: labelled containers past their deadline, bwrap
cgroups past theirs, and per-run work directories. Safe to call periodically (a Celery beat job)
and from `python -m sandbox cleanup`: running evaluations are never touched."""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from .cgroup import Cgroup, remove_dir, stale_groups
from .box import LABEL, WORK_PREFIX

GRACE_S = 60.0


def _deadline(name: str) -> float | None:
    head = name.split("-")[0]
    return float(head) if head.isdigit() else None


def docker_stragglers(now: float) -> list[str]:
    from . import docker_backend

    if docker_backend.unavailable_reason():
        return []
    import docker.errors

    removed = []
    engine = docker_backend.client()
    for container in engine.containers.list(all=True, filters={"label": LABEL}):
        deadline = container.labels.get(docker_backend.DEADLINE_LABEL, "")
        if deadline.isdigit() and float(deadline) + GRACE_S > now:
            continue
        try:
            container.remove(force=True, v=True)
            removed.append(container.id[:12])
        except docker.errors.NotFound:
            pass
    return removed


def cgroup_stragglers(now: float) -> list[str]:
    removed = []
    for path in stale_groups():
        deadline = _deadline(path.name)
        if deadline is not None and deadline + GRACE_S > now:
            continue
        group = Cgroup(1, {"pids": path, "memory": path})
        group.kill_all()
        if remove_dir(path):
            removed.append(str(path))
    return removed


def workdir_stragglers(now: float, base: str | None = None) -> list[str]:
    base = base or os.environ.get("SANDBOX_WORK_DIR") or tempfile.gettempdir()
    removed = []
    try:
        entries = list(Path(base).iterdir())
    except OSError:
        return removed
    for path in entries:
        if not path.name.startswith(WORK_PREFIX) or not path.is_dir():
            continue
        deadline = _deadline(path.name[len(WORK_PREFIX):])
        if deadline is None or deadline + GRACE_S < now:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(str(path))
    return removed


def remove_stragglers(now: float | None = None) -> dict[str, list[str]]:
    now = time.time() if now is None else now
    return {"containers": docker_stragglers(now), "cgroups": cgroup_stragglers(now),
            "workdirs": workdir_stragglers(now)}
