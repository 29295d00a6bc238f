"""Profile mode in the box: the judge's command asks for the .ncu-rep, the file comes back only for
a profile report that says one was written, read like the report (no link, size-capped), and a
CPU profile runs in both boxes."""
from __future__ import annotations

import dataclasses

import pytest

import sandbox
from evaluator import Report
from sandbox import box, result

from sandbox_helpers import HONEST, LIMITS, evaluate


def test_the_judge_is_asked_for_the_profile_file_in_profile_mode_only():
    argv = sandbox.evaluator_argv("python", task="softmax", mode="profile", device="cuda", time_limit_s=300)
    assert argv[argv.index("--profile-out") + 1] == box.PROFILE_FILE == "/out/profile.ncu-rep"
    assert "--profile-out" not in sandbox.evaluator_argv("python", task="softmax", mode="ranked", device="cuda",
                                                         time_limit_s=300)


def _report(file_bytes: int | None, mode: str = "profile") -> Report:
    return Report(schema=1, verdict="verified", reasons=(), reason_codes=(), task="softmax", mode=mode, device="cpu",
                  profile=None if file_bytes is None else {"file_bytes": file_bytes})


def test_the_profile_file_comes_back_only_when_the_report_says_so(tmp_path, monkeypatch):
    path = tmp_path / "profile.ncu-rep"
    path.write_bytes(b"NVIDIA Nsight Compute report")
    assert result.profile_file(_report(28), str(path)) == b"NVIDIA Nsight Compute report"
    assert result.profile_file(_report(0), str(path)) is None
    assert result.profile_file(_report(None), str(path)) is None
    assert result.profile_file(_report(28, mode="ranked"), str(path)) is None
    assert result.profile_file(_report(28), str(tmp_path / "missing")) is None
    link = tmp_path / "link.ncu-rep"
    link.symlink_to(path)
    assert result.profile_file(_report(28), str(link)) is None
    import evaluator

    monkeypatch.setattr(evaluator, "PROFILE_FILE_MAX_BYTES", 10)
    assert result.profile_file(_report(28), str(path)) is None


@pytest.mark.slow
def test_a_cpu_profile_in_the_box(backend, monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    limits = dataclasses.replace(LIMITS, time_limit_s=180)
    res = evaluate(backend, HONEST, mode="profile", limits=limits)
    report = res.report.to_json()
    assert report["mode"] == "profile" and report["verdict"] != "rejected", report["reasons"]
    profile = report["profile"]
    assert profile["tool"] == "torch.profiler" and profile["ncu"] is None
    assert "custom_kernel" in [op["name"] for op in profile["ops"]] and "Self CPU" in profile["table"]
    assert res.profile_file is None and profile["file_bytes"] == 0
