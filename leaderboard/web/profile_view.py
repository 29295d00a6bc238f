"""The profile section of a profile-mode result page, and the .ncu-rep download.

Everything shown comes from the validated report (evaluator/contract/profile_report.py); the text is the
submission's claim and goes through the templates' escaping like any other text. Only the owner and
staff see it: publishing a submission opens its code, not its profile.
"""
from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpResponse
from django.urls import reverse

from leaderboard import scoring
from leaderboard.models import Submission
from leaderboard.services import profiling
from leaderboard.web.present import shape_label

# the speed-of-light figures shown above each kernel's full sections
HEADLINES = ("Duration", "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput")

NCU_WORDS = {
    "ok": "Nsight Compute profiled the launches below.",
    "not_found": "Nsight Compute (ncu) is not installed on this worker, so the kernel table below is "
                 "torch.profiler's.",
    "no_permission": "Nsight Compute could not read the GPU's performance counters from inside the sandbox "
                     "(ERR_NVGPUCTRPERM: the driver lets only administrators read them, and nothing in the "
                     "box is one), so the kernel table below is torch.profiler's.",
    "failed": "Nsight Compute gave no profile, so the kernel table below is torch.profiler's.",
}


def profile_context(submission: Submission, user) -> dict | None:
    """What the page shows of a finished profile run, or None (not a profile, not the viewer's)."""
    if submission.mode != Submission.Mode.PROFILE or not submission.can_view(user):
        return None
    report = submission.typed_report
    profile = report.profile if report else None
    if not profile or submission.status != Submission.Status.DONE:
        return None
    floor = scoring.floor_ms_for(task=submission.task, device_type=submission.device_type,
                                  shape=profile.get("shape"), report_floor_ms=profile.get("floor_ms"))
    ncu = profile.get("ncu")
    size = profiling.profile_file_size(submission=submission) if profile.get("file_bytes") else None
    ops = profile.get("ops") or []
    return {
        "tool": profile["tool"],
        "shape": shape_label(profile.get("shape") or {}),
        "floor_ms": floor,
        "bytes_moved": profile.get("bytes_moved"),
        "flops": profile.get("flops"),
        "on_gpu": report.device == "cuda",
        "ncu": {**ncu, "words": NCU_WORDS.get(ncu["status"], "")} if ncu else None,
        "kernels": [_kernel(k, floor) for k in profile.get("kernels") or []],
        "device_rows": [_op(o) for o in ops if o["kind"] == "kernel"],
        "op_rows": [_op(o) for o in ops if o["kind"] == "op"],
        "table": profile.get("table") or "",
        "notes": profile.get("notes") or [],
        "file_size": size,
        "download_url": reverse("submission_profile_file", args=[submission.pk]) if size else "",
    }


def _kernel(k: dict, floor_ms: float | None) -> dict:
    headline = [m for s in k["sections"] if s["name"].startswith("GPU Speed Of Light")
                for m in s["metrics"] if m["name"] in HEADLINES]
    duration = k.get("duration_ms")
    return {**k, "headline": headline,
            "floor_pct": floor_ms / duration * 100 if floor_ms and duration else None}


def _op(o: dict) -> dict:
    def ms(us):
        return None if us is None else us / 1e3

    return {"name": o["name"], "calls": o["calls"], "self_cpu_ms": ms(o["self_cpu_us"]),
            "cpu_total_ms": ms(o["cpu_total_us"]), "self_device_ms": ms(o["self_device_us"]),
            "device_total_ms": ms(o["device_total_us"])}


def profile_file(request, pk: int):
    """The .ncu-rep of a profile run, as an attachment, for its owner and staff."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    stored = profiling.profile_file_for_viewer(submission_id=pk, user=request.user)
    if stored is None:
        raise Http404("No profile file")
    return ncu_rep_response(stored, pk)


def ncu_rep_response(stored, pk: int) -> HttpResponse:
    response = HttpResponse(bytes(stored.data), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="submission-{int(pk)}.ncu-rep"'
    response["Content-Length"] = str(stored.size)
    response["X-Content-Type-Options"] = "nosniff"
    return response
