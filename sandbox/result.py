"""From what came out of the box to a report: read the judge's file as untrusted data (size-capped,
no symlinks, validated), or write the rejected report for a timeout, an OOM kill or a crash.

Nothing the submission prints is ever parsed: the verdict comes from /out/report.json, which only
the judge can write.
"""
from __future__ import annotations

import json
import os
import stat

from evaluator import DEVICES, MODES  # noqa: F401 - what the box may be asked to run (sandbox/__init__.py)
from evaluator import Report

from .box import Outcome
from .errors import SandboxError

# `python -m evaluator run`'s status when the judge's own side failed (evaluator/cli.py)
JUDGE_FAILED = 3


class ReportError(ValueError):
    pass


def validate(obj) -> Report:
    """The typed report of an untrusted object, by the evaluator's own schema check
    (evaluator.Report.from_untrusted): the one schema there is."""
    from evaluator import ReportError as EvaluatorReportError

    try:
        return Report.from_untrusted(obj)
    except EvaluatorReportError as exc:
        raise ReportError(str(exc)) from exc


def read_report_file(path: str, max_bytes: int) -> bytes | None:
    """The bytes of a regular file, at most max_bytes; None when there is none. Never follows a
    symlink and never blocks on a FIFO, whoever put it there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReportError(f"the report can't be opened: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReportError("the report is not a regular file")
        if info.st_size > max_bytes:
            raise ReportError(f"the report is larger than {max_bytes} bytes")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise ReportError(f"the report is larger than {max_bytes} bytes")
        return b"".join(chunks)
    finally:
        os.close(fd)


def profile_file(report: Report, path: str) -> bytes | None:
    """The .ncu-rep of a profile-mode report whose profile says the judge wrote one: read like the
    report (regular file, no link, size-capped), never parsed here. None otherwise."""
    from evaluator import PROFILE_FILE_MAX_BYTES

    if report.mode != "profile" or not (report.profile or {}).get("file_bytes"):
        return None
    try:
        return read_report_file(path, PROFILE_FILE_MAX_BYTES)
    except ReportError:
        return None


def parse_report(data: bytes) -> Report:
    def no_constants(name):
        raise ReportError(f"the report holds {name}")

    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportError(f"the report is not valid JSON: {exc}") from None
    return validate(obj)


def rejected(*, task: str, mode: str, device: str, reason: str, code: str, logs: str) -> Report:
    from evaluator import empty_report

    report = empty_report(task=task, mode=mode, device=device)
    report.update(verdict="rejected", reasons=[reason], reason_codes=[code], logs=logs[-60_000:])
    return validate(report)


def format_seconds(value: float) -> str:
    return f"{value:g}"


def decide(outcome: Outcome, report_path: str, *, task: str, mode: str, device: str,
           time_limit_s: float, report_bytes: int) -> Report:
    """The report for this run. Timeout and OOM win over whatever the judge wrote: a run that hit
    either is not one whose numbers we keep."""
    def reject(reason, code):
        return rejected(task=task, mode=mode, device=device, reason=reason, code=code, logs=outcome.logs)

    if outcome.timed_out:
        return reject(f"time limit {format_seconds(time_limit_s)} s exceeded", "timeout")
    if outcome.oom_killed:
        return reject("out of memory", "out_of_memory")
    try:
        data = read_report_file(report_path, report_bytes)
        if data is None:
            if outcome.exit_code == 2:
                raise SandboxError(f"the evaluator refused its command line: {outcome.logs[-2000:]}")
            # The judge writes a report whenever the evaluation completes, whatever the submission
            # did (its runner is another user and cannot signal the judge): no report means the
            # judge, its checker or its baseline runner failed, which is ours to retry.
            what = ("the judge failed" if outcome.exit_code == JUDGE_FAILED
                    else f"the judge ended without a report (exit status {outcome.exit_code})")
            raise SandboxError(f"{what}; its output ends:\n{outcome.logs[-6000:]}")
        report = parse_report(data)
    except ReportError as exc:
        return reject(f"the evaluation produced an unusable report: {exc}", "sandbox")
    if (report.task, report.mode, report.device) != (task, mode, device):
        return reject("the report is for another evaluation than the one requested", "sandbox")
    return report
