"""Two submissions side by side: verdicts, speedups, per-shape times, the reports' reasons,
checks and phases, and a diff of their code. Either may be the viewer's own or a public one
(selectors.submission_for_viewer decides, as for its own page); the diff needs both codes open
to the viewer (selectors.code_visible) and sources small enough to diff here (leaderboard/web/diff.py)."""
from __future__ import annotations

from django.shortcuts import render

from leaderboard import selectors
from leaderboard.models import Submission
from leaderboard.web import result as words
from leaderboard.web.competition_forms import CompareForm
from leaderboard.web.diff import DIFF_MAX_LINE_PAIRS, DIFF_MAX_SIDE_LINES, submissions_diff
from leaderboard.web.present import badge, device_label, shape_label

RECENT_OWN = 20


def _side(submission: Submission, user) -> dict:
    device_name = device_label(submission.device_type)
    return {
        "submission": submission,
        "badge": badge(submission),
        "verdict": words.verdict(submission, noisy=False, device_name=device_name),
        "device_name": device_name,
        "reasons": words.reasons(submission),
        "tests": words.tests(submission.typed_report),
        "phases": words.phases(submission.typed_report),
        "versions": words.versions(submission),
        "code_visible": selectors.code_visible(submission=submission, user=user),
        "shapes": {shape_label(r.get("shape") or {}): r for r in selectors.shape_rows(submission=submission)},
    }


def _shape_table(a: dict, b: dict) -> list[dict]:
    """One row per benchmark shape either ran, in the order they ran; `ratio` is B's time over
    A's where both ran it on the same device type (times on different devices do not compare)."""
    same_device = a["submission"].device_type == b["submission"].device_type
    labels = list(a["shapes"]) + [s for s in b["shapes"] if s not in a["shapes"]]
    rows = []
    for label in labels:
        ra, rb = a["shapes"].get(label, {}), b["shapes"].get(label, {})
        ta, tb = ra.get("candidate_ms"), rb.get("candidate_ms")
        rows.append({"shape": label, "a": ra, "b": rb,
                     "ratio": tb / ta if same_device and ta and tb else None})
    return rows


def _not_visible(form, field: str, number: int) -> None:
    form.add_error(field, f"There is no submission #{number} you may see: choose one of yours or a public one "
                          "(an entry on a leaderboard, or one whose code is open).")


def compare(request):
    own = []
    if request.user.is_authenticated:
        own = list(selectors.submissions_for_user(user=request.user)[:RECENT_OWN])
    if "a" not in request.GET or "b" not in request.GET:
        # the result page's link names one side: the form, filled in with it, asks for the other
        initial = {k: request.GET[k] for k in ("a", "b") if request.GET.get(k, "").isdigit()}
        return render(request, "web/compare.html", {"form": CompareForm(initial=initial), "own": own})
    form = CompareForm(request.GET)
    sides = {}
    if form.is_valid():
        for field in ("a", "b"):
            sub = selectors.submission_for_viewer(submission_id=form.cleaned_data[field], user=request.user)
            if sub is None:
                _not_visible(form, field, form.cleaned_data[field])
            else:
                sides[field] = _side(sub, request.user)
    if form.errors:
        return render(request, "web/compare.html", {"form": form, "own": own}, status=400)
    a, b = sides["a"], sides["b"]
    both_open = a["code_visible"] and b["code_visible"]
    return render(request, "web/compare.html", {
        "form": form, "own": own, "a": a, "b": b,
        "rows": _shape_table(a, b),
        "same_device": a["submission"].device_type == b["submission"].device_type,
        "same_task": a["submission"].task_id == b["submission"].task_id,
        "diff": submissions_diff(a["submission"], b["submission"], f"#{a['submission'].pk}",
                                 f"#{b['submission'].pk}") if both_open else None,
        "diff_max_side": f"{DIFF_MAX_SIDE_LINES:,}", "diff_max_pairs": f"{DIFF_MAX_LINE_PAIRS:,}",
    })
