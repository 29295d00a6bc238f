"""The typed report (evaluator/contract/typed_report.py): from_untrusted is report.validate's check
with its errors, to_json gives back exactly the dict validate returns (the stored JSON, the API's
and the export's), and from_stored reads what older versions of the site stored."""
import copy
import dataclasses
import json
import math
from pathlib import Path

import pytest

from evaluator.contract import report as schema
from evaluator.contract.fields import ReportError
from evaluator.contract.typed_report import Report

DATA = Path(__file__).resolve().parents[2] / "data"


def ranked_gpu() -> dict:
    """A ranked GPU report with every part filled: the shape rows' optional figures, hidden tests,
    the sanitizer, the GPU's state, the box, the readings of a real H100 run."""
    honest = json.loads((DATA / "gpu_records" / "h100-site" / "readings.json").read_text())[0]
    r = schema.empty(task="softmax", mode="ranked", device="cuda")
    reading = {"index": 0, "uuid": "GPU-1", "sm_mhz": 1980, "mem_mhz": 2619, "temp_c": 41, "power_w": 120.5,
               "power_limit_w": 700, "reasons": ["none"], "error": ""}
    r.update(
        gpu_name="NVIDIA H100 80GB HBM3", gpus_visible=1, gpu_index=0, gpu_uuid="GPU-1",
        timing_gate="judge's clock", compile_cache="seeded", versions={"python": "3.11.7", "torch": "2.11", "cuda": None},
        speedup_vs_compile=honest["speedup_vs_compile"], speedup_vs_eager=1.9,
        shapes=[{"shape": {"M": 8192, "N": 8192}, "candidate_ms": 0.14, "eager_ms": 0.28, "compile_ms": 0.15,
                 "wall_ms": 0.16, "floor_ms": 0.126, "speedup_vs_compile": 1.07, "speedup_vs_eager": 2.0,
                 "candidate_p10_ms": 0.13, "candidate_p90_ms": 0.15, "speedup_vs_compile_rel_se": 0.004,
                 "speedup_rounds": 12, "calls_per_batch": 64, "rounds_left_out": 0},
                {"shape": {"M": 4, "N": 4}, "candidate_ms": 0.01, "eager_ms": 0.02, "compile_ms": 0.015,
                 "wall_ms": 0.02, "floor_ms": None, "speedup_vs_compile": 1.5, "speedup_vs_eager": 2,
                 "speedup_vs_compile_rel_se": None}],
        tests=[{"shape": {"M": 7, "N": 131}, "passed": True, "max_abs_err": 1e-8, "message": ""},
               {"shape": {"M": 3, "N": 5}, "passed": True, "max_abs_err": 0, "message": "", "hidden": True,
                "family": "large_values"}],
        phases={"setup_s": 1.5, "timing_s": 3, "sandbox_s": 0.25},
        kernels_launched=["_softmax_kernel"], logs="hello",
        sanitizer=[{"tool": "memcheck", "ok": True, "findings": [], "seconds": 2.0, "note": ""}],
        isolation={"separate_user": True, "judge_uid": 1000}, ceilings={"bandwidth_bytes_s": 3.3e12},
        gpu_state={"before": reading, "after": reading}, readings=honest["readings"],
        box={"backend": "bubblewrap", "version": "0.8.0", "image": None, "image_id": None},
    )
    return r


def profiled() -> dict:
    r = schema.empty(task="softmax", mode="profile", device="cpu")
    r["profile"] = {"tool": "torch.profiler", "shape": {"M": 8}, "floor_ms": None, "bytes_moved": 10.0,
                    "flops": None, "ncu": None, "kernels": [],
                    "ops": [{"name": "aten::exp", "kind": "op", "calls": 3, "self_cpu_us": 1.5, "cpu_total_us": 2.0,
                             "self_device_us": None, "device_total_us": None}],
                    "table": "t", "file_bytes": 0, "seconds": 0.5, "notes": ["n"]}
    return r


def rejected() -> dict:
    return {"schema": 1, "verdict": "rejected", "reasons": ["x"], "reason_codes": ["crash"],
            "task": "softmax", "mode": "test", "device": "cpu"}


def evaluator_runs() -> list[dict]:
    """Reports `python -m evaluator run` wrote on the CPU (tests/data/reports)."""
    return [json.loads(p.read_text()) for p in sorted((DATA / "reports").glob("*.json"))]


REPORTS = [ranked_gpu(), profiled(), rejected(), schema.empty(task="t", mode="test", device="cpu"),
           *evaluator_runs()]


@pytest.mark.parametrize("obj", REPORTS)
def test_to_json_gives_back_what_validate_returns_to_the_byte(obj):
    expected = schema.validate(copy.deepcopy(obj))
    typed = Report.from_untrusted(copy.deepcopy(obj))
    assert typed.to_json() == expected
    assert json.dumps(typed.to_json()) == json.dumps(expected)  # key order and int / float kept
    # stored and read back, the value is the same and so is its JSON
    assert Report.from_stored(json.loads(json.dumps(expected))) == typed
    assert json.dumps(Report.from_stored(expected).to_json()) == json.dumps(expected)


def test_the_evaluators_own_reports_are_among_them():
    assert len(evaluator_runs()) >= 2


def test_the_fields_are_report_empty_s_keys_in_its_order():
    names = tuple(f.name for f in dataclasses.fields(Report))
    assert names == tuple(schema.empty(task="t", mode="test", device="cpu"))


def test_typed_fields_read_the_report():
    r = Report.from_untrusted(ranked_gpu())
    assert r.device_type == "cuda:NVIDIA H100 80GB HBM3"
    assert r.shapes[0].candidate_ms == 0.14 and r.shapes[0].speedup_rounds == 12
    assert r.shapes[0].speedup_vs_compile_rel_se == 0.004
    assert r.shapes[1].speedup_rounds is None and "speedup_rounds" not in r.shapes[1].to_json()
    assert r.tests[1].hidden and r.tests[1].family == "large_values" and not r.tests[0].hidden
    assert r.phases.timing_s == 3.0 and r.phases.correctness_s == 0.0
    assert r.box.backend == "bubblewrap" and r.box.image is None
    assert r.sanitizer[0].tool == "memcheck" and r.gpu_state["after"]["sm_mhz"] == 1980
    assert Report.from_untrusted(schema.empty(task="t", mode="test", device="cpu")).device_type == "cpu"


def test_the_value_is_frozen_all_the_way_down():
    r = Report.from_untrusted(ranked_gpu())
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.verdict = "rejected"
    with pytest.raises(TypeError):
        r.readings["threads_base"] = 0
    with pytest.raises(TypeError):
        r.gpu_state["before"]["reasons"] += ("x",)
    with pytest.raises(TypeError):
        r.shapes[0].shape["M"] = 1


def test_absent_optional_shape_figures_stay_absent():
    row = Report.from_untrusted(ranked_gpu()).to_json()["shapes"][1]
    assert set(row) == {"shape", *schema.SHAPE_NUMBERS, "speedup_vs_compile_rel_se"}


def test_the_hosts_additions_make_a_new_value():
    r = Report.from_untrusted(rejected())
    hosted = r.on_host(box={"backend": "docker", "version": "24"}, sandbox_s=1.25)
    assert r.box is None and r.phases.sandbox_s == 0.0
    assert hosted.box.backend == "docker" and hosted.phases.sandbox_s == 1.25
    assert hosted.to_json()["box"] == {"backend": "docker", "version": "24"}


@pytest.mark.parametrize("obj", [
    "not a dict", {**rejected(), "schema": 2}, {**rejected(), "verdict": "verified"},
    {**ranked_gpu(), "logs": "x" * 100_000}, {**ranked_gpu(), "speedup_vs_compile": math.nan},
    {**ranked_gpu(), "shapes": [{"shape": {"M": 1}, "forged": 1}]}, {**rejected(), "extra": 1},
])
def test_from_untrusted_refuses_what_validate_refuses_in_its_words(obj):
    with pytest.raises(ReportError) as validated:
        schema.validate(copy.deepcopy(obj))
    with pytest.raises(ReportError) as typed:
        Report.from_untrusted(copy.deepcopy(obj))
    assert str(typed.value) == str(validated.value)


def test_an_older_stored_report_missing_optional_keys_reads():
    # as the site stored a report before gpus_visible, gpu_index, gpu_uuid, the sanitizer, the
    # profile, gpu_state, readings, box and the later phases were written
    old = {"schema": 1, "verdict": "verified", "reasons": [], "reason_codes": [], "task": "softmax",
           "mode": "ranked", "device": "cpu", "gpu_name": None, "timing_gate": "", "compile_cache": "",
           "versions": {"torch": "2.5"}, "speedup_vs_compile": 1.2, "speedup_vs_eager": 2.0,
           "shapes": [{"shape": {"M": 8}, "candidate_ms": 1.0, "eager_ms": 2.0, "compile_ms": 1.2,
                       "wall_ms": 1.1, "floor_ms": None, "speedup_vs_compile": 1.2, "speedup_vs_eager": 2.0,
                       "after_stream_ms": 0.9}],
           "tests": [{"shape": {"M": 8}, "passed": True, "max_abs_err": 0.0}],
           "phases": {"startup_s": 1.0, "correctness_s": 2.0, "timing_s": 3.0},
           "kernels_launched": [], "logs": "", "isolation": {}, "ceilings": None}
    r = Report.from_stored(old)
    assert r.gpus_visible is None and r.gpu_state is None and r.box is None and r.profile is None
    assert r.readings == {} and r.sanitizer == () and r.phases.setup_s == 0.0 and r.phases.timing_s == 3.0
    assert r.tests[0].message == "" and r.shapes[0].optional == {"after_stream_ms": 0.9}
    assert r.device_type == "cpu" and r.speedup_vs_compile == 1.2
    assert r.to_json()["shapes"] == old["shapes"]
    defaults = schema.empty(task="softmax", mode="ranked", device="cpu")
    assert r.to_json() == {**defaults, **old, "phases": {**defaults["phases"], **old["phases"]},
                           "tests": [{**old["tests"][0], "message": ""}]}


def test_a_damaged_stored_report_shows_what_it_holds():
    damaged = {**rejected(), "shapes": "not a list", "tests": [7, {"shape": {"M": 1}, "passed": False}],
               "phases": {"timing_s": "slow", "setup_s": 1.0, "renamed_s": 2.0}, "versions": None,
               "box": "docker", "logs": None}
    r = Report.from_stored(damaged)
    assert r.shapes == () and len(r.tests) == 1 and r.tests[0].passed is False
    assert r.phases.timing_s == 0.0 and r.phases.setup_s == 1.0
    assert r.versions == {} and r.box is None and r.logs == "" and r.reason_codes == ("crash",)


@pytest.mark.parametrize("stored, words", [
    ([1, 2], "must be an object"), ("report", "must be an object"),
    ({"verdict": "verified"}, "has no task, mode, device"), ({**rejected(), "mode": None}, "has no mode"),
])
def test_a_stored_value_that_is_no_report_is_a_clear_error(stored, words):
    with pytest.raises(ReportError, match=words):
        Report.from_stored(stored)
