import copy
import math

import pytest

from evaluator.contract.report import CODES, ReportError, empty, validate, verdict_for


def good():
    r = empty(task="softmax", mode="ranked", device="cuda")
    r.update(gpu_name="NVIDIA H200", versions={"python": "3.12", "torch": "2.11", "triton": "3.6", "cuda": "13.0"},
             speedup_vs_compile=1.07, speedup_vs_eager=1.9,
             shapes=[{"shape": {"M": 8192, "N": 8192}, "candidate_ms": 0.14, "eager_ms": 0.28,
                      "compile_ms": 0.15, "wall_ms": 0.16, "floor_ms": 0.126,
                      "speedup_vs_compile": 1.07, "speedup_vs_eager": 2.0}],
             tests=[{"shape": {"M": 7, "N": 131}, "passed": True, "max_abs_err": 1e-8, "message": ""}],
             kernels_launched=["_softmax_kernel"], logs="hello")
    return r


def test_a_good_report_validates_and_is_normalised():
    out = validate(good())
    assert out == good()
    minimal = {"schema": 1, "verdict": "rejected", "reasons": ["x"], "reason_codes": ["crash"],
               "task": "softmax", "mode": "test", "device": "cpu"}
    out = validate(minimal)
    assert out["shapes"] == [] and out["speedup_vs_compile"] is None and out["logs"] == ""


def broken(**changes):
    r = good()
    for key, value in changes.items():
        r[key] = value
    return r


@pytest.mark.parametrize("report", [
    "not a dict",
    broken(schema=2),
    broken(verdict="great"),
    broken(verdict="verified", reasons=["x"], reason_codes=["mismatch"]),
    broken(verdict="flagged"),
    broken(reasons=["a"], reason_codes=[]),
    broken(verdict="flagged", reasons=["a"], reason_codes=["made_up"]),
    broken(speedup_vs_compile=math.nan),
    broken(speedup_vs_compile=-1.0),
    broken(speedup_vs_compile=True),
    broken(speedup_vs_compile="1.0"),
    broken(verdict="rejected", reasons=["x"], reason_codes=["crash"]),  # speedups when rejected
    broken(mode="test"),  # speedups in test mode
    broken(logs="x" * 100_000),
    broken(task=["softmax"]),
    broken(extra_key=1),
    broken(shapes=[{"shape": {"M": -1}}]),
    broken(shapes=[{"shape": {"M": 1}, "candidate_ms": math.inf}]),
    broken(shapes=[{"shape": {"M": 1}, "forged": 1}]),
    broken(tests=[{"shape": {}, "passed": "yes", "max_abs_err": 0.0, "message": ""}]),
    broken(kernels_launched=["k"] * 1000),
    broken(reasons=["x" * 10_000], reason_codes=["suspicious_source"], verdict="flagged"),
    broken(versions={"torch": {"nested": 1}}),
    broken(phases={"startup_s": 1.0, "hacking_s": 0.0}),
])
def test_malformed_reports_are_refused(report):
    with pytest.raises(ReportError):
        validate(copy.deepcopy(report))


def test_the_verdict_follows_from_the_codes():
    assert verdict_for([]) == "verified"
    assert verdict_for(["below_floor", "suspicious_source"]) == "flagged"
    assert verdict_for(["below_floor", "mismatch"]) == "rejected"
    # the contract's list, exactly
    assert set(CODES) == {
        "bad_upload", "no_custom_kernel", "import_error", "crash", "timeout", "out_of_memory",
        "needs_gpu", "protocol", "wrong_type", "wrong_dtype", "wrong_shape", "wrong_device",
        "mismatch", "nonfinite", "aliases_input", "aliases_output", "input_modified",
        "deferred_write", "nondeterministic", "below_floor", "clock_disagreement",
        "too_fast_vs_compile", "suspicious_source", "no_kernel_launched", "extra_threads", "sandbox",
        "sanitizer", "gpu_throttled", "params_mismatch"}


def test_the_spread_of_timed_calls_is_optional_and_checked():
    r = good()
    r["shapes"][0].update(candidate_p10_ms=0.13, candidate_p90_ms=0.16)
    assert validate(r)["shapes"][0]["candidate_p90_ms"] == 0.16
    r["shapes"][0]["candidate_p90_ms"] = -1.0
    with pytest.raises(ReportError, match="candidate_p90_ms"):
        validate(r)
    r["shapes"][0].pop("candidate_p90_ms")
    r["shapes"][0]["candidate_p50_ms"] = 0.14  # not a known key
    with pytest.raises(ReportError, match="unknown keys"):
        validate(r)


def test_the_count_of_visible_gpus_is_a_small_integer_or_null():
    """A GPU report says how many devices the judge saw (a worker's box shows it one)."""
    assert validate(broken(gpus_visible=1))["gpus_visible"] == 1
    assert validate(good())["gpus_visible"] is None
    for bad in (True, -1, 1.5, "1", 5000):
        with pytest.raises(ReportError, match="gpus_visible"):
            validate(broken(gpus_visible=bad))


def test_the_gpu_is_named_by_host_index_and_uuid_or_null():
    """A GPU report names its GPU: the host's index the box was given and the UUID (issue: two
    GPUs, two workers); a CPU report and an older one say null."""
    named = validate(broken(gpu_index=1, gpu_uuid="GPU-6f1c2d3e-0a1b-4c5d-8e9f-0123456789ab"))
    assert (named["gpu_index"], named["gpu_uuid"]) == (1, "GPU-6f1c2d3e-0a1b-4c5d-8e9f-0123456789ab")
    assert (validate(good())["gpu_index"], validate(good())["gpu_uuid"]) == (None, None)
    for bad in (True, -1, 1.5, "1", 5000):
        with pytest.raises(ReportError, match="gpu_index"):
            validate(broken(gpu_index=bad))
    with pytest.raises(ReportError, match="gpu_uuid"):
        validate(broken(gpu_uuid="G" * 65))


def test_the_spread_of_the_speedup_is_optional_and_checked():
    r = good()
    assert "speedup_vs_compile_rel_se" not in validate(r)["shapes"][0]  # an older report keeps none
    r["shapes"][0].update(speedup_vs_compile_rel_se=0.004, speedup_rounds=12)
    row = validate(r)["shapes"][0]
    assert row["speedup_vs_compile_rel_se"] == 0.004 and row["speedup_rounds"] == 12
    assert isinstance(row["speedup_rounds"], int)
    r["shapes"][0]["speedup_vs_compile_rel_se"] = None  # one round: no spread to give
    assert validate(r)["shapes"][0]["speedup_vs_compile_rel_se"] is None
    for key, value in (("speedup_vs_compile_rel_se", -0.1), ("speedup_vs_compile_rel_se", math.inf),
                       ("speedup_vs_compile_rel_se", 1e6), ("speedup_vs_compile_rel_se", "0.1"),
                       ("speedup_rounds", 2.5), ("speedup_rounds", True), ("speedup_rounds", -1),
                       ("speedup_rounds", 10**9)):
        bad = good()
        bad["shapes"][0][key] = value
        with pytest.raises(ReportError, match=key):
            validate(bad)
