"""What the task commands share: a folder's files read as bytes (never imported), and one addition
run and reported a line per problem."""
from __future__ import annotations

import re
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import CommandError

# what a task folder may hold that its evaluations never need
SKIPPED_DIRS = {"__pycache__", "solutions", ".git"}
SKIPPED_SUFFIXES = {".pyc", ".pyo"}
ADDED_TRACK = "added"


def default_track(path: Path) -> str:
    """A problem of a KernelBench-style checkout joins its level's track; anything else "added"."""
    level = path.resolve().parent.name if path.is_file() else ""
    if re.fullmatch(r"level\d{1,3}", level):
        return f"kernelbench-{level}"
    return ADDED_TRACK


def folder_files(root: Path, *, prefix: str) -> dict[str, bytes]:
    """Every file under `root` (a task folder) as {prefix/relative path: bytes}, without its
    solutions/ (the test suite's data) and caches."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not (set(rel.parts[:-1]) & SKIPPED_DIRS) and path.suffix not in SKIPPED_SUFFIXES:
            files[f"{prefix}/{rel.as_posix()}"] = path.read_bytes()
    return files


def add_and_report(command, files: dict[str, bytes], *, track: str, device: str | None) -> list:
    """services.task_add over `files`, a line per problem on the command's output; CommandError
    (exit status 1) only when a box could not run."""
    from sandbox import SandboxError

    from leaderboard import services

    try:
        outcomes = services.task_add(files=files, track=track, device=device)
    except SandboxError as exc:
        raise CommandError(f"sandbox error (infrastructure, nothing was added): {exc}") from None
    except ValidationError as exc:
        raise CommandError("; ".join(exc.messages)) from None
    for outcome in outcomes:
        command.stdout.write(outcome.line())
    return outcomes
