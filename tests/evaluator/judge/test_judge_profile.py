"""Profile mode in the evaluator: ncu's CSV parsed into rows, the profile validated as the
submission's claim, and the real judge + profiling child on the CPU (torch.profiler's table)."""
import copy
import os

import pytest

from evaluator.judge import profile
from evaluator.contract import profile_report
from evaluator.contract.report import ReportError, empty, validate

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
          '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name",'
          '"Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"')


def _row(launch, kernel, section, metric, unit, value, rule=("", "", "")):
    cells = [str(launch), "4242", "python3", "127.0.0.1", kernel, "1", "7", "(1024, 1, 1)", "(8192, 1, 1)",
             "0", "9.0", section, metric, unit, value, *rule, "", ""]
    return ",".join('"' + c.replace('"', '""') + '"' for c in cells)


SOL = "GPU Speed Of Light Throughput"
MWA = "Memory Workload Analysis"
CSV = "\n".join([
    "==PROF== Connected to process 4242 (/usr/bin/python3)",
    HEADER,
    _row(0, "_softmax_rows", SOL, "DRAM Throughput", "%", "91.52"),
    _row(0, "_softmax_rows", SOL, "Duration", "usecond", "112.35"),
    _row(0, "_softmax_rows", SOL, "Elapsed Cycles", "cycle", "1,234,567"),
    _row(0, "_softmax_rows", MWA, "Memory Throughput", "Tbyte/second", "4.31"),
    _row(0, "_softmax_rows", SOL, "", "", "", ("SOLBottleneck", "OPT", 'Memory is "more" than 80% utilized.')),
    _row(1, "void other<float>(float*, int)", SOL, "Duration", "msecond", "1.5"),
])


def test_ncu_csv_becomes_one_entry_per_launch_with_sections_and_rules():
    kernels = profile_report.parse_ncu_csv(CSV)
    assert [k["id"] for k in kernels] == [0, 1]
    first = kernels[0]
    assert first["name"] == "_softmax_rows" and first["grid"] == "(8192, 1, 1)"
    assert [s["name"] for s in first["sections"]] == [SOL, MWA]
    sol = {m["name"]: (m["value"], m["unit"]) for m in first["sections"][0]["metrics"]}
    assert sol["Elapsed Cycles"] == ("1,234,567", "cycle") and sol["DRAM Throughput"] == ("91.52", "%")
    assert first["duration_ms"] == pytest.approx(0.11235)
    assert first["rules"] == [{"name": "SOLBottleneck", "type": "OPT", "text": 'Memory is "more" than 80% utilized.'}]
    assert kernels[1]["duration_ms"] == pytest.approx(1.5) and kernels[1]["name"].startswith("void other")


def test_ncu_csv_without_a_header_or_past_the_limits():
    assert profile_report.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n") == []
    many = "\n".join([HEADER] + [_row(i, f"k{i}", SOL, "Duration", "ns", "5") for i in range(40)])
    assert len(profile_report.parse_ncu_csv(many)) == profile_report.MAX_KERNELS
    wide = "\n".join([HEADER] + [_row(0, "k", SOL, f"m{i}", "", "1") for i in range(100)])
    assert len(profile_report.parse_ncu_csv(wide)[0]["sections"][0]["metrics"]) == profile_report.MAX_METRICS
    assert profile_report.number("1,024.5") == 1024.5 and profile_report.number("n/a") is None
    assert profile_report.duration_ms("3", "furlong") is None


@pytest.mark.parametrize("output,status", [
    ("==PROF== Connected\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA "
     "GPU Performance Counters on the target device 0.\n", "no_permission"),
    ("==ERROR== Failed to prepare kernel for profiling\n", "failed"),
    ("==WARNING== No kernels were profiled.\n", "failed"),
    ("", "failed"),
])
def test_why_ncu_gave_no_profile(output, status):
    found, why = profile_report.ncu_problem(output)
    assert found == status and why
    if status == "no_permission":
        assert "ERR_NVGPUCTRPERM" in why


def profile_report_dict():
    r = empty(task="softmax", mode="profile", device="cuda")
    r["profile"] = {"tool": "ncu", "shape": {"M": 8192, "N": 8192}, "floor_ms": 0.11, "bytes_moved": 5.4e8,
                    "flops": 3.4e8, "ncu": {"status": "ok", "note": ""},
                    "kernels": profile_report.parse_ncu_csv(CSV), "ops": [], "table": "",
                    "file_bytes": 1234, "seconds": 12.5, "notes": []}
    return r


def test_a_profile_validates_and_is_only_for_profile_mode():
    good = profile_report_dict()
    assert validate(copy.deepcopy(good))["profile"]["kernels"][0]["sections"][0]["name"] == SOL
    ranked = copy.deepcopy(good)
    ranked["mode"] = "ranked"
    with pytest.raises(ReportError, match="only a profile-mode report"):
        validate(ranked)
    scored = copy.deepcopy(good)
    scored["speedup_vs_compile"] = 1.2
    with pytest.raises(ReportError, match="not ranked"):
        validate(scored)


@pytest.mark.parametrize("change", [
    lambda p: p.update(tool="perf"),
    lambda p: p.update(extra=1),
    lambda p: p.update(table="x" * (profile_report.MAX_TABLE + 1)),
    lambda p: p.update(file_bytes=profile_report.MAX_FILE_BYTES + 1),
    lambda p: p["ncu"].update(status="great"),
    lambda p: p["kernels"][0].update(name="k" * 301),
    lambda p: p["kernels"][0]["sections"][0]["metrics"][0].update(value=["<script>"]),
    lambda p: p.update(ops=[{"name": "aten::mm", "kind": "op", "calls": -1}]),
    lambda p: p.update(ops=[{"name": "aten::mm", "kind": "gadget", "calls": 1}]),
    lambda p: p.update(kernels=[{"id": True}]),
])
def test_a_malformed_profile_is_refused(change):
    r = profile_report_dict()
    change(r["profile"])
    with pytest.raises(ReportError):
        validate(r)


def test_files_of_the_child_are_read_only_when_plain_and_its_own(tmp_path):
    plain = tmp_path / "out.bin"
    plain.write_bytes(b"1234")
    uid = os.getuid()
    assert profile._read_owned(str(plain), 4, uid) == b"1234"
    assert profile._read_owned(str(plain), 3, uid) is None  # too long
    assert profile._read_owned(str(plain), 4, uid + 1) is None  # someone else's
    link = tmp_path / "link.bin"
    link.symlink_to(plain)
    assert profile._read_owned(str(link), 4, uid) is None
    os.mkfifo(tmp_path / "fifo")
    assert profile._read_owned(str(tmp_path / "fifo"), 4, uid) is None


# ---- the real judge and child on the CPU ----------------------------------------------------------

@pytest.mark.slow
def test_profile_mode_on_the_cpu_gives_the_operator_table(evaluate, honest, tmp_path):
    report = evaluate(honest, mode="profile", profile_out=str(tmp_path / "p.ncu-rep"))
    assert report["mode"] == "profile" and report["verdict"] == "verified", report["reasons"]
    assert report["speedup_vs_compile"] is None and report["shapes"] == []
    assert all(t["passed"] for t in report["tests"])
    p = report["profile"]
    assert p["tool"] == "torch.profiler" and p["ncu"] is None and p["kernels"] == []
    names = [op["name"] for op in p["ops"]]
    assert "custom_kernel" in names and any(n.startswith("triton ") for n in names)
    assert all(op["self_device_us"] is None for op in p["ops"])
    assert "Self CPU" in p["table"] and "custom_kernel" in p["table"]
    assert p["floor_ms"] > 0 and p["bytes_moved"] > 0 and p["shape"]
    assert report["phases"]["profile_s"] > 0 and report["ceilings"]["source"] == "estimate"
    assert not (tmp_path / "p.ncu-rep").exists()  # no ncu on the CPU: no file
    assert validate(report) == report


@pytest.mark.slow
def test_a_kernel_wrong_only_on_the_profile_shape_is_rejected_without_a_profile(evaluate, monkeypatch):
    # without EVALUATOR_QUICK the CPU profile shape (256 x 1024) is none of the test shapes
    monkeypatch.delenv("EVALUATOR_QUICK")
    report = evaluate("""
        import torch

        def custom_kernel(x):
            out = torch.softmax(x, dim=-1)
            if x.shape[0] == 256:
                out[0, 0] += 1.0
            return out
    """, mode="profile")
    assert report["verdict"] == "rejected" and "mismatch" in report["reason_codes"], report["reasons"]
    assert report["profile"] is None
    assert any("profile shape {M=256, N=1024}" in r for r in report["reasons"])
    assert report["tests"][-1]["shape"] == {"M": 256, "N": 1024} and not report["tests"][-1]["passed"]


@pytest.mark.slow
def test_the_profiled_process_is_not_root(evaluate):
    """As root the child drops to the runner's user first: a kernel that is wrong as root would be
    rejected here."""
    if os.geteuid() != 0:
        pytest.skip("only a root judge changes user")
    report = evaluate("""
        import os
        import torch

        def custom_kernel(x):
            out = torch.softmax(x, dim=-1)
            return out + 1.0 if os.getuid() == 0 else out
    """, mode="profile")
    assert report["verdict"] != "rejected", report["reasons"]
    assert report["profile"]["tool"] == "torch.profiler"


@pytest.mark.slow
def test_a_rejected_kernel_is_not_profiled(evaluate):
    report = evaluate("def custom_kernel(x):\n    return x\n", mode="profile")
    assert report["verdict"] == "rejected" and report["mode"] == "profile"
    assert report["profile"] is None and report["phases"]["profile_s"] == 0.0


def test_a_profile_in_lines_of_text():
    p = validate(profile_report_dict())["profile"]
    text = "\n".join(profile_report.summary_lines(p))
    assert "profile of {M=8192, N=8192} with ncu; roofline floor 0.11 ms" in text
    assert "kernel _softmax_rows grid (8192, 1, 1) block (1024, 1, 1) (floor 98% of it)" in text
    assert "DRAM Throughput 91.52 %" in text and "Duration 112.35 usecond" in text
    p.update(tool="torch.profiler", kernels=[], ncu={"status": "no_permission", "note": "ERR_NVGPUCTRPERM"},
             ops=[{"name": "_softmax_rows", "kind": "kernel", "calls": 1, "self_cpu_us": 3.0, "cpu_total_us": 3.0,
                   "self_device_us": 112.0, "device_total_us": 112.0}])
    text = "\n".join(profile_report.summary_lines(p))
    assert "ncu: no_permission: ERR_NVGPUCTRPERM" in text and "self device us" in text and "112.0" in text


def test_ncu_leaves_the_gpus_clocks_alone():
    """ncu's default locks the clocks to base while it profiles: a profile would change the GPU's
    settings and time a slower GPU than a ranked run does."""
    command = profile.ncu_command("/usr/local/cuda/bin/ncu", "/tmp/x/profile")
    at = command.index("--clock-control")
    assert command[at + 1] == "none"
    assert command[0] == "/usr/local/cuda/bin/ncu" and command[command.index("--export") + 1] == "/tmp/x/profile"
