"""Reading task definitions in a box: `python -m evaluator describe` (what each task is: text,
shapes, work per benchmark shape) and `python -m evaluator triage` (each problem run once on the
device, refused with its reasons when it cannot be judged).

A task file is trusted staff code, but it is still code: the site's processes never import it.
They hand its bytes to `task_command`, which writes them read-only at /tasks in a box of the
evaluations' own kind (image, binds, seccomp filter, limits) and reads back the JSON the evaluator
wrote to /out, the one directory the box writes to the host.

    task_command(kind="describe", files={"level1/19_ReLU.py": b"..."})  # track: kernelbench-level1
    task_command(kind="describe", builtin=True)   # the evaluator's own built-in tasks
    task_command(kind="triage", files=..., device="cpu")

Infrastructure failures (no box, a box that ran out of time or memory, an evaluator that wrote no
or malformed output) raise SandboxError; a broken task file is one entry of the output's "errors".
"""
from __future__ import annotations

import json

from . import box as _box
from .errors import SandboxError
from .limits import Limits
from .result import ReportError, read_report_file
from .run import choose_backend, run_box

KINDS = {"describe": "tasks", "triage": "results"}
# the evaluator's own tasks inside the box (the image's copy, or the host's bound read-only)
BUILTIN_TASKS = f"{_box.EVALUATOR_ROOT}/evaluator/tasks/builtin"
OUTPUT_BYTES = 16 * 1024 * 1024  # a level of problems, each with its reference's source


def task_argv(python: str, *, kind: str, paths: list[str], device: str) -> list[str]:
    # no --track: the evaluator names a task's track after the directory it is found in, in the
    # box of an evaluation as here, so the caller lays the files out in their track's directory
    argv = [python, "-m", "evaluator", kind, *paths, "--json", _box.REPORT_FILE]
    if kind == "triage":
        argv += ["--device", device]
    return argv


def task_command(*, kind: str, files: dict[str, bytes] | None = None, paths: list[str] | None = None,
                 builtin: bool = False, device: str = "cpu", backend: str | None = None, limits: Limits | None = None) -> dict:
    """Run `python -m evaluator <kind>` in a box on `files` ({relative path: bytes}, read-only at
    /tasks) and return its parsed JSON. `paths` (relative to /tasks) are what the command is
    given, by default every top-level entry of `files` (a task folder, a problem file, or a
    directory of them); `builtin` adds the evaluator's own task directory."""
    if kind not in KINDS or device not in ("cpu", "cuda"):
        raise ValueError(f"bad task command: kind={kind!r} device={device!r}")
    files = _box.check_task_files(files or {})
    if paths is None:
        paths = sorted({rel.split("/", 1)[0] for rel in files})
    for rel in paths:
        if rel not in files and not any(f.startswith(rel + "/") for f in files):
            raise ValueError(f"bad task command: {rel!r} is none of the files given")
    argv_paths = [f"{_box.TASKS_DIR}/{rel}" for rel in paths] + ([BUILTIN_TASKS] if builtin else [])
    if not argv_paths:
        raise ValueError("bad task command: no task files and no built-in tasks")
    limits = limits or Limits.from_env()
    chosen = choose_backend(backend)

    def collect(box, outcome):
        try:
            return read_report_file(str(box.out_dir / "report.json"), OUTPUT_BYTES)
        except ReportError as exc:
            raise SandboxError(f"evaluator {kind}: its output file is unusable: {exc}") from None

    outcome, data = run_box(
        chosen, source=b"", device=device if kind == "triage" else "cpu", limits=limits, collect=collect,
        task_files=files,
        argv_for=lambda py: task_argv(py, kind=kind, paths=argv_paths, device=device))
    if outcome.timed_out:
        raise SandboxError(f"evaluator {kind} ran out of time ({limits.time_limit_s:g} s)")
    if outcome.oom_killed:
        raise SandboxError(f"evaluator {kind} ran out of memory in the box")
    if data is None:
        raise SandboxError(f"evaluator {kind} wrote no output (exit status {outcome.exit_code}); "
                           f"its output ends:\n{outcome.logs[-4000:]}")
    return parse_output(kind, data)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def parse_output(kind: str, data: bytes) -> dict:
    """The command's JSON, checked for its outer shape only (a dict with a list of entries and a
    list of errors, each entry a dict): the site checks each entry's fields as it stores them."""
    try:
        obj = json.loads(data, parse_constant=_no_constant)
    except ValueError as exc:
        raise SandboxError(f"evaluator {kind}: its output is not JSON: {exc}") from None
    key = KINDS[kind]
    if not isinstance(obj, dict) or not isinstance(obj.get(key), list) \
            or not isinstance(obj.get("errors", []), list) \
            or not all(isinstance(e, dict) for e in obj[key] + obj.get("errors", [])):
        raise SandboxError(f"evaluator {kind}: its output is not {{{key!r}: [...], 'errors': [...]}}")
    obj.setdefault("errors", [])
    return obj
