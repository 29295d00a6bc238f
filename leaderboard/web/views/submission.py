from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render

from leaderboard import selectors
from leaderboard.models import Submission
from leaderboard.web.present import device_label, highlight_python, shape_label

# what the page shows of the logs; the stored logs are already capped at 64 KiB
LOG_TAIL_CHARS = 16 * 1024


def _submission_for(request, pk: int) -> Submission:
    """The owner and staff see a submission; to anyone else it does not exist."""
    submission = selectors.submission_for_viewer(submission_id=pk, user=request.user)
    if submission is None:
        raise Http404("No such submission")
    return submission


def _result_context(submission: Submission) -> dict:
    report = submission.report or {}
    # the report's rows with the published floor of the device type and % of it
    shapes = [{**row, "shape": shape_label(row.get("shape") or {})} for row in selectors.shape_rows(submission=submission)]
    tests = [
        {"shape": shape_label(t.get("shape") or {}), "passed": t.get("passed"),
         "max_abs_err": t.get("max_abs_err"), "message": t.get("message") or ""}
        for t in report.get("tests") or []
    ]
    logs = submission.logs or ""
    codes = list(submission.reason_codes or [])
    reasons = [
        {"text": text, "code": codes[i] if i < len(codes) else ""}
        for i, text in enumerate(submission.reasons or [])
    ]
    return {
        "submission": submission,
        "finished": submission.is_finished,
        "reasons": reasons,
        "shapes": shapes,
        "tests": tests,
        "phases": report.get("phases") or {},
        "logs": logs[-LOG_TAIL_CHARS:],
        "logs_truncated": len(logs) > LOG_TAIL_CHARS,
        "device_name": device_label(submission.device_type),
        "versions": sorted((submission.versions or {}).items()),
        "calibration": selectors.calibration_for_task(task=submission.task, device_type=submission.device_type),
    }


@login_required
def submission_detail(request, pk: int):
    submission = _submission_for(request, pk)
    context = _result_context(submission)
    context["code_html"] = highlight_python(submission.source)
    context["audit_entries"] = selectors.audit_for_submission(submission=submission)
    return render(request, "web/submission_detail.html", context)


@login_required
def submission_status(request, pk: int):
    """The live part of the submission page, polled by htmx until the submission is finished."""
    submission = _submission_for(request, pk)
    return render(request, "web/_submission_status.html", _result_context(submission))
