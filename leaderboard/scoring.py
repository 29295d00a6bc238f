"""How a result is scored: the floor each benchmark shape is held against, the % of it a result
reaches, the geometric mean over shapes, and the ruler's calibration bound.

Services store these figures and selectors show them per shape; both read them from here so that
a page and the stored score can never disagree.
"""
from __future__ import annotations

import math

# Roofline ceilings. H200: measured device-to-device copy and dense bf16 peak (docs/tasks.md).
# CPU: the judge's own (evaluator.common.timing.CPU_BANDWIDTH, CPU_PEAK_FLOPS; a test keeps them equal),
# deliberately above any CPU: the floor a page shows is the one the judge checked the run against.
CEILINGS = {
    "cuda:NVIDIA H200": {"bandwidth_bytes_s": 4.27e12, "peak_flop_s": 790e12},
    "cpu": {"bandwidth_bytes_s": 1e12, "peak_flop_s": 1e13},
}

# How far from 1.00 a calibration reading may be and still count as calibrated. A GPU ranks, so
# its bound is tight; the CPU is shared, noisy and never ranks, so it gets the evaluator's own
# test bound.
CALIBRATION_TOLERANCE = {"cuda": 0.03, "cpu": 0.15}

# A side whose timed calls spread wider than this (p90 - p10, relative to the median) marks the
# run noisy: on the H200 a quiet run's widest band is about 15 %, a disturbed one's 35-50 %.
NOISY_BAND = 0.25


def device_kind(device_type: str) -> str:
    """What the evaluator is told: "cpu" or "cuda" (of "cpu", "cuda" or "cuda:<GPU name>")."""
    return device_type.split(":", 1)[0]


def geomean(values: list) -> float | None:
    """Geometric mean of the positive finite values; None when there are none."""
    values = [v for v in values if v and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def floor_ms(work: dict, ceilings: dict) -> float | None:
    """The roofline floor of one shape: its bytes over the bandwidth or its operations over the
    peak, whichever is longer; None when the work is not known."""
    try:
        memory_s = float(work["bytes"]) / ceilings["bandwidth_bytes_s"]
        compute_s = float(work["flops"]) / ceilings["peak_flop_s"]
    except (KeyError, TypeError, ValueError):
        return None
    floor = max(memory_s, compute_s) * 1e3
    return floor if math.isfinite(floor) and floor > 0 else None


def shape_floors(shapes: list, work: list, ceilings: dict) -> list[dict]:
    """[{"shape", "floor_ms"}] of a task's benchmark shapes under one device type's ceilings, from
    the work the evaluator stated for each (python -m evaluator describe: flops and bytes, a list
    parallel to the shapes). A shape without its work gets no floor."""
    work = list(work or [])
    return [{"shape": dict(shape), "floor_ms": floor_ms(work[i], ceilings) if i < len(work) else None}
            for i, shape in enumerate(shapes)]


def floor_ms_for(*, task, device_type: str, shape: dict, report_floor_ms=None) -> float | None:
    """The published floor for this shape on this device type, else the evaluator's own figure."""
    for entry in task.floors_for(device_type):
        if entry.get("shape") == shape:
            return entry.get("floor_ms")
    return report_floor_ms


def pct_of_floor(floor_ms, candidate_ms) -> float | None:
    """floor / candidate median * 100: 100 is a kernel at the physical floor."""
    return floor_ms / candidate_ms * 100 if floor_ms and candidate_ms and candidate_ms > 0 else None


def pct_of_floor_by_shape(*, task, device_type: str, shapes: list[dict]) -> list[float | None]:
    """pct_of_floor per benchmark shape row of a report."""
    return [
        pct_of_floor(floor_ms_for(task=task, device_type=device_type, shape=row.get("shape"),
                                  report_floor_ms=row.get("floor_ms")), row.get("candidate_ms"))
        for row in shapes
    ]


def widest_band(row: dict) -> float | None:
    """The widest (p90 - p10) / median over candidate, eager and compile of one shape row; None
    for reports that carry no percentiles."""
    bands = []
    for side in ("candidate", "eager", "compile"):
        lo, mid, hi = (row.get(f"{side}_p10_ms"), row.get(f"{side}_ms"), row.get(f"{side}_p90_ms"))
        if lo is not None and hi is not None and mid:
            bands.append((hi - lo) / mid)
    return max(bands) if bands else None


def shape_is_noisy(row: dict) -> bool:
    """The result page's rule for one benchmark shape: a side's timed calls spread wider than
    NOISY_BAND. A run is noisy when any of its shapes is."""
    band = widest_band(row)
    return band is not None and band > NOISY_BAND


def board_time(shapes) -> dict:
    """What a board shows of an entry's times, from its report's benchmark rows: `median_ms`, the
    kernel's median time at the benchmark shape (the geometric mean over the shapes when there
    are several; None without times), and `noisy`, the result page's rule (shape_is_noisy)."""
    rows = [r for r in shapes or [] if isinstance(r, dict)]
    times = [r.get("candidate_ms") for r in rows]
    # one shape: its own median, not exp(log(x)) a rounding away from it
    median = times[0] if len(times) == 1 and geomean(times) is not None else geomean(times)
    return {"median_ms": median, "noisy": any(shape_is_noisy(r) for r in rows)}


def calibration_ok(*, device_type: str, reference_vs_eager, compile_vs_compile) -> bool:
    """Both ruler readings are finite numbers within the device kind's bound of 1.00."""
    tol = CALIBRATION_TOLERANCE[device_kind(device_type)]
    return all(isinstance(v, (int, float)) and math.isfinite(v) and abs(v - 1.0) <= tol
               for v in (reference_vs_eager, compile_vs_compile))


# ---- ties with torch.compile ---------------------------------------------------------------------

# How many standard errors of the per-round spread the interval spans each side (about 95 %).
TIE_SPREAD_Z = 2.0
# Floating-point slack at the interval's ends: a speedup exactly at the band's edge is a tie.
TIE_EDGE = 1e-9
VS_COMPILE = ("faster", "tie", "slower")


def calibration_band(*, device_type: str, calibration: dict | None) -> dict:
    """How far the ruler reads off 1.00 on this device type, for the tie rule: {"band", "source"}.
    A task calibrated on exactly this device type (both readings within CALIBRATION_TOLERANCE,
    `ok`) has its measured |compile_vs_compile - 1|: torch.compile timed against itself is the
    same comparison a score makes, so that reading is the ruler's own error there
    ("calibration"). Otherwise, uncalibrated, failed or never measured, the device kind's
    CALIBRATION_TOLERANCE, the error the pages already say such speedups carry ("tolerance")."""
    entry = calibration or {}
    reading = entry.get("compile_vs_compile")
    if entry.get("ok") and isinstance(reading, (int, float)) and math.isfinite(reading):
        return {"band": abs(reading - 1.0), "source": "calibration"}
    return {"band": CALIBRATION_TOLERANCE[device_kind(device_type)], "source": "tolerance"}


def speedup_rel_se(shapes) -> float | None:
    """The relative standard error of the overall speedup over torch.compile, from each benchmark
    shape's `speedup_vs_compile_rel_se` (the judge's spread of its per-round ratios). The score is
    the geometric mean of the n shapes' speedups, so its log is their logs' mean, whose error is
    sqrt(sum se_i^2) / n for shapes timed independently. None when any shape lacks a spread (an
    older report, a shape of one round): the interval is then the band alone."""
    rows = [r for r in shapes or [] if isinstance(r, dict)]
    ses = [r.get("speedup_vs_compile_rel_se") for r in rows]
    if not ses or any(not isinstance(se, (int, float)) or not math.isfinite(se) or se < 0 for se in ses):
        return None
    return math.sqrt(sum(se * se for se in ses)) / len(ses)


def vs_compile(*, speedup, shapes, band: float) -> dict | None:
    """Whether a result beats torch.compile, ties with it or loses, by the ruler's own noise.

    The interval is speedup ± (band + TIE_SPREAD_Z * speedup * rel_se): `band` is the ruler's
    error on this device type (calibration_band), which no number of rounds removes; rel_se is the
    evaluation's own round-to-round spread (speedup_rel_se), left out when the report has none. A
    result whose interval contains 1.00, ends included, is a "tie"; above it "faster", below it
    "slower". Returns {"vs_compile", "low", "high", "half_width", "rel_se"}, or None for a result
    without a speedup."""
    if not isinstance(speedup, (int, float)) or not math.isfinite(speedup) or speedup <= 0:
        return None
    rel_se = speedup_rel_se(shapes)
    half = band + (TIE_SPREAD_Z * speedup * rel_se if rel_se is not None else 0.0)
    low, high = max(speedup - half, 0.0), speedup + half
    if low > 1.0 + TIE_EDGE:
        word = "faster"
    elif high < 1.0 - TIE_EDGE:
        word = "slower"
    else:
        word = "tie"
    return {"vs_compile": word, "low": low, "high": high, "half_width": half, "rel_se": rel_se}


def board_speedup(speedup, word: str | None):
    """What a board orders by: a tie ranks at 1.00 (its own speedup is no evidence of a win or a
    loss), every other result at its speedup."""
    return 1.0 if word == "tie" else speedup


def tie_fields(*, speedup, shapes, device_type: str, calibration: dict | None) -> dict:
    """The Submission fields of the tie rule for a scored result (vs_compile, vs_compile_low,
    vs_compile_high, board_speedup), from its speedup, its report's benchmark rows and its task's
    calibration entry on its device type; the empty values for a result without a speedup."""
    band = calibration_band(device_type=device_type, calibration=calibration)["band"]
    found = vs_compile(speedup=speedup, shapes=shapes, band=band)
    if found is None:
        return {"vs_compile": "", "vs_compile_low": None, "vs_compile_high": None, "board_speedup": None}
    return {"vs_compile": found["vs_compile"], "vs_compile_low": found["low"], "vs_compile_high": found["high"],
            "board_speedup": board_speedup(speedup, found["vs_compile"])}
