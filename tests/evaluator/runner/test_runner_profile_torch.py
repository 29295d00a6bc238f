"""evaluator/runner/profile_torch.py: its number helpers take only sane positive times; rows() on the
CPU (in a child process under Triton's interpreter, since it patches Triton's launch) gives the
operator table busiest first, with each Triton launch as a row of its own."""
import textwrap
from types import SimpleNamespace

from evaluator.runner import profile_torch
from interp_helpers import interpreted


def test_us_keeps_only_sane_positive_numbers():
    assert profile_torch._us(12.5) == 12.5 and profile_torch._us("3") == 3.0
    for bad in (None, "x", -1, 0, 1e15, float("inf"), float("nan")):
        assert profile_torch._us(bad) == 0.0


def test_device_time_reads_the_new_name_then_the_old_one():
    assert profile_torch._device_time(SimpleNamespace(self_device_time_total=5.0, self_cuda_time_total=9.0), "self_") == 5.0
    assert profile_torch._device_time(SimpleNamespace(cuda_time_total=7.0), "") == 7.0
    assert profile_torch._device_time(SimpleNamespace(), "") == 0.0


def test_row_on_the_cpu_has_no_device_times():
    event = SimpleNamespace(key="aten::exp", count=2, self_cpu_time_total=4.0, cpu_time_total=6.0,
                            device_type="DeviceType.CPU")
    assert profile_torch._row(event, "cpu") == {"name": "aten::exp", "kind": "op", "calls": 2, "self_cpu_us": 4.0,
                                                "cpu_total_us": 6.0, "self_device_us": None, "device_total_us": None}
    gpu = SimpleNamespace(**{**vars(event), "device_type": "DeviceType.CUDA", "self_device_time_total": 3.0,
                             "device_time_total": 3.5})
    row = profile_torch._row(gpu, "cuda")
    assert row["kind"] == "kernel" and row["self_device_us"] == 3.0 and row["device_total_us"] == 3.5


SCRIPT = textwrap.dedent("""
    import json
    import torch
    from evaluator.runner._warm import evaluator_warm
    from evaluator.runner.profile_torch import rows

    def kernel(x):
        evaluator_warm[(1,)](x, 16, BLOCK=16)
        return torch.exp(x)

    x = torch.zeros(16)
    got = rows(kernel, (x,), "cpu", limit=50, table_chars=200)
    one = rows(kernel, (x,), "cpu", limit=1, table_chars=10000)
    print(json.dumps({"ops": got["ops"], "table": got["table"], "x": x.tolist(), "one": one["ops"],
                      "long_table": len(one["table"])}))
""")


def test_rows_on_the_cpu_name_the_triton_launch():
    got = interpreted(SCRIPT)
    names = [r["name"] for r in got["ops"]]
    assert "triton evaluator_warm" in names and "aten::exp" in names
    assert len(got["one"]) == 1
    selfs = [r["self_cpu_us"] for r in got["ops"]]
    assert selfs == sorted(selfs, reverse=True)
    assert len(got["table"]) == 200 < got["long_table"]
    assert got["x"] == [2.0] * 16  # the kernel ran once per profiled call
