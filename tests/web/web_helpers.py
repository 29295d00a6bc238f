"""Helpers shared by the page tests (fixtures live in conftest.py)."""
from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from leaderboard import services
from leaderboard.models import Submission

H200 = "cuda:NVIDIA H200"


def report_for(task, *, verdict="verified", mode="ranked", device="cuda", speedup=1.2,
               reasons=(), codes=(), logs="runner said hi"):
    shape = task.bench_shapes["cuda" if device == "cuda" else "cpu"][0]
    ranked = mode == "ranked" and verdict != "rejected"
    return {
        "schema": 1,
        "verdict": verdict,
        "reasons": list(reasons),
        "reason_codes": list(codes),
        "task": task.name,
        "mode": mode,
        "device": device,
        "gpu_name": "NVIDIA H200" if device == "cuda" else None,
        "versions": {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0", "cuda": "12.8"},
        "speedup_vs_compile": speedup if ranked else None,
        "speedup_vs_eager": speedup * 1.8 if ranked else None,
        "shapes": [
            {"shape": shape, "candidate_ms": 0.15, "eager_ms": 0.27, "compile_ms": 0.15 * speedup,
             "wall_ms": 0.16, "floor_ms": 0.126, "speedup_vs_compile": speedup,
             "speedup_vs_eager": speedup * 1.8}
        ] if ranked else [],
        "tests": [{"shape": {"M": 7, "N": 131}, "passed": True, "max_abs_err": 1e-7, "message": ""}],
        "phases": {"startup_s": 1.0, "compile_s": 2.0, "correctness_s": 0.5, "timing_s": 3.0},
        "kernels_launched": ["_softmax_kernel"],
        "logs": logs,
    }


SOURCE = "import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n"


def make_done(task, user, *, device_type=H200, days_ago=0, **kw) -> Submission:
    """A finished submission as the worker would have stored it (claim + store_result)."""
    device = "cpu" if device_type == "cpu" else "cuda"
    report = report_for(task, device=device, **kw)
    sub = Submission.objects.create(
        user=user, task=task, mode=report["mode"], device_type=device_type, source=SOURCE,
        filename="softmax.py", celery_task_id="t",
    )
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    when = timezone.now() - timedelta(days=days_ago)
    Submission.objects.filter(pk=sub.pk).update(created_at=when, finished_at=when)
    return Submission.objects.get(pk=sub.pk)


def upload_done(task, user, *, source=SOURCE, mode="ranked", **kw) -> Submission:
    """An upload through the service the form calls, finished through the worker's claim and
    store_result, at the current (test-controlled) time."""
    sub = services.submission_create(user=user, task=task, source=source, filename="k.py", mode=mode)
    device = "cpu" if sub.device_type == "cpu" else "cuda"
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report_for(task, device=device, mode=mode, **kw))
    return Submission.objects.get(pk=sub.pk)
