"""`python -m evaluator run FILE --task NAME ...`, `python -m evaluator calibrate ...` and
`python -m evaluator warm [--task NAME ...]`.

Exit status: 0 whenever an evaluation completed, whatever its verdict (`warm`: every task warmed);
1 when a task's baselines failed to compile (`warm`); 2 on usage errors; 3 when the evaluation
could not run because of the judge's own side (JUDGE_FAILED), with its trace on stderr and no report.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

from evaluator.contract.report import MODES, time_split
from evaluator.contract.words import significant, verdict_word
from evaluator.wire.workdir import write_atomic


class UsageError(Exception):
    pass


# The judge, the checker or the baseline runner failed: not a verdict on the submission. The
# sandbox turns it into an infrastructure error, which the site retries.
JUDGE_FAILED = 3


def _terminated(signum, frame):
    # SIGTERM (`timeout`, a supervisor) unwinds like an exception: the judge's `finally` then
    # kills its runners, which run in sessions of their own and would otherwise outlive it (a
    # stopped baseline runner holding GPU memory, a candidate finishing its call)
    raise SystemExit(128 + signum)


def finish(code: int) -> None:
    """Ends `python -m evaluator` once its work is written: the kept baseline runners closed (what
    baseline_keep's atexit hook does), the output flushed, then os._exit. Python's own shutdown
    with torch loaded takes 0.4-0.7 s more on a 2-core CPU, after the report already exists, and
    on a GPU it also tears down the judge's CUDA context piece by piece; the kernel frees all of
    it when the process ends."""
    from evaluator.judge import baseline_keep

    baseline_keep.close_all()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    p = argparse.ArgumentParser(prog="python -m evaluator", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate one submission")
    run.add_argument("file")
    run.add_argument("--task", required=True)
    run.add_argument("--device", choices=("cpu", "cuda"))
    run.add_argument("--mode", choices=MODES, default="ranked")
    run.add_argument("--json", metavar="OUT", help="write the JSON report here ('-' for stdout)")
    run.add_argument("--profile-out", metavar="FILE", help="profile mode: write the .ncu-rep here")
    run.add_argument("--time-limit", type=float, default=300, metavar="S")
    cal = sub.add_parser("calibrate", help="the ruler: references and torch.compile as submissions")
    cal.add_argument("--device", choices=("cpu", "cuda"))
    cal.add_argument("--task", action="append", help="only this task (repeatable)")
    cal.add_argument("--json", metavar="OUT")
    warm = sub.add_parser("warm", help="compile the tasks' baselines into the judge's cache (warm.py)")
    warm.add_argument("--device", choices=("cpu", "cuda"))
    warm.add_argument("--task", action="append", help="only this task (repeatable; default: all)")
    warm.add_argument("--json", metavar="OUT", help="write the results here as a JSON list")
    sub.add_parser("tasks", help="list the tasks, where each comes from, and those that fail to load")
    desc = sub.add_parser("describe", help="what the site stores of each task (tasks/describe.py)")
    desc.add_argument("paths", nargs="*", metavar="PATH", help="a task folder, a problem file or a directory "
                      "of them (default: every task found)")
    desc.add_argument("--json", metavar="OUT", required=True)
    tri = sub.add_parser("triage", help="run each problem once and refuse those that cannot be judged (tasks/triage.py)")
    tri.add_argument("paths", nargs="+", metavar="PATH")
    tri.add_argument("--device", choices=("cpu", "cuda"))
    tri.add_argument("--json", metavar="OUT", required=True)
    args = p.parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "calibrate":
            return _calibrate(args)
        if args.command == "warm":
            return _warm(args)
        if args.command == "describe":
            return _describe(args)
        if args.command == "triage":
            return _triage(args)
        return _tasks()
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _device(requested: str | None) -> str:
    import torch

    if requested == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available here")
    return requested or ("cuda" if torch.cuda.is_available() else "cpu")


def _task(name: str) -> None:
    from evaluator.tasks import TASKS

    if name not in TASKS:
        raise UsageError(f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}")


def _run(args) -> int:
    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    _task(args.task)
    device = _device(args.device)
    from evaluator.api import evaluate_file

    try:
        result = evaluate_file(path, task=args.task, device=device, mode=args.mode,
                               time_limit_s=args.time_limit, profile_out=args.profile_out)
    except Exception:  # noqa: BLE001 - anything the judge raises is the judge's failure (Failure is caught inside)
        import traceback

        print("error: the evaluation could not run: the judge failed (not the submission's doing)",
              file=sys.stderr)
        traceback.print_exc()
        return JUDGE_FAILED
    if args.json == "-":
        json.dump(result, sys.stdout, indent=1)
        print()
    else:
        print(summary(result))
        if args.json:
            write_atomic(args.json, json.dumps(result, indent=1))
    return 0


def _warm(args) -> int:
    from evaluator.tasks import TASKS
    from evaluator.judge.warm import warm

    for name in args.task or ():
        _task(name)
    device = _device(args.device)
    results, failed = [], False
    for name in args.task or sorted(TASKS):
        try:
            results.append(warm(name, device))
        except Exception as e:  # noqa: BLE001 - one task's failure is reported; the others still warm
            failed = True
            results.append({"task": name, "device": device, "state": "failed",
                            "error": f"{type(e).__name__}: {e}"[:2000]})
        r = results[-1]
        print(f"{name}: {r['state']}" + (f" in {r['seconds']:.1f} s" if r.get("seconds") else "")
              + (f": {r['error']}" if r.get("error") else ""), file=sys.stderr, flush=True)
    if args.json:
        write_atomic(args.json, json.dumps(results, indent=1))
    return 1 if failed else 0


def summary(r: dict) -> str:
    lines = [f"{r['task']} on {r['device']}{' (' + r['gpu_name'] + ')' if r.get('gpu_name') else ''}: "
             f"{verdict_word(r['verdict'], r['mode'])}"]
    if r.get("speedup_vs_compile") is not None:
        lines.append(f"  speedup: {significant(r['speedup_vs_compile'])}x vs torch.compile, "
                     f"{significant(r['speedup_vs_eager'])}x vs eager (geometric mean over shapes)")
    for s in r.get("shapes", []):
        shape = ", ".join(f"{k}={v}" for k, v in s["shape"].items())
        lines.append(f"  [{shape}] candidate {_ms(s['candidate_ms'])}, eager {_ms(s['eager_ms'])}, "
                     f"compile {_ms(s['compile_ms'])}, floor {_ms(s['floor_ms'])}")
    tests = r.get("tests", [])
    if tests:
        passed = sum(t["passed"] for t in tests)
        # the hidden shapes are drawn per evaluation: the judge stops at the first failure, and
        # how many were left is not told
        stopped = " (stopped at the first failure)" if passed < len(tests) else ""
        lines.append(f"  tests: {passed} of {len(tests)} shapes passed{stopped}")
    for code, reason in zip(r["reason_codes"], r["reasons"]):
        lines.append(f"  - [{code}] {reason}")
    if r.get("profile"):
        from evaluator.contract.profile_report import summary_lines

        lines += summary_lines(r["profile"])
    phases = r.get("phases", {})
    lines.append("  time: " + time_split(phases))
    return "\n".join(lines)


def _ms(x) -> str:
    return "-" if x is None else f"{x:.4g} ms"


def _calibrate(args) -> int:
    from evaluator.judge.calibrate import calibrate, table
    from evaluator.tasks import TASKS

    names = args.task or sorted(TASKS)
    for name in names:
        _task(name)
    device = _device(args.device)
    def save(rows):
        if args.json:
            write_atomic(args.json, json.dumps(rows, indent=1))

    rows = calibrate(names, device=device, progress=lambda s: print(s, file=sys.stderr, flush=True),
                     on_row=save)
    print(table(rows, device))
    return 0


def _tasks() -> int:
    """Every task with its track and where it came from; a task that fails to load is listed with
    its error (exit status 1 then), never hiding the others."""
    from evaluator.tasks import TASKS, errors, sources

    failed = 0
    for name, source in sorted(sources().items()):
        try:
            title = TASKS[name].title
        except KeyError:
            failed += 1
            title = "(does not load)"
        print(f"{name:28s} {source.track:20s} {title}  [{source.path}]")
    for path, error in sorted(errors().items()):
        print(f"error: {path}: {error}", file=sys.stderr)
    return 1 if failed or errors() else 0


def _describe(args) -> int:
    from evaluator.tasks.describe import describe

    try:
        data = describe(args.paths)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    write_atomic(args.json, json.dumps(data, indent=1))
    print(f"{len(data['tasks'])} tasks described, {len(data['errors'])} failed to load", file=sys.stderr)
    return 0


def _triage(args) -> int:
    from evaluator.tasks.triage import triage

    try:
        data = triage(args.paths, _device(args.device))
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    write_atomic(args.json, json.dumps(data, indent=1))
    for r in data["results"]:
        print(f"{'ok' if r['ok'] else 'refused'} {r['name']}" + ("" if r["ok"] else ": " + "; ".join(r["reasons"])))
    for e in data["errors"]:
        print(f"refused {e['source']}: {e['error']}")
    return 0
