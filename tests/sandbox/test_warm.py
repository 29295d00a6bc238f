"""sandbox/warm.py's guard for a worker: a GPU evaluation warms its task first, once per process;
nothing happens on the CPU or without a judge cache, and a warm-up that fails is reported, never
raised, and tried again next time. (The warm-up box itself: tests/site/test_site_commands.py.)"""
from __future__ import annotations

import shutil

import pytest

import sandbox
from sandbox import warm


def test_every_worker_keeps_a_judge_cache_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", "")
    assert sandbox.judge_cache("cuda") == str(tmp_path / "state" / "judge-cache")
    assert sandbox.judge_cache("cpu") == str(tmp_path / "state" / "judge-cache")
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


def _judge_mark(cache, *, torch_version, triton_version):
    """The mark as the judge itself names it (evaluator/judge/baseline_compile.py)."""
    from types import SimpleNamespace

    from evaluator.judge import baseline_compile

    ev = SimpleNamespace(task_name="softmax", device="cuda", setup=SimpleNamespace(cache=str(cache)),
                         report={"gpu_name": "NVIDIA H200",
                                 "versions": {"torch": torch_version, "triton": triton_version}})
    path = baseline_compile._marker(ev)
    (cache / "compiled").mkdir(parents=True, exist_ok=True)
    open(path, "w").close()


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="needs a machine without a GPU")
def test_a_cache_the_judge_marked_warm_starts_no_box(tmp_path, monkeypatch):
    """Here a box for the GPU fails at once (no nvidia-smi), so "already warm" proves none ran."""
    import torch
    import triton

    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(tmp_path))
    monkeypatch.setenv("SANDBOX_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(warm, "_warmed", set())
    assert sandbox.warm_before("softmax", device="cuda")["state"] == "failed"  # no mark yet
    _judge_mark(tmp_path, torch_version=torch.__version__, triton_version=triton.__version__)
    assert sandbox.warm_before("softmax", device="cuda") == {
        "task": "softmax", "device": "cuda", "state": "already warm", "seconds": 0.0}
    assert sandbox.warm_before("layernorm", device="cuda")["state"] == "failed"  # its own mark only
