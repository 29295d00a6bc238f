"""Seed the candidate runner's torch.compile cache with the judge's autotuning picks.

Why: inductor benchmarks several configurations of each reduction kernel at its first call and
keeps the winner in its cache. Two cold compiles of the same function can pick differently, and
the pick moves the kernel's speed by several per cent (softmax on an H200: torch.compile submitted
as a kernel read 0.95 against the torch.compile baseline). With the judge's picks, a submission
that calls torch.compile on the task's reference gets the kernels the baseline runs, so
calibration compares like with like.

What is copied: only the autotuning picks, the `*.best_config` files of the judge's `inductor/`
directory (small JSON: a tile size, warps, stages). Each lies next to its kernel's source under a
name made from the hash of that source, so a runner that compiles the same function cold finds the
pick at the same place in its own cache and uses it instead of benchmarking. Nothing else: the
compiled graphs hold absolute paths into the judge's cache (a copied one made the runner write
there: PermissionError on the H200), and a copied Triton cache crashed every Triton launch in the
runner with SIGSEGV (docs/bench/gpu-compile-variance.md). No inputs, seeds or answers are in a
pick. The copy is the runner's own: it can change it, and nothing flows back to the judge.
"""
from __future__ import annotations

import os

from evaluator.wire import workdir

SUFFIX = ".best_config"
MAX_BYTES = 16 << 20  # more picks than this are not copied (the note says so)
MAX_FILES = 20000


def enabled() -> bool:
    return os.environ.get("EVALUATOR_COMPILE_SEED", "1") != "0"


def read_tree(cache: str) -> tuple[list[tuple[str, bytes]], str]:
    """[(path relative to cache, contents)] of the judge's autotuning picks, and a note if skipped."""
    files, total = [], 0
    for dirpath, dirnames, filenames in os.walk(os.path.join(cache, "inductor")):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if not name.endswith(SUFFIX) or os.path.islink(path) or not os.path.isfile(path):
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read(MAX_BYTES + 1)
            except OSError:
                continue
            total += len(data)
            if total > MAX_BYTES or len(files) >= MAX_FILES:
                return [], f"autotuning picks over {MAX_BYTES >> 20} MiB or {MAX_FILES} files: not copied"
            files.append((os.path.relpath(path, cache), data))
    return files, ""


def write_tree(dest: str, files: list[tuple[str, bytes]]) -> None:
    """Write the files under dest (the runner's scratch), as whoever calls it."""
    root = os.path.realpath(dest)
    for rel, data in files:
        path = os.path.realpath(os.path.join(root, rel))
        if not path.startswith(root + os.sep):  # never outside the scratch
            continue
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


def seed(work: workdir.Workdir, cache: str) -> str:
    """Copy the judge's autotuning picks into the runner's scratch, as the runner's user (the
    runner has started but not loaded the submission yet). Returns a short note."""
    files, note = read_tree(cache)
    if not files:
        return note or "no autotuning picks in the judge's cache: nothing copied"
    dest = str(work.scratch)
    work.as_owner(lambda: write_tree(dest, files))
    return f"{len(files)} files ({sum(len(d) for _, d in files) >> 10} KiB) of autotuning picks copied from the judge's cache"
