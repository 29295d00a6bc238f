"""The audit console: the staff's own pages for the review queue and the decision on each item.
The Django admin stays for raw data."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from leaderboard import selectors, services
from leaderboard.models import Submission
from leaderboard.selectors import competitions as competition_reads
from leaderboard.web import result as words
from leaderboard.web.diff import submissions_diff
from leaderboard.web.forms import AuditDecisionForm
from leaderboard.web.present import device_label, highlight_python, shape_label
from leaderboard.web.staff import staff_only

DECISIONS = {
    "approve": services.submission_approve,
    "disqualify": services.submission_disqualify,
    "rerun": services.submission_rerun,
}


@staff_only
def queue(request):
    reason = request.GET.get("reason", "")
    now = timezone.now()
    items = selectors.audit_queue(reason_code=reason)
    holding = competition_reads.reviews_holding(now=now)
    for item in items:
        item.competitions = holding.get(item.pk, [])
        item.age_s = (now - (item.finished_at or item.created_at)).total_seconds()  # since it was flagged
        item.reason_words = [{"code": r["code"], "words": r["words"] or r["text"]} for r in words.reasons(item)]
        item.device_name = device_label(item.device_type)
    waiting = {}  # closed competitions whose freeze waits for reviews: {competition: [ids]}
    for pk, competitions in holding.items():
        for c in competitions:
            if c.closes_at <= now:
                waiting.setdefault(c, []).append(pk)
    return render(request, "web/audit_queue.html", {
        "items": items, "reason": reason, "reasons": selectors.audit_queue_reasons(),
        "waiting": sorted(waiting.items(), key=lambda kv: kv[0].closes_at),
        "reason_words": words.REASON_WORDS,
        "failures": selectors.infrastructure_failures(),
    })


@staff_only
def rejected(request):
    """Who tried what: the latest rejected evaluations with their reasons, by reason or user."""
    reason = request.GET.get("reason", "")[:64]
    username = request.GET.get("user", "")[:150]
    items = selectors.rejected_recent(reason_code=reason, username=username)
    for entry in items:
        entry.reason_words = [{"code": r["code"], "words": r["words"] or r["text"]} for r in words.reasons(entry)]
        entry.device_name = device_label(entry.device_type)
    return render(request, "web/audit_rejected.html", {
        "items": items, "reason": reason, "user_filter": username,
        "users": selectors.rejected_by_user(), "window": selectors.REJECTED_WINDOW,
    })


@staff_only
def item(request, pk: int):
    submission = Submission.objects.select_related("task", "user", "approved_by").filter(pk=pk).first()
    if submission is None:
        raise Http404("No such submission")
    earlier = selectors.earlier_submissions(submission=submission)
    last = earlier[0] if earlier else None
    shapes = [{**row, "shape": shape_label(row.get("shape") or {})}
              for row in selectors.shape_rows(submission=submission)]
    return render(request, "web/audit_item.html", {
        "submission": submission,
        "device_name": device_label(submission.device_type),
        "reasons": words.reasons(submission),
        "findings": words.finding_lines(submission),
        "code_html": highlight_python(submission.source, marked=words.finding_lines(submission)),
        "shapes": shapes,
        "tests": words.tests(submission.typed_report),
        "earlier": earlier,
        "last": last,
        "diff": submissions_diff(last, submission, f"#{last.pk}", f"#{submission.pk}") if last else None,
        "audit_entries": selectors.audit_for_submission(submission=submission),
        "form": AuditDecisionForm(),
        "public": selectors.submission_is_public(submission=submission),
        "code_open_reason": selectors.code_open_reason(submission=submission),
        "can": applicable(submission),
    })


def applicable(submission: Submission) -> dict:
    """The decisions that apply to it now, by the services' own rules (leaderboard/services/audit.py):
    the page offers only these, so that a button never leads to a refusal."""
    done, failed = Submission.Status.DONE, Submission.Status.FAILED
    return {
        "approve": submission.status == done and submission.verdict == Submission.Verdict.FLAGGED
        and not submission.hidden,
        "disqualify": submission.status == done and not submission.hidden,
        "rerun": submission.status in (done, failed),
        "flagged": submission.status == done and submission.verdict == Submission.Verdict.FLAGGED,
    }


DONE = {"approve": "approved: it ranks", "disqualify": "disqualified: hidden from every leaderboard",
        "rerun": "queued for a new evaluation"}


@staff_only
@require_POST
def decide(request, pk: int):
    return staff_decision(request, pk, AuditDecisionForm, DECISIONS, DONE)


def staff_decision(request, pk: int, form_class, decisions: dict, done: dict):
    """A staff decision on one submission from the console's item page: the form's `action` picks
    the service in `decisions`, which audits it; the outcome or the problems come back as
    messages on the item page."""
    submission = Submission.objects.filter(pk=pk).first()
    if submission is None:
        raise Http404("No such submission")
    form = form_class(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for e in errors:
                messages.error(request, e)
        return redirect("audit_item", pk=pk)
    action = form.cleaned_data["action"]
    try:
        decisions[action](submission=submission, actor=request.user, reason=form.cleaned_data["reason"])
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"#{pk}: {done[action]}. The audit log has your reason.")
    return redirect("audit_item", pk=pk)
