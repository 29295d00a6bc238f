"""The judge's progress, for whoever waits on the evaluation: one JSON line per step appended to
the file EVALUATOR_PROGRESS_FILE names (the box points it into its output directory, which only
the judge's user can write; the runner's environment never carries the variable). Only the judge
writes it, from its own code, so nothing the submission prints moves it; it is shown, never scored.
Without the variable nothing is written."""
from __future__ import annotations

import json
import os
import time

MAX_LINE = 500


def note(step: str, **detail) -> None:
    path = os.environ.get("EVALUATOR_PROGRESS_FILE")
    if not path:
        return
    line = json.dumps({"t": round(time.time(), 3), "step": step, **detail})[:MAX_LINE]
    try:
        with open(path, "a") as f:
            f.write(line + "\n")
    except OSError:
        pass  # progress is for people watching; it never stops an evaluation


def latest(path: str) -> dict | None:
    """The last complete line of a progress file, or None."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("step"), str):
            return value
    return None


def words(p: dict) -> str:
    """A progress line as the site shows it: "correctness: shape 3 of 6"."""
    step = p.get("step", "")

    def of(k, n):
        return f"{p.get(k)} of {p.get(n)}" if p.get(k) is not None and p.get(n) is not None else ""

    if step == "correctness":
        return f"correctness: shape {of('k', 'n')}"
    if step == "timing":
        return f"timing: shape {of('shape', 'shapes')}, round {p.get('round')} (at most {p.get('rounds_max')})"
    return {"setup": "setting up", "compile": "starting the runner and compiling", "sanitizer": "sanitizer",
            "recheck": "re-checking after timing", "profile": "profiling", "verdict": "deciding the verdict",
            }.get(step, step)[:120]
