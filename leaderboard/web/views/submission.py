from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard import selectors, services
from leaderboard.models import Submission
from leaderboard.selectors import queue as queue_reads
from leaderboard.selectors.competitions import competitions_for_submission
from leaderboard.services.submissions import QUEUED_PHASE
from leaderboard.web import charts
from leaderboard.web import result as words
from leaderboard.web.present import badge, device_label, highlight_python, json_script_raw, shape_label
from leaderboard.web.profile_view import profile_context

# what the page shows of the logs; the stored logs are already capped at 64 KiB
LOG_TAIL_CHARS = 16 * 1024


def _submission_for(request, pk: int) -> Submission | None:
    """Owner and staff see any submission, everyone a public one (a ranked or published entry);
    to anyone else it does not exist. None: a visitor who is not logged in, asked to log in first."""
    submission = selectors.submission_for_viewer(submission_id=pk, user=request.user)
    if submission is None and request.user.is_authenticated:
        raise Http404("No such submission")
    return submission


def _result_context(request, submission: Submission) -> dict:
    report = submission.typed_report
    device_name = device_label(submission.device_type)
    shapes = [{**row, "shape": shape_label(row.get("shape") or {})}
              for row in selectors.shape_rows(submission=submission)]
    noisy = any(row["noisy"] for row in shapes)
    band = max((row["band_pct"] for row in shapes if row["band_pct"] is not None), default=None)
    code_visible = selectors.code_visible(submission=submission, user=request.user)
    logs = submission.logs or "" if code_visible else ""
    # "your kernel" and "Yours" only to its owner: a public entry is read by anyone
    is_owner = request.user.is_authenticated and request.user.pk == submission.user_id
    kernel = "your kernel" if is_owner else "this kernel"
    figure = json_script_raw(charts.result_times(shapes, kernel=kernel), "chart-result-data") if shapes else ""
    live = queue_reads.live(submission=submission)  # place in line, typical duration; {} when finished
    verdict = words.verdict(submission, noisy=noisy, device_name=device_name)
    if live.get("phase") and live["phase"] != QUEUED_PHASE:  # the title says that one already
        verdict["why"] = live["phase"]
    return {
        "submission": submission,
        "is_owner": is_owner,
        "kernel": kernel,
        "finished": submission.is_finished,
        "verdict": verdict,
        "live": live,
        "badge": badge(submission),
        "elapsed_s": words.elapsed_s(submission),
        "reasons": words.reasons(submission),
        "shapes": shapes,
        "widest_band_pct": band,
        "noisy": noisy,
        "figure": figure,
        "tests": words.tests(report),
        "tests_not_run": words.tests_not_run(report, submission.task),
        "phases": words.phases(report),
        "gpu_state": words.gpu_state(report),
        "code_visible": code_visible,
        "logs": logs[-LOG_TAIL_CHARS:],
        "logs_truncated": len(logs) > LOG_TAIL_CHARS,
        "device_name": device_name,
        # which of the host's GPUs ran it, by index and UUID (two workers on two GPUs)
        "gpu_index": report.gpu_index if report else None,
        "gpu_uuid": (report.gpu_uuid if report else None) or "",
        "tryout": words.is_tryout(submission.device_type),
        "versions": words.versions(submission),
        "box": box_line(report),
        "calibration": selectors.calibration_for_task(task=submission.task, device_type=submission.device_type),
        "profile": profile_context(submission, request.user),
        "worker_note": _worker_note(submission),
    }


def box_line(report) -> str:
    """Which box ran the evaluation (an evaluator.Report's box), in one line ("bubblewrap 0.8.0", "Docker 20.10.24, image
    kernelboard-sandbox:local-0123 (sha256:4567...)"); the sandbox writes it on the host after the
    box exits. Empty for a report without one (older reports, an evaluation without a sandbox)."""
    box = report.box if report else None
    if not box or not box.backend:
        return ""
    name = {"docker": "Docker"}.get(box.backend, str(box.backend))
    line = f"{name} {box.version}" if box.version else name
    if box.image:
        line += f", image {box.image}"
        if box.image_id:
            line += f" ({str(box.image_id)[:19]})"
    return line


def _worker_note(submission: Submission) -> str:
    """What the page says when no live worker will finish this submission soon (liveness.py)."""
    from leaderboard import liveness
    from leaderboard.routing import eval_queue_for

    if submission.is_finished:
        return ""
    # the page polls this every 2 s: one scan of this submission's queue only
    queue = eval_queue_for(submission.device_type)
    live = liveness.live_workers(queue=queue)
    if live is None:
        return ""
    nodes = live.get(queue, [])
    if submission.status == Submission.Status.RUNNING:
        if submission.worker and submission.worker not in nodes:
            return ("The worker that was evaluating this submission has stopped answering. It is queued again "
                    "automatically and evaluated from the start; nothing is lost.")
        return ""
    if not nodes:
        return ("No worker is running for this device right now. The submission keeps its place in the queue "
                "and is evaluated once a worker starts.")
    return ""


def submission_detail(request, pk: int):
    submission = _submission_for(request, pk)
    if submission is None:
        return redirect_to_login(request.get_full_path())
    context = _result_context(request, submission)
    if context["code_visible"]:
        context["code_html"] = highlight_python(submission.source)
    context["code_open_reason"] = selectors.code_open_reason(submission=submission)
    context["competitions"] = competitions_for_submission(submission=submission)
    if submission.can_view(request.user):
        context["audit_entries"] = selectors.audit_for_submission(submission=submission)
    return render(request, "web/submission_detail.html", context)


def submission_status(request, pk: int):
    """The live part of the submission page, polled by htmx until the submission is finished."""
    submission = _submission_for(request, pk)
    if submission is None:
        return redirect_to_login(request.get_full_path())
    return render(request, "web/_submission_status.html", _result_context(request, submission))


@require_POST
def submission_publish(request, pk: int):
    """The owner opens the code to every visitor."""
    submission = selectors.submission_for_viewer(submission_id=pk, user=request.user)
    if submission is None:
        raise Http404("No such submission")
    if request.POST.get("confirm") != "yes":
        # publishing cannot be undone: one click on the button alone does not do it
        messages.error(request, "Nothing was published: tick the box that says you want every visitor to read "
                                "this code, then press the button again.")
        return redirect("submission_detail", pk=pk)
    try:
        services.submission_publish(submission=submission, actor=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, "The code is now public: every visitor can read it.")
    return redirect("submission_detail", pk=pk)
