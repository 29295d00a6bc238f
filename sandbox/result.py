"""From what came out of the box to a report: read the judge's file as untrusted data (size-capped,
no symlinks, validated), or write the rejected report for a timeout, an OOM kill or a crash.

Nothing the submission prints is ever parsed: the verdict comes from /out/report.json, which only
the judge can write.
"""
from __future__ import annotations

import json
import math
import os
import stat

from .box import Outcome
from .errors import SandboxError

VERDICTS = ("verified", "flagged", "rejected")
MODES = ("test", "ranked")
DEVICES = ("cpu", "cuda")
REASON_CODES = frozenset("""bad_upload no_custom_kernel import_error crash timeout out_of_memory needs_gpu
protocol wrong_type wrong_dtype wrong_shape wrong_device mismatch nonfinite aliases_input aliases_output
input_modified deferred_write nondeterministic below_floor clock_disagreement too_fast_vs_compile
suspicious_source no_kernel_launched extra_threads sandbox""".split())


class ReportError(ValueError):
    pass


def validate(obj) -> dict:
    """evaluator.report.validate when the evaluator provides it, else the strict check below."""
    try:
        from evaluator.report import validate as evaluator_validate
    except ImportError:
        return validate_local(obj)
    try:
        return evaluator_validate(obj)
    except Exception as exc:  # their ReportError, whatever its class
        raise ReportError(str(exc)) from exc


# -- the stand-in validation ---------------------------------------------------------------------
def _str(value, what, limit=2000, null=False):
    if value is None and null:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise ReportError(f"{what} must be a string of at most {limit} characters")
    return value


def _num(value, what, null=True):
    if value is None and null:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ReportError(f"{what} must be a finite non-negative number")
    return float(value)


def _list(value, what, limit):
    if not isinstance(value, list) or len(value) > limit:
        raise ReportError(f"{what} must be a list of at most {limit} items")
    return value


def _shape(value, what):
    if not isinstance(value, dict) or len(value) > 16:
        raise ReportError(f"{what} must be a small object")
    for k, v in value.items():
        _str(k, f"{what} key", 32)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**40:
            raise ReportError(f"{what}[{k}] must be a dimension")
    return dict(value)


def validate_local(obj) -> dict:
    if not isinstance(obj, dict):
        raise ReportError("the report must be a JSON object")
    if obj.get("schema") != 1:
        raise ReportError("unknown report schema")
    out = {"schema": 1}
    if obj.get("verdict") not in VERDICTS:
        raise ReportError("bad verdict")
    out["verdict"] = obj["verdict"]
    out["reasons"] = [_str(r, "reason") for r in _list(obj.get("reasons"), "reasons", 100)]
    codes = [_str(c, "reason code", 64) for c in _list(obj.get("reason_codes"), "reason_codes", 100)]
    if len(codes) != len(out["reasons"]) or any(c not in REASON_CODES for c in codes):
        raise ReportError("reason_codes must be known codes, one per reason")
    out["reason_codes"] = codes
    if out["verdict"] == "rejected" and not codes:
        raise ReportError("a rejected report must say why")
    out["task"] = _str(obj.get("task"), "task", 64)
    if obj.get("mode") not in MODES or obj.get("device") not in DEVICES:
        raise ReportError("bad mode or device")
    out["mode"], out["device"] = obj["mode"], obj["device"]
    out["gpu_name"] = _str(obj.get("gpu_name"), "gpu_name", 200, null=True)
    versions = obj.get("versions", {})
    if not isinstance(versions, dict) or len(versions) > 16:
        raise ReportError("versions must be a small object")
    out["versions"] = {_str(k, "version key", 32): _str(v, "version", 200, null=True)
                       for k, v in versions.items()}
    for key in ("speedup_vs_compile", "speedup_vs_eager"):
        out[key] = _num(obj.get(key), key)
    shapes = []
    for i, item in enumerate(_list(obj.get("shapes", []), "shapes", 64)):
        if not isinstance(item, dict):
            raise ReportError("shapes items must be objects")
        row = {"shape": _shape(item.get("shape"), f"shapes[{i}].shape")}
        for key in ("candidate_ms", "eager_ms", "compile_ms", "wall_ms", "floor_ms",
                    "speedup_vs_compile", "speedup_vs_eager"):
            row[key] = _num(item.get(key), f"shapes[{i}].{key}")
        shapes.append(row)
    out["shapes"] = shapes
    tests = []
    for i, item in enumerate(_list(obj.get("tests", []), "tests", 256)):
        if not isinstance(item, dict) or not isinstance(item.get("passed"), bool):
            raise ReportError(f"tests[{i}] must be an object with passed")
        tests.append({"shape": _shape(item.get("shape", {}), f"tests[{i}].shape"),
                      "passed": item["passed"],
                      "max_abs_err": _num(item.get("max_abs_err"), f"tests[{i}].max_abs_err"),
                      "message": _str(item.get("message", ""), f"tests[{i}].message")})
    out["tests"] = tests
    phases = obj.get("phases", {})
    if not isinstance(phases, dict) or len(phases) > 16:
        raise ReportError("phases must be a small object")
    out["phases"] = {_str(k, "phase", 32): _num(v, f"phases.{k}", null=False) for k, v in phases.items()}
    out["kernels_launched"] = [_str(k, "kernel name", 256)
                               for k in _list(obj.get("kernels_launched", []), "kernels_launched", 256)]
    out["logs"] = _str(obj.get("logs", ""), "logs", 256 * 1024)
    return out


# -- reading and deciding ------------------------------------------------------------------------
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


def parse_report(data: bytes) -> dict:
    def no_constants(name):
        raise ReportError(f"the report holds {name}")

    try:
        obj = json.loads(data.decode("utf-8"), parse_constant=no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ReportError(f"the report is not valid JSON: {exc}") from None
    return validate(obj)


def rejected(*, task: str, mode: str, device: str, reason: str, code: str, logs: str) -> dict:
    report = {
        "schema": 1, "verdict": "rejected", "reasons": [reason], "reason_codes": [code],
        "task": task, "mode": mode, "device": device, "gpu_name": None, "versions": {},
        "speedup_vs_compile": None, "speedup_vs_eager": None, "shapes": [], "tests": [],
        "phases": {}, "kernels_launched": [], "logs": logs,
    }
    return validate(report)


def format_seconds(value: float) -> str:
    return f"{value:g}"


def decide(outcome: Outcome, report_path: str, *, task: str, mode: str, device: str,
           time_limit_s: float, report_bytes: int) -> dict:
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
            return reject(f"the evaluation ended without a report (exit status {outcome.exit_code})", "crash")
        report = parse_report(data)
    except ReportError as exc:
        return reject(f"the evaluation produced an unusable report: {exc}", "sandbox")
    if (report["task"], report["mode"], report["device"]) != (task, mode, device):
        return reject("the report is for another evaluation than the one requested", "sandbox")
    return report
