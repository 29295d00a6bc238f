"""The Python entry point: exactly what `python -m evaluator run` runs (judge here, runner in its
own process), returning the report dict."""
from __future__ import annotations

from pathlib import Path


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def evaluate_file(path, *, task: str, device: str = "cpu", mode: str = "ranked",
                  time_limit_s: float = 300, scan: bool = True, profile_out: str | None = None) -> dict:
    return evaluate_source(Path(path).read_bytes(), task=task, device=device, mode=mode,
                           time_limit_s=time_limit_s, scan=scan, profile_out=profile_out)


def evaluate_source(source: bytes | str, *, task: str, device: str = "cpu", mode: str = "ranked",
                    time_limit_s: float = 300, scan: bool = True, profile_out: str | None = None) -> dict:
    """`scan=False` switches the source scan off (tests and bench/ only, never the site): it
    shows that no verdict depends on the scan, which only ever adds an audit flag.
    Profile mode is test mode's checks, then the profile (profile.py); its .ncu-rep, when there
    is one, goes to `profile_out`."""
    import time

    from evaluator.judge.evaluation import evaluate
    from evaluator.contract.report import MODES
    from evaluator.tasks import TASKS

    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(sorted(TASKS))}")
    if isinstance(source, str):
        source = source.encode("utf-8")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu' or 'cuda', not {device!r}")
    started = time.monotonic()
    judged = "test" if mode == "profile" else mode
    report = evaluate(source, task=task, device=device, mode=judged, time_limit_s=time_limit_s, scan=scan)
    if mode == "profile":
        from evaluator.judge import profile
        from evaluator.contract import progress

        progress.note("profile")
        left = time_limit_s - (time.monotonic() - started)
        return profile.apply(report, source, time_left_s=left, file_out=profile_out)
    return report
