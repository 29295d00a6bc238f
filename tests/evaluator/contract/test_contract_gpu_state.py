"""evaluator/contract/gpu_state.py: a report's gpu_state round-trips through validate(), and an
untrusted one with unknown keys, wrong types or a missing side is refused with the place named."""
import json

import pytest

from evaluator.contract import gpu_state
from evaluator.contract.fields import ReportError


def reading(**over):
    r = gpu_state.blank(index=0, uuid="GPU-1234", sm_mhz=1980, mem_mhz=2619, temp_c=41, power_w=112.5,
                        power_limit_w=700, reasons=["gpu_idle"])
    r.update(over)
    return r


def test_blank_has_every_field_and_empty_reasons():
    b = gpu_state.blank()
    assert tuple(b) == gpu_state.FIELDS
    assert b["reasons"] == [] and b["error"] == "" and b["sm_mhz"] is None
    assert gpu_state.blank(error="no NVML")["error"] == "no NVML"


def test_a_reading_round_trips_through_json_and_validate():
    state = {"before": reading(), "after": reading(temp_c=55, power_w=400.25, reasons=[])}
    again = gpu_state.validate(json.loads(json.dumps(state)))
    assert again == state
    assert isinstance(again["before"]["sm_mhz"], int) and isinstance(again["after"]["power_w"], float)
    assert gpu_state.validate(None) is None


def test_a_missing_field_comes_back_as_its_blank_value():
    got = gpu_state.validate({"before": {"index": 1}, "after": {}})
    assert got["before"] == gpu_state.blank(index=1)
    assert got["after"] == gpu_state.blank()


@pytest.mark.parametrize("state, says", [
    ({"before": reading()}, "gpu_state: must have exactly the keys before and after"),
    ({"before": reading(), "after": reading(), "x": {}}, "gpu_state: more than 2 keys"),
    ({"before": reading(), "during": reading()}, "gpu_state: must have exactly the keys before and after"),
    ({"before": {"index": 0, "fan": 3}, "after": reading()}, "gpu_state.before: unknown keys ['fan']"),
    ({"before": {**reading(), "fan": 3}, "after": reading()}, "gpu_state.before: more than 9 keys"),
    ({"before": reading(), "after": reading(index=True)}, "gpu_state.after.index: must be a small non-negative integer or null"),
    ({"before": reading(), "after": reading(index=4096)}, "gpu_state.after.index: must be a small non-negative integer or null"),
    ({"before": reading(temp_c=5000), "after": reading()}, "gpu_state.before.temp_c: must be finite, non-negative and sane"),
    ({"before": reading(sm_mhz="fast"), "after": reading()}, "gpu_state.before.sm_mhz: must be a number"),
    ({"before": reading(uuid=7), "after": reading()}, "gpu_state.before.uuid: must be a string"),
    ({"before": reading(reasons="hot"), "after": reading()}, "gpu_state.before.reasons: must be a list"),
    ({"before": reading(reasons=["x"] * 17), "after": reading()}, "gpu_state.before.reasons: more than 16 items"),
    ({"before": reading(reasons=["r" * 33]), "after": reading()}, "gpu_state.before.reasons[]: longer than 32 characters"),
    ({"before": reading(error=None), "after": reading()}, "gpu_state.before.error: must be a string"),
    ("hot", "gpu_state: must be an object"),
])
def test_a_bad_gpu_state_is_refused_with_its_place(state, says):
    with pytest.raises(ReportError) as e:
        gpu_state.validate(state)
    assert str(e.value) == says
