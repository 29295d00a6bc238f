"""The processes of a profile (evaluator/judge/profile.py): `launch` becomes the runner's user and execs
a command; `child` is the submission's process under the profiler.

    python -m evaluator.runner.profile_child launch [--drop-to UID] [--expose DIR ...] -- COMMAND...
    python -m evaluator.runner.profile_child child --task T --device D --source F --shape JSON --seed N --dir D --tool ncu|torch

Standard library only until `launch` has dropped privileges (like the runner's start).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys

from evaluator.wire import isolation
from evaluator.contract import profile_report

FILE_LIMIT = 1 << 30  # no file the child writes grows beyond 1 GiB


def _launch(argv) -> int:
    """Become the runner's user the way the runner does (PID namespace, no capabilities, no new
    privileges, the interpreter exposed when its directory is closed to that user), then exec the
    command: the child, or ncu around it. Standard library only until then."""
    p = argparse.ArgumentParser(prog="python -m evaluator.runner.profile_child launch")
    p.add_argument("--drop-to", type=int, default=None)
    p.add_argument("--expose", action="append", default=[])
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        p.error("no command")
    notes = []
    if a.drop_to is not None and os.geteuid() == 0:
        notes += isolation.enter_pid_namespace()
        needed = [sys.prefix, sys.base_prefix, sys.exec_prefix, isolation.PACKAGE_ROOT, *a.expose,
                  *[d for d in sys.path if d and os.path.isdir(d)]]
        notes += isolation.drop_privileges(a.drop_to, a.drop_to, needed)
        if os.geteuid() == 0:
            print("profile launcher: could not leave uid 0; nothing is run", file=sys.stderr)
            return 1
    elif not isolation.set_no_new_privs():
        notes.append("could not set no_new_privs")
    for note in notes:
        print(f"profile launcher: {note}", file=sys.stderr, flush=True)
    os.chdir(os.environ.get("HOME") or "/")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
    os.execvp(command[0], command)
    return 127  # not reached


def _child(argv) -> int:
    """The submission's process: inputs, one call whose output the judge checks, one profiled call."""
    p = argparse.ArgumentParser(prog="python -m evaluator.runner.profile_child child")
    for name in ("--task", "--device", "--source", "--shape", "--dir", "--tool"):
        p.add_argument(name, required=True)
    p.add_argument("--seed", type=int, required=True)
    a = p.parse_args(argv)
    import importlib.util

    import torch

    from evaluator.tasks import get_task

    if a.device == "cpu":
        torch.set_num_threads(1)  # as the runner: one thread (runner_process.runner_env)
    task = get_task(a.task)
    inputs = task.make_inputs(json.loads(a.shape), a.seed, a.device)
    spec = importlib.util.spec_from_file_location("submission", a.source)
    module = importlib.util.module_from_spec(spec)
    sys.modules["submission"] = module
    spec.loader.exec_module(module)
    kernel = task.entry(module, a.device)
    out = kernel(*inputs)
    _sync(a.device)
    _write_output(out, a.dir)
    if a.tool == "ncu":
        # ncu runs with --profile-from-start off: only these launches are profiled
        if a.device == "cuda":
            torch.cuda.profiler.start()
        kernel(*inputs)
        _sync(a.device)
        if a.device == "cuda":
            torch.cuda.profiler.stop()
        return 0
    from evaluator.runner.profile_torch import rows

    data = json.dumps(rows(kernel, inputs, a.device, limit=profile_report.MAX_OPS, table_chars=profile_report.MAX_TABLE))
    with open(os.path.join(a.dir, "profile.json"), "w") as f:
        f.write(data)
    return 0


def _sync(device: str) -> None:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()


def _write_output(out, directory: str) -> None:
    """The output's bytes, then its description (so that a description means complete bytes)."""
    import torch

    meta = {"type": "tensor" if isinstance(out, torch.Tensor) else type(out).__name__[:40]}
    if isinstance(out, torch.Tensor):
        meta.update(dtype=str(out.dtype), shape=list(out.shape), device=out.device.type)
        with open(os.path.join(directory, "output.bin"), "wb") as f:
            if out.numel():
                f.write(out.detach().contiguous().reshape(-1).view(torch.uint8).cpu().numpy().tobytes())
    with open(os.path.join(directory, "output.json"), "w") as f:
        json.dump(meta, f)


if __name__ == "__main__":
    commands = {"launch": _launch, "child": _child}
    if len(sys.argv) > 1 and sys.argv[1] in commands:
        sys.exit(commands[sys.argv[1]](sys.argv[2:]))
    print("usage: python -m evaluator.runner.profile_child launch|child ...", file=sys.stderr)
    sys.exit(2)
