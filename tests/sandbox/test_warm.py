"""sandbox/warm.py's guard for a worker: a GPU evaluation warms its task first, once per process;
nothing happens on the CPU or without a judge cache, and a warm-up that fails is reported, never
raised, and tried again next time. (The warm-up box itself: tests/site/test_site_commands.py.)"""
from __future__ import annotations

import shutil

import pytest

import sandbox
from sandbox import warm


def test_a_gpu_worker_keeps_a_judge_cache_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", "")
    assert sandbox.judge_cache("cuda") == str(tmp_path / "state" / "judge-cache")
    assert sandbox.judge_cache("cpu") == ""
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(tmp_path / "named"))
    assert sandbox.judge_cache("cuda") == sandbox.judge_cache("cpu") == str(tmp_path / "named")
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", "off")
    assert sandbox.judge_cache("cuda") == sandbox.judge_cache("cpu") == ""


def test_nothing_to_warm_on_the_cpu_or_without_a_judge_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(tmp_path))
    assert sandbox.warm_before("softmax", device="cpu") is None
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", "off")
    assert sandbox.warm_before("softmax", device="cuda") is None
    assert sandbox.warm_tasks(["softmax"], device="cuda") == [
        {"task": "softmax", "device": "cuda", "state": "no judge cache", "seconds": 0.0}]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="needs a machine without a GPU")
def test_a_failed_warm_up_is_reported_and_tried_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(tmp_path))
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path / "state"))
    for _ in range(2):  # not remembered as warm: the next evaluation tries again
        failed = sandbox.warm_before("softmax", device="cuda")
        assert failed["state"] == "failed" and "nvidia-smi" in failed["error"], failed
    assert not warm._warmed


def test_a_bad_request_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(tmp_path))
    for tasks, device in ((["../x"], "cpu"), ([], "cpu"), (["softmax"], "tpu")):
        with pytest.raises(ValueError, match="bad warm-up request"):
            sandbox.warm_tasks(tasks, device=device)
