"""The competitions' public pages: the list, one competition (tasks, standings per device, a
countdown) and its export once the standings are frozen."""
from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from leaderboard.models import Competition
from leaderboard.selectors import competitions as reads
from leaderboard.selectors.export import NotReady, competition_export_lines
from leaderboard.services import competitions
from leaderboard.templatetags.moments import span_words
from leaderboard.web.present import device_label
from leaderboard.web.result import is_tryout

STATE_WORDS = {
    reads.UPCOMING: "upcoming",
    reads.OPEN: "open",
    reads.SETTLING: "closed: the last results are being evaluated",
    reads.FROZEN: "closed: the standings are final",
}


def _competition(slug: str) -> Competition:
    found = Competition.objects.filter(slug=slug).first()
    if found is None:
        raise Http404("No such competition")
    return found


def _countdown(competition: Competition, state: str, now) -> dict | None:
    """What the countdown counts to: the opening of an upcoming competition, the close of an open one."""
    if state == reads.UPCOMING:
        return {"label": "Opens in", "until": competition.opens_at,
                "words": span_words((competition.opens_at - now).total_seconds()), "done": "open now: reload"}
    if state == reads.OPEN:
        return {"label": "Closes in", "until": competition.closes_at,
                "words": span_words((competition.closes_at - now).total_seconds()), "done": "closed: reload"}
    return None


def competition_list(request):
    items = reads.competition_list()
    for c in items:
        c.state_words = STATE_WORDS[c.state]
    return render(request, "web/competition_list.html", {"competitions": items})


def competition_detail(request, slug: str):
    competition = _competition(slug)
    now = timezone.now()
    competitions.competition_freeze_if_due(competition=competition, now=now)
    state = reads.competition_state(competition=competition, now=now)
    boards = reads.standings(competition=competition)
    for board in boards:
        board.device_name = device_label(board.device_type)
        board.tryout = is_tryout(board.device_type)
    late = reads.after_deadline(competition=competition) if now >= competition.closes_at else []
    for s in late:
        s.device_name = device_label(s.device_type)
    settling = state == reads.SETTLING
    return render(request, "web/competition_detail.html", {
        "competition": competition,
        "state": state,
        "state_words": STATE_WORDS[state],
        "countdown": _countdown(competition, state, now),
        "tasks": list(competition.tasks.order_by("name")),
        "devices": [device_label(d) for d in competition.device_types],
        "boards": boards,
        "removed": [(board, r) for board in boards for r in board.removed],
        "evaluating": reads.evaluating_count(competition=competition) if settling else 0,
        # flagged results are their owner's and staff's: visitors learn how many, staff which
        "awaiting_review": reads.awaiting_review(competition=competition) if settling else [],
        "late": late,
        "late_days": settings.COMPETITION_LATE_DAYS,
    })


def export_download(competition: Competition) -> HttpResponse:
    """The export as a download (the API serves the same), freezing a competition that is due
    first. Raises export.NotReady before the freeze."""
    competitions.competition_freeze_if_due(competition=competition)
    body = "".join(competition_export_lines(competition=competition))
    response = HttpResponse(body, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{competition.slug}.jsonl"'
    return response


def competition_export(request, slug: str):
    """The same JSON Lines as `manage.py export --competition SLUG`, once the standings are frozen."""
    try:
        return export_download(_competition(slug))
    except NotReady as exc:
        return HttpResponse(f"{exc}\n", status=409, content_type="text/plain; charset=utf-8")
