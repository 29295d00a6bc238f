"""`python -m sandbox run FILE --task NAME [--mode ranked|test|profile] [--device cpu|cuda] [--backend docker|bwrap] [--json OUT] [--profile-out FILE]`
`python -m sandbox build-image [--tag NAME]`   build sandbox/Dockerfile (production GPU hosts)
`python -m sandbox cleanup`                    remove stragglers of crashed workers
`python -m sandbox check`                      which backends work here
`python -m sandbox seccomp-build`              compile sandbox/seccomp.py's policy (needs pyseccomp)

Exit status: 0 when the command did its job (for `run`: an evaluation completed, whatever its
verdict), 1 on a sandbox failure, 2 on usage errors.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from evaluator import MODES, profile_summary, verdict_word

from . import BACKENDS, Limits, SandboxError, cleanup, evaluate, image


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox", description="run submissions in the sandbox")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate one file inside the sandbox")
    run.add_argument("file")
    run.add_argument("--task", required=True)
    run.add_argument("--mode", choices=MODES, default="ranked")
    run.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    run.add_argument("--backend", choices=sorted(BACKENDS))
    run.add_argument("--time-limit", type=float, metavar="S")
    run.add_argument("--json", metavar="OUT", help="write the report here ('-' for stdout)")
    run.add_argument("--profile-out", metavar="FILE", help="profile mode: write the .ncu-rep here")
    build = sub.add_parser("build-image", help="build the production image from sandbox/Dockerfile")
    build.add_argument("--tag")
    sub.add_parser("cleanup", help="remove containers, cgroups and work dirs of crashed runs")
    sub.add_parser("check", help="say which backends are usable here")
    sub.add_parser("seccomp-build", help="write sandbox/filters/ from sandbox/seccomp.py (needs pyseccomp)")
    args = p.parse_args(argv)
    try:
        return {"run": _run, "build-image": _build, "cleanup": _cleanup, "check": _check,
                "seccomp-build": _seccomp_build}[args.command](args)
    except SandboxError as exc:
        print(f"sandbox error: {exc}", file=sys.stderr)
        return 1


def _run(args) -> int:
    try:
        source = Path(args.file).read_bytes()
    except OSError as exc:
        print(f"error: {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    limits = Limits.from_env()
    if args.time_limit:
        limits = dataclasses.replace(limits, time_limit_s=args.time_limit)
    result = evaluate(source=source, task=args.task, mode=args.mode, device=args.device,
                      backend=args.backend, limits=limits)
    report = result.report
    if args.profile_out and result.profile_file:
        Path(args.profile_out).write_bytes(result.profile_file)
    if args.json == "-":
        json.dump(report.to_json(), sys.stdout, indent=1)
        print()
        return 0
    print(f"{report.task} on {report.device}: {verdict_word(report.verdict, report.mode)}")
    for code, reason in zip(report.reason_codes, report.reasons):
        print(f"  - [{code}] {reason}")
    if report.speedup_vs_compile is not None:
        print(f"  speedup: {report.speedup_vs_compile:.3f}x vs torch.compile, "
              f"{report.speedup_vs_eager:.3f}x vs eager")
    if report.profile:
        print("\n".join(profile_summary(report.profile)))
    box = report.box
    which = " ".join(str(v) for v in (box.backend, box.version, box.image) if v) if box else ""
    print(f"  sandbox: {which or result.backend}, {result.wall_s:.2f} s wall, {result.overhead_s:.2f} s overhead")
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_json(), indent=1))
    return 0


def _build(args) -> int:
    from . import docker_backend

    reason = docker_backend.unavailable_reason()
    if reason:
        raise SandboxError(reason)
    tag = image.build_image(docker_backend.client(), args.tag)
    print(f"built {tag}; use it with SANDBOX_IMAGE={tag}")
    return 0


def _cleanup(args) -> int:
    removed = cleanup.remove_stragglers()
    for kind, items in removed.items():
        print(f"{kind}: {len(items)} removed" + (": " + ", ".join(items) if items else ""))
    return 0


def _check(args) -> int:
    for name, backend in sorted(BACKENDS.items()):
        reason = backend.unavailable_reason()
        print(f"{name}: {'ok' if reason is None else reason}")
    return 0


def _seccomp_build(args) -> int:
    from . import seccomp

    for path in seccomp.build():
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
