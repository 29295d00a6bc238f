"""Profile mode's part of the report: what a profiler saw, parsed and validated.

Standard library only: the sandbox and the site validate reports without torch. Every row here
comes from the submission's own process, or from a tool that ran beside it as its user
(docs/profile.md): it is the submission's claim, shown to its owner, size-limited, never scored.
Only `shape`, `floor_ms`, `bytes_moved` and `flops` are the judge's own figures.
"""
from __future__ import annotations

import csv
import math

from evaluator.contract.fields import ReportError, _dict, _list, _number, _shape, _text

TOOLS = ("ncu", "torch.profiler")
# what became of Nsight Compute on a GPU (null on the CPU, where it never runs)
NCU_STATUSES = ("ok", "not_found", "no_permission", "failed")
MAX_KERNELS = 16  # also ncu's --launch-count
MAX_SECTIONS = 8
MAX_METRICS = 48
MAX_RULES = 8
MAX_OPS = 60
MAX_TABLE = 24_000
MAX_NOTES = 8
# the .ncu-rep brought out of the box; a few launches with two sections take far less
MAX_FILE_BYTES = 32 * 1024 * 1024
# ncu's time units (auto-scaled when printed), in milliseconds
TIME_UNITS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0,
              "second": 1e3, "s": 1e3}
DURATION_METRICS = ("Duration", "gpu__time_duration.sum")


def number(value: str) -> float | None:
    """A value as ncu prints it ("1,234.5", "n/a") as a float, or None."""
    try:
        x = float(value.replace(",", "").strip())
    except (ValueError, AttributeError):
        return None
    return x if math.isfinite(x) else None


def duration_ms(value: str, unit: str) -> float | None:
    x = number(value)
    scale = TIME_UNITS.get((unit or "").strip())
    return None if x is None or scale is None or x < 0 else x * scale


def parse_ncu_csv(text: str) -> list[dict]:
    """The kernels of `ncu --import FILE --csv --page details`: one dict per profiled launch with
    its sections in order, each holding its metrics as printed, and the rules' advice."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    kernels: dict[str, dict] = {}
    for row in csv.DictReader(lines[start:]):
        launch, name = row.get("ID") or "", row.get("Kernel Name") or ""
        if not launch.isdigit() or not name:
            continue
        if launch not in kernels:
            if len(kernels) >= MAX_KERNELS:
                continue
            kernels[launch] = {"id": int(launch), "name": name[:300], "block": (row.get("Block Size") or "")[:64],
                               "grid": (row.get("Grid Size") or "")[:64], "duration_ms": None,
                               "sections": [], "rules": []}
        _add_row(kernels[launch], row)
    return list(kernels.values())


def _add_row(kernel: dict, row: dict) -> None:
    rule, advice = row.get("Rule Name") or "", row.get("Rule Description") or ""
    if rule and advice and len(kernel["rules"]) < MAX_RULES and \
            all(r["name"] != rule[:100] for r in kernel["rules"]):
        kernel["rules"].append({"name": rule[:100], "type": (row.get("Rule Type") or "")[:32],
                                "text": advice[:1000]})
    metric = row.get("Metric Name") or ""
    if not metric:
        return
    title = (row.get("Section Name") or "")[:100]
    section = next((s for s in kernel["sections"] if s["name"] == title), None)
    if section is None:
        if len(kernel["sections"]) >= MAX_SECTIONS:
            return
        section = {"name": title, "metrics": []}
        kernel["sections"].append(section)
    if len(section["metrics"]) >= MAX_METRICS:
        return
    unit, value = (row.get("Metric Unit") or "")[:32], (row.get("Metric Value") or "")[:64]
    section["metrics"].append({"name": metric[:100], "unit": unit, "value": value})
    if metric in DURATION_METRICS and kernel["duration_ms"] is None:
        kernel["duration_ms"] = duration_ms(value, unit)


def ncu_problem(output: str) -> tuple[str, str]:
    """(status, why) from what ncu printed when it profiled nothing."""
    errors = [line.strip() for line in output.splitlines() if line.startswith("==ERROR==")]
    if "ERR_NVGPUCTRPERM" in output:
        line = next((e for e in errors if "ERR_NVGPUCTRPERM" in e), "ERR_NVGPUCTRPERM")
        return "no_permission", line[:1000]
    if errors:
        return "failed", "; ".join(dict.fromkeys(errors))[:1000]
    if "No kernels were profiled" in output:
        return "failed", "ncu profiled no kernel launch in the profiled call"
    tail = " / ".join(line.strip() for line in output.strip().splitlines()[-3:])
    return "failed", (f"ncu gave no profile: {tail}" if tail else "ncu gave no profile")[:1000]


# ---- validation of the report's `profile` ------------------------------------------------------

def validate(obj) -> dict:
    """A normalised copy of a report's `profile`, or ValueError (report.ReportError)."""
    _dict(obj, "profile", 16)
    known = {"tool", "shape", "floor_ms", "bytes_moved", "flops", "ncu", "kernels", "ops", "table",
             "file_bytes", "seconds", "notes"}
    if set(obj) - known:
        raise ReportError(f"profile: unknown keys {sorted(set(obj) - known)}")
    out = {"tool": _choice(obj.get("tool"), TOOLS, "profile.tool"),
           "shape": _shape(obj.get("shape", {}), "profile.shape")}
    for key in ("floor_ms", "bytes_moved", "flops"):
        out[key] = _number(obj.get(key), f"profile.{key}", high=1e18)
    out["file_bytes"] = int(_number(obj.get("file_bytes", 0), "profile.file_bytes", nullable=False,
                                    high=MAX_FILE_BYTES))
    out["seconds"] = _number(obj.get("seconds", 0.0), "profile.seconds", nullable=False, high=1e5)
    ncu = obj.get("ncu")
    out["ncu"] = None if ncu is None else {
        "status": _choice(_dict(ncu, "profile.ncu", 4).get("status"), NCU_STATUSES, "profile.ncu.status"),
        "note": _text(ncu.get("note", ""), "profile.ncu.note", 1000)}
    out["kernels"] = [_kernel(k, f"profile.kernels[{i}]")
                      for i, k in enumerate(_list(obj.get("kernels", []), "profile.kernels", MAX_KERNELS))]
    out["ops"] = [_op(o, f"profile.ops[{i}]") for i, o in enumerate(_list(obj.get("ops", []), "profile.ops", MAX_OPS))]
    out["table"] = _text(obj.get("table", ""), "profile.table", MAX_TABLE)
    out["notes"] = [_text(n, "profile.notes[]", 1000) for n in _list(obj.get("notes", []), "profile.notes", MAX_NOTES)]
    return out


def _choice(value, allowed, where):
    if value not in allowed:
        raise ReportError(f"{where}: must be one of {allowed}")
    return value


def _kernel(obj, where) -> dict:
    _dict(obj, where, 8)
    sections = []
    for s in _list(obj.get("sections", []), f"{where}.sections", MAX_SECTIONS):
        _dict(s, f"{where}.sections[]", 2)
        metrics = [{"name": _text(_dict(m, f"{where}.metric", 3).get("name", ""), f"{where}.metric.name", 100),
                    "unit": _text(m.get("unit", ""), f"{where}.metric.unit", 32),
                    "value": _text(m.get("value", ""), f"{where}.metric.value", 64)}
                   for m in _list(s.get("metrics", []), f"{where}.metrics", MAX_METRICS)]
        sections.append({"name": _text(s.get("name", ""), f"{where}.section.name", 100), "metrics": metrics})
    rules = [{"name": _text(_dict(r, f"{where}.rule", 3).get("name", ""), f"{where}.rule.name", 100),
              "type": _text(r.get("type", ""), f"{where}.rule.type", 32),
              "text": _text(r.get("text", ""), f"{where}.rule.text", 1000)}
             for r in _list(obj.get("rules", []), f"{where}.rules", MAX_RULES)]
    launch = obj.get("id", 0)
    if isinstance(launch, bool) or not isinstance(launch, int) or not 0 <= launch < 1 << 31:
        raise ReportError(f"{where}.id: must be a launch number")
    return {"id": launch, "name": _text(obj.get("name", ""), f"{where}.name", 300),
            "block": _text(obj.get("block", ""), f"{where}.block", 64),
            "grid": _text(obj.get("grid", ""), f"{where}.grid", 64),
            "duration_ms": _number(obj.get("duration_ms"), f"{where}.duration_ms"),
            "sections": sections, "rules": rules}


OP_NUMBERS = ("self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us")


def _op(obj, where) -> dict:
    _dict(obj, where, 8)
    if obj.get("kind") not in ("op", "kernel"):
        raise ReportError(f"{where}.kind: must be 'op' or 'kernel'")
    out = {"name": _text(obj.get("name", ""), f"{where}.name", 300), "kind": obj["kind"],
           "calls": int(_number(obj.get("calls", 0), f"{where}.calls", nullable=False, high=1e9))}
    for key in OP_NUMBERS:
        out[key] = _number(obj.get(key), f"{where}.{key}")
    return out


# ---- in words, for the command lines ------------------------------------------------------------

SOL_HEADLINES = ("Duration", "DRAM Throughput", "Memory Throughput", "Compute (SM) Throughput")


def summary_lines(profile: dict, rows: int = 10) -> list[str]:
    """A validated profile as a few lines of text (`python -m evaluator run`, the site's CLI)."""
    shape = ", ".join(f"{k}={v}" for k, v in (profile.get("shape") or {}).items())
    floor = profile.get("floor_ms")
    lines = [f"profile of {{{shape}}} with {profile['tool']}"
             + (f"; roofline floor {floor:.4g} ms" if floor else "")]
    ncu = profile.get("ncu")
    if ncu and ncu["status"] != "ok":
        lines.append(f"  ncu: {ncu['status']}: {ncu['note']}")
    for k in profile.get("kernels") or []:
        figures = []
        for section in k["sections"]:
            figures += [f"{m['name']} {m['value']} {m['unit']}".strip() for m in section["metrics"]
                        if m["name"] in SOL_HEADLINES and section["name"].startswith("GPU Speed Of Light")]
        share = f" (floor {floor / k['duration_ms'] * 100:.0f}% of it)" if floor and k.get("duration_ms") else ""
        lines.append(f"  kernel {k['name'][:60]} grid {k['grid']} block {k['block']}{share}: " + "; ".join(figures))
    ops = profile.get("ops") or []
    if ops:
        device = any(op["self_device_us"] is not None for op in ops)
        lines.append(f"  {'name':<44}{'calls':>7}{'self CPU us':>13}" + (f"{'self device us':>16}" if device else ""))
        for op in ops[:rows]:
            lines.append(f"  {op['name'][:44]:<44}{op['calls']:>7}{op['self_cpu_us'] or 0:>13.1f}"
                         + (f"{op['self_device_us'] or 0:>16.1f}" if device else ""))
    lines += [f"  note: {n}" for n in profile.get("notes") or []]
    return lines
