"""The report (schema 1): reason codes, the verdict rule, and validation of untrusted reports.

Standard library only: the sandbox and the site import this without torch. `validate` is what the
trusted side calls on a report file written inside the box; it returns a normalised copy (every
key present) or raises ReportError.
"""
from __future__ import annotations

import math

from evaluator.contract.fields import (ReportError, _dict, _fail, _flat, _list, _number, _shape,  # noqa: F401
                                       _text)
from evaluator.contract import gpu_state, profile_report
from evaluator.contract.fields import MAX_TEXT  # noqa: F401  (the report's own limit on a text)

SCHEMA = 1
VERDICTS = ("verified", "flagged", "rejected")
# profile: the test-mode checks, then the kernel under a profiler for its owner (profile.py)
MODES = ("test", "ranked", "profile")
DEVICES = ("cpu", "cuda")

# a rejected report failed a check; a flagged one passed every check but looks suspicious
REJECT_CODES = (
    "bad_upload", "no_custom_kernel", "import_error", "crash", "timeout", "out_of_memory",
    "needs_gpu", "protocol", "wrong_type", "wrong_dtype", "wrong_shape", "wrong_device", "mismatch",
    "nonfinite", "aliases_input", "aliases_output", "input_modified", "deferred_write",
    "nondeterministic", "sandbox", "params_mismatch",
)
FLAG_CODES = (
    "below_floor", "clock_disagreement", "too_fast_vs_compile", "suspicious_source",
    "no_kernel_launched", "extra_threads", "sanitizer", "gpu_throttled",
)
CODES = REJECT_CODES + FLAG_CODES

MAX_LOGS = 70_000  # 64 KiB of runner output plus headers
MAX_REASONS = 64
MAX_SHAPES = 64
MAX_TESTS = 256
MAX_KERNELS = 64


def verdict_for(codes) -> str:
    codes = list(codes)
    if any(c in REJECT_CODES for c in codes):
        return "rejected"
    if codes:
        return "flagged"
    return "verified"


def empty(*, task: str, mode: str, device: str) -> dict:
    return {
        "schema": SCHEMA,
        "verdict": "verified",
        "reasons": [],
        "reason_codes": [],
        "task": task,
        "mode": mode,
        "device": device,
        "gpu_name": None,
        # GPU: how many devices the judge's process could see (1 in a worker's box: each box is
        # given its own GPU's device file only); null on the CPU and in older reports
        "gpus_visible": None,
        # GPU: which one, by the host's index (the box's EVALUATOR_HOST_GPU; null outside a box)
        # and by its UUID as nvidia-smi writes it; null on the CPU and in older reports
        "gpu_index": None,
        "gpu_uuid": None,
        "timing_gate": "",
        "compile_cache": "",
        "versions": {},
        "speedup_vs_compile": None,
        "speedup_vs_eager": None,
        "shapes": [],
        "tests": [],
        # sandbox_s: the sandbox's own time around the evaluation (create, start, exit, read the
        # report, remove), filled in by sandbox.evaluate; 0 for an evaluation run without one
        # compile_wait_s: how long the correctness phase waited for a compile run beside it
        # (baseline_compile.Overlap); 0 when the compile ran alone before it
        # setup_s: from the judge's start of the evaluation to its first wait for the runner (the
        # upload check, caches, ceilings, starting the processes); close_s: ending them again
        "phases": {"setup_s": 0.0, "startup_s": 0.0, "compile_s": 0.0, "compile_wait_s": 0.0,
                   "correctness_s": 0.0, "timing_s": 0.0, "sanitizer_s": 0.0, "profile_s": 0.0,
                   "close_s": 0.0, "sandbox_s": 0.0},
        "kernels_launched": [],
        "sanitizer": [],
        "logs": "",
        "isolation": {},
        "ceilings": None,
        # profile mode only: what the profiler saw (profile_report.py); the submission's claim
        "profile": None,
        # ranked on the GPU with NVML: the GPU's clocks, temperature and power before and after
        # the timing phase (gpustate.py); older reports lack it
        "gpu_state": None,
        # the judge's readings behind its GPU-only rules, for the operator and the replay tests
        # (tests/data/gpu_records): the runner's thread counts (threads_base, then the largest
        # count after the import, during correctness, during timing, after timing) and the busy
        # probe after the re-check (timing.Probe: probe_reference_ms, probe_stopped_ms,
        # probe_confirmed_ms, probe_slowdown); older reports lack it
        "readings": {},
        # which box ran the evaluation, written by the sandbox on the host after the box exited
        # (sandbox.evaluate), never by anything inside it: backend ("bubblewrap" or "docker"),
        # its version, the image; null for an evaluation run without a sandbox and in older reports
        "box": None,
    }


# ---- validation of untrusted reports ---------------------------------------------------------

def time_split(phases: dict) -> str:
    """One line of where the evaluation's time went, to two significant digits as the result page
    writes it: "startup 0.0021 s, compile 13 s, ..."."""
    from evaluator.contract.words import significant

    return ", ".join(f"{k.removesuffix('_s')} {significant(v, 2)} s" for k, v in phases.items())


SHAPE_NUMBERS = ("candidate_ms", "eager_ms", "compile_ms", "wall_ms", "floor_ms",
                 "speedup_vs_compile", "speedup_vs_eager")
# how the timed calls were spread around each median (10th and 90th percentile): a noisy run shows
SHAPE_SPREAD = tuple(f"{side}_{q}_ms" for side in ("candidate", "eager", "compile") for q in ("p10", "p90"))
# optional as well: how the shape was timed (batch.py): calls per batch, batches per side, the
# fixed overhead of a batch taken off the candidate's windows (ms per batch), and the timed rounds
# left out of the score because they ran beside other work on the GPU (touched.py). The judge writes no
# after_stream_ms; stored reports of the per-call clock carry it, and the site still shows them.
# How sure the shape's speedup over torch.compile is (timed.ratio_rel_se): the relative standard
# error of the median of its per-round ratios (null from fewer than two rounds), and how many
# rounds gave a ratio. Optional: older stored reports lack them, and the site's tie rule then
# uses the ruler's band alone (leaderboard/scoring.py, vs_compile).
SHAPE_SPEEDUP_SPREAD = ("speedup_vs_compile_rel_se", "speedup_rounds")
SHAPE_OPTIONAL = SHAPE_SPREAD + SHAPE_SPEEDUP_SPREAD + (
    "calls_per_batch", "batches", "overhead_ms", "rounds_left_out", "after_stream_ms")
# a relative standard error above this is no reading of a speedup (a ratio's own spread of 100x)
MAX_REL_SE = 100.0


def validate(obj) -> dict:
    """A normalised copy of an untrusted report, or ReportError."""
    out = _header(obj)
    _outcome(obj, out)
    _context(obj, out)
    out["shapes"] = [_shape_row(row, f"shapes[{i}]")
                     for i, row in enumerate(_list(obj.get("shapes", []), "shapes", MAX_SHAPES))]
    out["tests"] = [_test_row(row, f"tests[{i}]")
                    for i, row in enumerate(_list(obj.get("tests", []), "tests", MAX_TESTS))]
    phases = _dict(obj.get("phases", {}), "phases", 16)
    for key in phases:
        if key not in out["phases"]:
            _fail("phases", f"unknown phase {key!r}")
        out["phases"][key] = _number(phases[key], f"phases.{key}", nullable=False, high=1e6)
    kernels = _list(obj.get("kernels_launched", []), "kernels_launched", MAX_KERNELS)
    out["kernels_launched"] = [_text(k, "kernels_launched[]", 256) for k in kernels]
    out["logs"] = _text(obj.get("logs", ""), "logs", MAX_LOGS)
    out["sanitizer"] = [_sanitizer_row(r) for r in _list(obj.get("sanitizer", []), "sanitizer", 4)]
    out["profile"] = _profile(obj.get("profile"), out["mode"])
    out["gpu_state"] = _gpu_state(obj.get("gpu_state"), out["device"])
    out["readings"] = _flat(obj.get("readings", {}), "readings")
    return out


def _gpu_state(state, device: str) -> dict | None:
    """The GPU's readings around the timing phase (gpustate.py); only a GPU report has them."""
    if state is None:
        return None
    if device != "cuda":
        _fail("gpu_state", "only a GPU report has one")
    return gpu_state.validate(state)


def _profile(profile, mode: str) -> dict | None:
    """Profile mode only: what the profiler saw, the submission's claim (profile_report.py)."""
    if profile is None:
        return None
    if mode != "profile":
        _fail("profile", "only a profile-mode report has one")
    return profile_report.validate(profile)


def _header(obj) -> dict:
    """The keys every report has (schema, task, mode, device): an empty report to fill."""
    _dict(obj, "report", 64)
    known = set(empty(task="", mode="test", device="cpu"))
    extra = set(obj) - known
    if extra:
        _fail("report", f"unknown keys {sorted(extra)}")
    for key in ("schema", "verdict", "reasons", "reason_codes", "task", "mode", "device"):
        if key not in obj:
            _fail("report", f"missing {key}")
    if obj["schema"] != SCHEMA or isinstance(obj["schema"], bool):
        _fail("schema", f"must be {SCHEMA}")
    out = empty(task=_text(obj["task"], "task", 64), mode=obj["mode"], device=obj["device"])
    if obj["verdict"] not in VERDICTS:
        _fail("verdict", f"must be one of {VERDICTS}")
    if obj["mode"] not in MODES:
        _fail("mode", f"must be one of {MODES}")
    if obj["device"] not in DEVICES:
        _fail("device", f"must be one of {DEVICES}")
    return out


def _outcome(obj, out: dict) -> None:
    """Reasons, codes and the verdict, which must follow from the codes; the overall speedups,
    which only a ranked report that is not rejected has."""
    reasons = [_text(r, "reasons[]") for r in _list(obj["reasons"], "reasons", MAX_REASONS)]
    codes = _list(obj["reason_codes"], "reason_codes", MAX_REASONS)
    for code in codes:
        if code not in CODES:
            _fail("reason_codes", f"unknown code {code!r}")
    if len(codes) != len(reasons):
        _fail("reason_codes", "must have one code per reason")
    if obj["verdict"] != verdict_for(codes):
        _fail("verdict", f"{obj['verdict']!r} does not follow from the reason codes")
    out.update(verdict=obj["verdict"], reasons=reasons, reason_codes=list(codes))
    for key in ("speedup_vs_compile", "speedup_vs_eager"):
        out[key] = _number(obj.get(key), key)
        if out[key] is not None and (out["verdict"] == "rejected" or out["mode"] != "ranked"):
            _fail(key, "must be null when rejected or not ranked")


def _context(obj, out: dict) -> None:
    """Where and how the evaluation ran: device name, timing and cache notes, versions, isolation,
    the device's ceilings."""
    out["gpu_name"] = _text(obj.get("gpu_name"), "gpu_name", 256, nullable=True)
    visible = obj.get("gpus_visible")
    if visible is not None and (isinstance(visible, bool) or not isinstance(visible, int) or not 0 <= visible <= 1024):
        _fail("gpus_visible", "must be a small non-negative integer or null")
    out["gpus_visible"] = visible
    index = obj.get("gpu_index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 1024):
        _fail("gpu_index", "must be a small non-negative integer or null")
    out["gpu_index"] = index
    out["gpu_uuid"] = _text(obj.get("gpu_uuid"), "gpu_uuid", 64, nullable=True)
    out["timing_gate"] = _text(obj.get("timing_gate", ""), "timing_gate", 256)
    out["compile_cache"] = _text(obj.get("compile_cache", ""), "compile_cache", 256)
    out["versions"] = _flat(obj.get("versions", {}), "versions")
    out["isolation"] = _flat(obj.get("isolation", {}), "isolation")
    box = obj.get("box")
    out["box"] = None if box is None else _flat(box, "box", 8)
    ceilings = obj.get("ceilings")
    out["ceilings"] = None if ceilings is None else _flat(ceilings, "ceilings")


def _shape_row(row, where: str) -> dict:
    _dict(row, where, 24)
    if set(row) - {"shape", *SHAPE_NUMBERS, *SHAPE_OPTIONAL}:
        _fail(where, "unknown keys")
    clean = {"shape": _shape(row.get("shape", {}), f"{where}.shape")}
    for key in SHAPE_NUMBERS:
        clean[key] = _number(row.get(key), f"{where}.{key}")
    for key in SHAPE_OPTIONAL:
        if key in row:
            clean[key] = _number(row[key], f"{where}.{key}")
    if clean.get("speedup_vs_compile_rel_se") is not None and clean["speedup_vs_compile_rel_se"] > MAX_REL_SE:
        _fail(f"{where}.speedup_vs_compile_rel_se", f"must be at most {MAX_REL_SE:g}")
    rounds = row.get("speedup_rounds")
    if rounds is not None and (isinstance(rounds, bool) or not isinstance(rounds, int) or rounds > 100_000):
        _fail(f"{where}.speedup_rounds", "must be a small non-negative integer or null")
    if rounds is not None:
        clean["speedup_rounds"] = rounds
    return clean


def _test_row(row, where: str) -> dict:
    _dict(row, where, 8)
    if set(row) - {"shape", "passed", "max_abs_err", "message", "family", "hidden"}:
        _fail(where, "unknown keys")
    family = row.get("family")
    if family is not None and not (isinstance(family, str) and 0 < len(family) <= 40
                                   and family.replace("_", "").isalnum()):
        _fail(f"{where}.family", "must be a short name or null")
    if not isinstance(row.get("hidden", False), bool):
        _fail(f"{where}.hidden", "must be a boolean")
    if not isinstance(row.get("passed"), bool):
        _fail(f"{where}.passed", "must be a boolean")
    err = row.get("max_abs_err")
    if err is not None and not (isinstance(err, (int, float)) and not isinstance(err, bool)):
        _fail(f"{where}.max_abs_err", "must be a number or null")
    return {
        "shape": _shape(row.get("shape", {}), f"{where}.shape"),
        "passed": row["passed"],
        # inf / nan errors are written as null
        "max_abs_err": float(err) if err is not None and math.isfinite(float(err)) else None,
        "message": _text(row.get("message", ""), f"{where}.message"),
        # a shape drawn for this evaluation (not one of the task's public ones), and the
        # adversarial input family it was drawn for: written only when set
        **({"hidden": True} if row.get("hidden") else {}),
        **({"family": family} if family else {}),
    }


def _sanitizer_row(r) -> dict:
    r = _dict(r, "sanitizer[]", 8)
    ok = r.get("ok")
    if ok not in (True, False, None):
        _fail("sanitizer[].ok", "must be true, false or null")
    findings = _list(r.get("findings", []), "sanitizer[].findings", 10)
    return {
        "tool": _text(r.get("tool", ""), "sanitizer[].tool", 32), "ok": ok,
        "findings": [_text(f, "sanitizer[].findings[]", 1000) for f in findings],
        "seconds": _number(r.get("seconds", 0.0), "sanitizer[].seconds", nullable=False, high=1e5),
        "note": _text(r.get("note", ""), "sanitizer[].note", 1000),
    }
