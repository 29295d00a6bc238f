"""The audit console's staff pages for competitions (list, create, edit) and for withholding a
submission's code. The Django admin offers the same competition form."""
from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from leaderboard.models import Competition
from leaderboard.selectors import competitions as reads
from leaderboard.services import opencode
from leaderboard.web.competition_forms import CodeDecisionForm, CompetitionForm
from leaderboard.web.staff import staff_only
from leaderboard.web.views.audit import staff_decision


@staff_only
def competition_list(request):
    items = reads.competition_list()
    return render(request, "web/console_competitions.html", {"competitions": items})


def _form_page(request, form, competition=None, status=200):
    return render(request, "web/console_competition_form.html",
                  {"form": form, "competition": competition}, status=status)


def _save(request, form, competition=None):
    if not form.is_valid():
        return _form_page(request, form, competition, status=400)
    try:
        saved = form.save_through_service(actor=request.user)
    except ValidationError as exc:  # a change that raced the form's own check
        form.add_error(None, exc)
        return _form_page(request, form, competition, status=400)
    messages.success(request, f"Competition “{saved.title}” saved.")
    return redirect("competition_detail", slug=saved.slug)


@staff_only
def competition_create(request):
    if request.method == "POST":
        return _save(request, CompetitionForm(request.POST))
    return _form_page(request, CompetitionForm())


@staff_only
def competition_edit(request, slug: str):
    competition = Competition.objects.filter(slug=slug).first()
    if competition is None:
        raise Http404("No such competition")
    if request.method == "POST":
        return _save(request, CompetitionForm(request.POST, instance=competition), competition)
    return _form_page(request, CompetitionForm(instance=competition), competition)


DECISIONS = {"withhold": opencode.submission_withhold, "release": opencode.submission_release}
DONE = {"withhold": "its code is withheld: only its owner and staff can read it",
        "release": "its code is no longer withheld"}


@staff_only
@require_POST
def code_decide(request, pk: int):
    return staff_decision(request, pk, CodeDecisionForm, DECISIONS, DONE)
