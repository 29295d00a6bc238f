"""The ncu path's plumbing on a machine without a GPU, driven by a stand-in for ncu
(fixtures/stand_in_ncu.py): the profiled child runs under it as the runner's user, its output is
checked first, the .ncu-rep it leaves is read back and imported into rows; without counter
permission the reason is kept and torch.profiler runs instead. The real ncu runs in
tests/gpu_profile on a GPU host."""
import os
import sys
import time
from pathlib import Path

import pytest

from evaluator.judge import profile
from evaluator.common.checks import Failure

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

pytestmark = pytest.mark.slow


@pytest.fixture
def ncu(tmp_path):
    path = tmp_path / "bin" / "ncu"
    path.parent.mkdir()
    path.write_text(f"#!{sys.executable}\n" + (FIXTURES / "stand_in_ncu.py").read_text())
    os.chmod(path, 0o755)
    return str(path)


@pytest.fixture
def session():
    made = []

    def make(source: str):
        report = {"task": "softmax", "device": "cpu"}
        made.append(profile.Session(report, source.encode(), deadline=time.monotonic() + 300))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_the_child_runs_under_ncu_and_its_report_becomes_rows(ncu, session, honest):
    s = session(honest)
    kernels = s._ncu(ncu)
    assert s.ncu_status == {"status": "ok", "note": ""}
    assert [k["name"] for k in kernels] == ["_softmax_rows"] and kernels[0]["duration_ms"] == pytest.approx(0.0025)
    assert s.file.startswith(b'"ID"')
    p = s._profile("ncu", kernels=kernels)
    assert p["tool"] == "ncu" and p["file_bytes"] == len(s.file)
    assert [sec["name"] for sec in p["kernels"][0]["sections"]] == ["GPU Speed Of Light Throughput",
                                                                    "Memory Workload Analysis"]


def test_a_report_of_many_kernels_is_read_whole(ncu, session, honest):
    """The import's CSV runs to kilobytes a kernel, header first: every kernel is read, not the
    tail that is kept of other runs' output for their messages."""
    s = session(honest)
    s.env["STAND_IN_NCU"] = "many"
    kernels = s._ncu(ncu)
    assert s.ncu_status["status"] == "ok" and len(kernels) == 16
    assert len(s.file) > 50_000


def test_without_counter_permission_the_reason_is_kept_and_torch_profiler_runs(ncu, session, honest):
    s = session(honest)
    s.env["STAND_IN_NCU"] = "denied"
    assert s._ncu(ncu) == []
    assert s.ncu_status["status"] == "no_permission" and "ERR_NVGPUCTRPERM" in s.ncu_status["note"]
    p = s._torch()
    assert p["tool"] == "torch.profiler" and p["ncu"]["status"] == "no_permission"
    assert "custom_kernel" in [op["name"] for op in p["ops"]] and p["file_bytes"] == 0 and not s.file


def test_a_wrong_output_under_ncu_is_a_failure_before_any_profile_is_read(ncu, session):
    s = session("import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1) * 2\n")
    with pytest.raises(Failure) as failed:
        s._ncu(ncu)
    assert failed.value.problems[0][0] == "mismatch" and s.file == b""
