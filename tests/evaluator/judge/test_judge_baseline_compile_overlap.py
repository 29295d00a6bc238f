"""The compile phase beside the correctness phase (baseline_compile.Overlap), forced on the CPU
with EVALUATOR_OVERLAP_COMPILE=1: the verdict and the scores come out as when it runs alone, the
compile's time is (partly) hidden, a candidate that fails meanwhile leaves no baseline runner
behind, and a baseline that fails in the thread fails the evaluation as it would alone. Which
evaluations overlap by default: GPU ones whose task compiled into the judge's cache before."""
import types

import pytest

from evaluator.judge import baseline
from evaluator.judge import baseline_compile
from evaluator.judge.evaluation import Evaluation

WRONG = """\
import torch


def custom_kernel(x):
    return torch.zeros_like(x)
"""


@pytest.fixture
def overlapped(monkeypatch):
    monkeypatch.setenv("EVALUATOR_OVERLAP_COMPILE", "1")
    monkeypatch.setenv("EVALUATOR_KEEP_BASELINE", "0")  # every evaluation starts its own runner


def _ranked(source: str) -> Evaluation:
    ev = Evaluation(source.encode(), task="softmax", device="cpu", mode="ranked")
    ev.report = ev.run()
    return ev


def test_the_compile_runs_beside_the_correctness_phase(honest, overlapped):
    ev = _ranked(honest)
    assert ev.report["verdict"] == "verified", ev.report["reasons"]
    assert ev.compiling is not None and not ev.compiling.thread.is_alive()
    phases = ev.report["phases"]
    # the correctness phase waited for less than the whole compile: the rest ran beside it
    assert 0.0 <= phases["compile_wait_s"] < phases["compile_s"] - 0.2, phases
    row = ev.report["shapes"][0]
    assert row["eager_ms"] > 0 and row["compile_ms"] > 0 and row["speedup_vs_compile"] > 0


def test_a_candidate_that_fails_meanwhile_leaves_no_baseline_runner(overlapped):
    ev = _ranked(WRONG)
    assert ev.report["verdict"] == "rejected" and "mismatch" in ev.report["reason_codes"], ev.report["reasons"]
    assert not ev.compiling.thread.is_alive()
    assert ev.base is not None and ev.base.runner.proc.poll() is not None  # ended, not left running
    assert not ev.base.work.path.exists()


def test_a_baseline_that_fails_in_the_thread_fails_the_evaluation(honest, overlapped, monkeypatch):
    monkeypatch.setattr(baseline, "source", lambda task: "raise RuntimeError('broken baseline')\n")
    with pytest.raises(RuntimeError, match="baseline runner failed"):
        _ranked(honest)


def _fake_ev(tmp_path, device="cuda"):
    return types.SimpleNamespace(task_name="softmax", device=device, setup=types.SimpleNamespace(cache=str(tmp_path)),
                                 report={"gpu_name": "NVIDIA H200", "versions": {"torch": "2.11.0", "triton": "3.6.0"}})


def test_by_default_only_a_warm_gpu_compile_overlaps(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALUATOR_OVERLAP_COMPILE", raising=False)
    ev = _fake_ev(tmp_path)
    assert not baseline_compile.overlaps(ev)  # cold: inductor benchmarks, nothing may load the GPU
    baseline_compile._mark_warm(ev)
    assert baseline_compile.overlaps(ev)
    # another torch, another GPU or the CPU: alone again
    ev.report["versions"]["torch"] = "2.12.0"
    assert not baseline_compile.overlaps(ev)
    cpu = _fake_ev(tmp_path, device="cpu")
    baseline_compile._mark_warm(cpu)
    assert not baseline_compile.overlaps(cpu)
    monkeypatch.setenv("EVALUATOR_OVERLAP_COMPILE", "1")
    assert baseline_compile.overlaps(cpu)
    monkeypatch.setenv("EVALUATOR_OVERLAP_COMPILE", "0")
    assert not baseline_compile.overlaps(_fake_ev(tmp_path))
