"""The GPU's state around the timing phase (evaluator/judge/gpustate.py): NVML's answers become a reading,
the throttle decision, the report's `gpu_state` validated, and a throttled run flagged.

NVML needs an NVIDIA driver, which this machine lacks, so the readings are taken through `FakeNvml`:
a stand-in for the pynvml module with the same function names and constants, answering what an
H200 answers. It is used only because the real module cannot read a GPU here; the real module's own
failure without a driver is tested as well."""
import copy

import pytest

from evaluator.judge import gpustate
from evaluator.contract import report
from evaluator.judge import verdict
from evaluator.judge.evaluation import Evaluation
from evaluator.contract.report import ReportError, empty, validate
from evaluator.tasks import get_task

UUID = "9a2c3e55-1b7d-4f0a-8e61-0c5d2f4b7a19"


class NVMLError(Exception):
    pass


class FakeNvml:
    """pynvml's surface as gpustate uses it; `fail` names queries that raise. It records every
    call, so that a test can see no set* function was called."""
    NVMLError = NVMLError
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0

    def __init__(self, *, sm=1980, mem=3201, temp=41, power_mw=118_000, limit_mw=700_000, reasons=0x1,
                 fail=(), uuids=(f"GPU-{UUID}",), older=False):
        self.answers = dict(sm=sm, mem=mem, temp=temp, power_mw=power_mw, limit_mw=limit_mw, reasons=reasons)
        self.fail, self.uuids, self.calls = set(fail), uuids, []
        if not older:
            self.nvmlDeviceGetCurrentClocksEventReasons = self._reasons

    def _call(self, name, value):
        self.calls.append(name)
        if name in self.fail:
            raise NVMLError("Not Supported")
        return value

    def nvmlInit(self):
        return self._call("nvmlInit", None)

    def nvmlShutdown(self):
        return self._call("nvmlShutdown", None)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid not in self.uuids:
            self.calls.append("nvmlDeviceGetHandleByUUID")
            raise NVMLError("Not Found")
        return self._call("nvmlDeviceGetHandleByUUID", "handle-3")

    def nvmlDeviceGetIndex(self, handle):
        return self._call("nvmlDeviceGetIndex", 3)

    def nvmlDeviceGetClockInfo(self, handle, kind):
        return self._call("nvmlDeviceGetClockInfo", self.answers["sm" if kind == 1 else "mem"])

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._call("nvmlDeviceGetTemperature", self.answers["temp"])

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._call("nvmlDeviceGetPowerUsage", self.answers["power_mw"])

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return self._call("nvmlDeviceGetEnforcedPowerLimit", self.answers["limit_mw"])

    def _reasons(self, handle):
        return self._call("nvmlDeviceGetCurrentClocksEventReasons", self.answers["reasons"])

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self._call("nvmlDeviceGetCurrentClocksThrottleReasons", self.answers["reasons"])


def state(before=None, after=None):
    return {"before": before or gpustate.read(FakeNvml(), UUID),
            "after": after or gpustate.read(FakeNvml(reasons=0), UUID)}


# ---- readings ----------------------------------------------------------------------------------

def test_a_reading_names_the_gpu_by_uuid_and_converts_units():
    nv = FakeNvml(reasons=0x4 | 0x20)
    r = gpustate.read(nv, UUID)
    assert r == {"index": 3, "uuid": UUID, "sm_mhz": 1980, "mem_mhz": 3201, "temp_c": 41, "power_w": 118.0,
                 "power_limit_w": 700.0, "reasons": ["sw_power_cap", "sw_thermal"], "error": ""}
    assert nv.calls[0] == "nvmlInit" and nv.calls[-1] == "nvmlShutdown"
    # read-only: nothing but init, shutdown and Get queries
    assert all(c in ("nvmlInit", "nvmlShutdown") or c.startswith("nvmlDeviceGet") for c in nv.calls)


def test_an_older_nvml_module_gives_the_reasons_under_their_older_name():
    r = gpustate.read(FakeNvml(reasons=0x40, older=True), UUID)
    assert r["reasons"] == ["hw_thermal"] and r["error"] == ""


def test_reason_bits_by_name_and_unknown_bits_in_hex():
    assert gpustate.reason_names(0) == []
    assert gpustate.reason_names(0x1 | 0x2 | 0x8 | 0x80) == ["gpu_idle", "applications_clocks_setting",
                                                              "hw_slowdown", "hw_power_brake"]
    assert gpustate.reason_names(0x10 | 0x400) == ["sync_boost", "0x400"]


def test_nvml_errors_become_the_readings_error_and_never_raise():
    r = gpustate.read(FakeNvml(fail={"nvmlInit"}), UUID)
    assert r["error"] == "NVML: Not Supported" and r["sm_mhz"] is None and r["reasons"] == []
    r = gpustate.read(FakeNvml(uuids=()), UUID)
    assert r["error"].startswith(f"NVML: no GPU with UUID {UUID}") and r["index"] is None
    # one query unsupported (power on some boards): the others are still read
    r = gpustate.read(FakeNvml(fail={"nvmlDeviceGetPowerUsage"}), UUID)
    assert r["power_w"] is None and r["sm_mhz"] == 1980 and r["error"] == "power_w: Not Supported"
    assert validate_state({"before": r, "after": r})["before"]["error"] == "power_w: Not Supported"


def test_the_real_nvml_module_without_a_driver_gives_an_unavailable_reading():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    r = gpustate.read(pynvml, UUID)
    assert r["error"].startswith("NVML: ") and r["sm_mhz"] is None and r["uuid"] == UUID


def test_without_nvidia_ml_py_there_is_no_state(monkeypatch):
    monkeypatch.setattr(gpustate, "nvml", lambda: None)
    assert gpustate.reading() is None


# ---- the throttle decision ---------------------------------------------------------------------

def test_a_steady_gpu_is_not_throttled():
    before = gpustate.read(FakeNvml(reasons=0x1), UUID)
    after = gpustate.read(FakeNvml(sm=1965, temp=62, power_mw=540_000, reasons=0), UUID)
    assert gpustate.throttled(before, after) is None
    # clocks an administrator set, and an idle GPU, are the state the GPU is meant to be in
    assert gpustate.throttled(before, gpustate.read(FakeNvml(reasons=0x1 | 0x2), UUID)) is None


@pytest.mark.parametrize("bit,name", [(0x8, "hw_slowdown"), (0x20, "sw_thermal"),
                                      (0x40, "hw_thermal"), (0x80, "hw_power_brake")])
def test_a_throttling_reason_after_timing_is_throttling(bit, name):
    before = gpustate.read(FakeNvml(reasons=0x1), UUID)
    after = gpustate.read(FakeNvml(sm=1410, temp=84, power_mw=690_000, reasons=bit), UUID)
    assert gpustate.throttled(before, after) == ("the GPU throttled during timing: SM 1980->1410 MHz, "
                                                 f"memory 3201->3201 MHz, 84 C, 690 W of 700 W, reasons: {name}")


def test_the_power_cap_alone_flags_nothing_even_with_the_clock_it_costs():
    # what one H200 read under a loop of bf16 matmuls: the cap is its normal regime under heavy
    # compute, and the rounds time the candidate and both baselines under it alike
    before = gpustate.read(FakeNvml(sm=1980, reasons=0), UUID)
    capped = gpustate.read(FakeNvml(sm=1425, temp=70, power_mw=692_000, reasons=0x4), UUID)
    assert gpustate.throttled(before, capped) is None
    assert gpustate.throttled(before, gpustate.read(FakeNvml(sm=1425, reasons=0x4 | 0x20), UUID))


def test_an_sm_clock_drop_on_a_busy_gpu_is_throttling_and_on_an_idle_one_is_not():
    before = gpustate.read(FakeNvml(sm=1980), UUID)
    assert gpustate.throttled(before, gpustate.read(FakeNvml(sm=1790, reasons=0), UUID)) is None  # 9.6 % less
    dropped = gpustate.throttled(before, gpustate.read(FakeNvml(sm=1700, reasons=0), UUID))
    assert dropped and "SM 1980->1700 MHz" in dropped and "reasons: none" in dropped
    assert gpustate.throttled(before, gpustate.read(FakeNvml(sm=345, reasons=0x1), UUID)) is None


def test_missing_readings_decide_nothing():
    unavailable = gpustate.read(FakeNvml(fail={"nvmlInit"}), UUID)
    assert gpustate.throttled(None, None) is None
    assert gpustate.throttled(unavailable, unavailable) is None
    assert gpustate.throttled(unavailable, gpustate.read(FakeNvml(reasons=0x40), UUID)).endswith(
        "SM ?->1980 MHz, memory ?->3201 MHz, 41 C, 118 W of 700 W, reasons: hw_thermal")


# ---- the report --------------------------------------------------------------------------------

def validate_state(s):
    r = empty(task="softmax", mode="ranked", device="cuda")
    r["gpu_state"] = s
    return validate(r)["gpu_state"]


def test_a_report_with_and_without_gpu_state_validates():
    assert validate_state(None) is None
    older = empty(task="softmax", mode="ranked", device="cuda")
    del older["gpu_state"]  # stored before the key existed
    assert validate(older)["gpu_state"] is None
    s = state()
    assert validate_state(copy.deepcopy(s)) == s
    assert isinstance(validate_state(s)["before"]["sm_mhz"], int)
    # keys left out of a reading come back as null
    assert validate_state({"before": {"error": "NVML: x"}, "after": {}})["before"] == gpustate.blank(error="NVML: x")


@pytest.mark.parametrize("change", [
    lambda s: s.update(during={}),
    lambda s: s.pop("after"),
    lambda s: s["before"].update(fan=50),
    lambda s: s["before"].update(sm_mhz="fast"),
    lambda s: s["before"].update(sm_mhz=-1),
    lambda s: s["after"].update(temp_c=float("nan")),
    lambda s: s["after"].update(index=True),
    lambda s: s["after"].update(index=-1),
    lambda s: s["after"].update(reasons="sw_thermal"),
    lambda s: s["after"].update(reasons=["x" * 33]),
    lambda s: s["after"].update(reasons=["gpu_idle"] * 17),
    lambda s: s["after"].update(uuid="u" * 97),
    lambda s: s["after"].update(error=None),
    lambda s: s.update(before=[]),
])
def test_a_malformed_gpu_state_is_refused(change):
    s = state()
    change(s)
    with pytest.raises(ReportError, match="gpu_state"):
        validate_state(s)


def test_only_a_gpu_report_has_a_gpu_state():
    r = empty(task="softmax", mode="ranked", device="cpu")
    r["gpu_state"] = state()
    with pytest.raises(ReportError, match="gpu_state"):
        validate(r)


# ---- the verdict -------------------------------------------------------------------------------

def finished(before, after):
    ev = Evaluation(b"", task="softmax", device="cuda", mode="ranked")
    ev.report["shapes"] = [{"shape": {"M": 8192, "N": 8192}, "candidate_ms": 0.14, "eager_ms": 0.28,
                            "compile_ms": 0.15, "wall_ms": 0.16, "floor_ms": 0.126,
                            "speedup_vs_compile": 1.07, "speedup_vs_eager": 2.0}]
    ev.gpu_state(before, after)
    verdict.complete(ev.report, ev.codes, mode="ranked", task=get_task("softmax"))
    return validate(ev.report)


def test_a_gpu_that_throttled_during_timing_flags_the_run_with_its_readings():
    before = gpustate.read(FakeNvml(), UUID)
    after = gpustate.read(FakeNvml(sm=1410, temp=84, power_mw=690_000, reasons=0x20), UUID)
    r = finished(before, after)
    assert r["verdict"] == "flagged" and r["reason_codes"] == ["gpu_throttled"]
    assert r["reasons"] == ["the GPU throttled during timing: SM 1980->1410 MHz, memory 3201->3201 MHz, "
                            "84 C, 690 W of 700 W, reasons: sw_thermal"]
    assert r["gpu_state"] == {"before": before, "after": after}
    assert r["speedup_vs_compile"] == pytest.approx(1.07)  # flagged, not rejected: the times stay
    assert "gpu_throttled" in report.FLAG_CODES and "gpu_throttled" not in report.REJECT_CODES


def test_a_steady_gpu_leaves_the_run_verified_with_its_readings():
    before, after = gpustate.read(FakeNvml(), UUID), gpustate.read(FakeNvml(sm=1965, reasons=0), UUID)
    r = finished(before, after)
    assert r["verdict"] == "verified" and r["reason_codes"] == []
    assert r["gpu_state"]["after"]["sm_mhz"] == 1965
    r = finished(before, None)  # no reading after: the state says so
    assert r["verdict"] == "verified" and r["gpu_state"]["after"]["error"] == "no reading"
