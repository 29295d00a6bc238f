"""Helpers shared by the site back-end tests (fixtures live in conftest.py)."""
from __future__ import annotations

import json
import uuid

from leaderboard import services
from leaderboard.models import Submission

H200 = "cuda:NVIDIA H200"
SOURCE = "import torch\n\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n"


def queued_task_ids(client, queue: str) -> list[str]:
    return [json.loads(raw)["headers"]["id"] for raw in client.lrange(queue, 0, -1)]


def queued_messages(client, queue: str) -> list[dict]:
    return [json.loads(raw) for raw in client.lrange(queue, 0, -1)]


def report_for(task, *, verdict="verified", mode="ranked", device="cuda", speedup=1.2, codes=(),
               candidate_ms=0.15, logs="runner output"):
    shape = task.bench_shapes["cuda" if device == "cuda" else "cpu"][0]
    scored = mode == "ranked" and verdict != "rejected"
    return {
        "schema": 1,
        "verdict": verdict,
        "reasons": [f"reason for {c}" for c in codes],
        "reason_codes": list(codes),
        "task": task.name,
        "mode": mode,
        "device": device,
        "gpu_name": "NVIDIA H200" if device == "cuda" else None,
        "versions": {"python": "3.12.3", "torch": "2.11.0", "triton": "3.6.0"},
        "speedup_vs_compile": speedup if scored else None,
        "speedup_vs_eager": speedup * 2 if scored else None,
        "shapes": [
            {"shape": shape, "candidate_ms": candidate_ms, "eager_ms": 0.28, "compile_ms": candidate_ms * speedup,
             "wall_ms": candidate_ms, "floor_ms": 0.5, "speedup_vs_compile": speedup,
             "speedup_vs_eager": speedup * 2}
        ] if scored else [],
        "tests": [{"shape": {"M": 7, "N": 131}, "passed": verdict != "rejected", "max_abs_err": 1e-7,
                   "message": ""}],
        "phases": {"startup_s": 1.0, "compile_s": 2.0, "correctness_s": 0.5, "timing_s": 3.0},
        "kernels_launched": ["_softmax_kernel"],
        "logs": logs,
    }


def make_queued(task, user, *, mode="ranked", device_type=H200) -> Submission:
    return Submission.objects.create(user=user, task=task, mode=mode, device_type=device_type, source=SOURCE,
                                     filename="k.py", celery_task_id=uuid.uuid4().hex)


def make_done(task, user, *, device_type=H200, **kw) -> Submission:
    """A finished submission, stored the way a worker stores it (claim, then store_result)."""
    device = "cpu" if device_type == "cpu" else "cuda"
    report = report_for(task, device=device, **kw)
    sub = make_queued(task, user, mode=report["mode"], device_type=device_type)
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert services.submission_store_result(submission=claimed, report=report)
    sub.refresh_from_db()
    return sub


def upload(user, task, *, mode="ranked") -> Submission:
    """An upload through the service the form and the API call, at the current (test-controlled) time."""
    return services.submission_create(user=user, task=task, source=SOURCE + f"# {user}\n", filename="k.py", mode=mode)


def finish(sub: Submission, *, speedup=1.2, verdict="verified", codes=(), extra=None) -> Submission:
    """A CPU result stored through the worker's claim and store_result, with a made-up report."""
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    report = report_for(sub.task, device="cpu", mode=sub.mode, speedup=speedup, verdict=verdict, codes=codes)
    report.update(extra or {})
    assert services.submission_store_result(submission=claimed, report=report)
    sub.refresh_from_db()
    return sub


def every_change_shows(read, *, task, owner, admin_user, waiting, done) -> None:
    """Each kind of write that changes what a caller's own API reads show, each followed by the
    read that must show it at once: `read(path) -> JSON` (the caller is `owner`; `waiting` is
    their queued submission, `done` a finished one). For the reads kept under a stamp
    (api/owncache, asgi_kept)."""
    detail, listing = f"/api/submissions/{waiting.pk}", "/api/submissions"
    # an upload
    services.submission_create(user=owner, task=task, source=waiting.source, filename="k.py", mode="test")
    assert read(listing)["count"] == 3
    # a finished result arriving without ever being queued (an import of results)
    Submission.objects.create(user=owner, task=task, mode="test", device_type="cpu", source="x", filename="i.py",
                              status="done", verdict="verified", report=report_for(task, device="cpu"))
    assert read(listing)["count"] == 4
    # a claim, then each phase
    claimed = services.submission_claim(submission_id=waiting.pk, worker="w")
    assert read(detail)["status"] == "running"
    services.submission_set_phase(submission=claimed, phase="correctness 1 of 3")
    assert read(detail)["phase"] == "correctness 1 of 3"
    services.submission_set_phase(submission=claimed, phase="correctness 2 of 3")
    assert read(detail)["phase"] == "correctness 2 of 3"
    # a retry gives the claim back, the next claim takes it again
    services.submission_release_for_retry(submission=claimed, error="box", countdown_s=0)
    assert read(detail)["status"] == "queued"
    claimed = services.submission_claim(submission_id=waiting.pk, worker="w")
    assert read(detail)["attempts"] == 2
    # the result
    assert services.submission_store_result(submission=claimed, report=report_for(task, speedup=1.1))
    after = read(detail)
    assert after["finished"] is True and after["verdict"] == "verified"
    assert [r["finished"] for r in read(listing)["results"]].count(False) == 1  # the upload
    # an admin's decision on a finished one
    assert read(f"/api/submissions/{done.pk}")["hidden"] is False
    services.submission_disqualify(submission=done, actor=admin_user, reason="cheats")
    shown = read(f"/api/submissions/{done.pk}")
    assert shown["hidden"] is True and shown["verdict"] == "rejected"
    # the owner publishes its code
    assert read(detail)["code_open"] is False
    services.submission_publish(submission=Submission.objects.get(pk=waiting.pk), actor=owner)
    assert read(detail)["code_open"] is True
