"""Competitions in the JSON API: the list, one competition with its standings, and its export.

Public like the pages (no token needed; nothing here depends on who asks). Every rule is the
pages' own, read from the same places: the state, the standings (live until the freeze, then the
frozen entries less the disqualified ones), what the freeze waits for and what is after the
deadline from leaderboard/selectors/competitions.py, whether code is open from
selectors.code_open_reasons, the file from leaderboard/selectors/export.py. The detail and the export
freeze a competition that is due first, as its page and the page's download do.
"""
from __future__ import annotations

import re

from django.urls import reverse
from django.utils import timezone
from ninja import Router

from leaderboard import selectors
from leaderboard.api.errors import Refusal, documented
from leaderboard.api.schemas import CompetitionDetail, CompetitionList
from leaderboard.api.views import iso_utc
from leaderboard.models import Competition, Submission
from leaderboard.selectors import competitions as reads
from leaderboard.selectors.export import NotReady
from leaderboard.services import competitions
from leaderboard.web.views.competition import export_download

# what Competition.slug holds (a SlugField of 64): anything else names no competition, and is
# answered before it reaches the database (a NUL byte would not even make a query)
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,64}")
# upcoming, open or closed; `final` tells a closed one's frozen standings from settling ones
STATES = {reads.UPCOMING: "upcoming", reads.OPEN: "open", reads.SETTLING: "closed", reads.FROZEN: "closed"}

router = Router(tags=["competitions"])


def _competition(slug: str) -> Competition:
    """The competition, or a 404 that says why there is none."""
    if not SLUG.fullmatch(slug):
        raise Refusal(404, f"{slug[:80]!r} is not a competition's name: names are 1 to 64 letters, "
                           "digits, hyphens and underscores (GET /api/competitions lists them).")
    found = Competition.objects.filter(slug=slug).first()
    if found is None:
        raise Refusal(404, f"No competition named {slug!r} (GET /api/competitions lists them).")
    return found


def _summary(request, competition: Competition, state: str) -> dict:
    final = state == reads.FROZEN
    url = request.build_absolute_uri
    return {
        "slug": competition.slug,
        "title": competition.title,
        "url": url(reverse("api:competition", args=[competition.slug])),
        "page": url(competition.get_absolute_url()),
        "tasks": sorted(t.name for t in competition.tasks.all()),
        "devices": list(competition.device_types),
        "opens_at": iso_utc(competition.opens_at),
        "closes_at": iso_utc(competition.closes_at),
        "state": STATES[state],
        "final": final,
        "frozen_at": iso_utc(competition.frozen_at),
        "export": url(reverse("api:competition-export", args=[competition.slug])) if final else None,
    }


@router.get("/competitions", summary="Competitions", url_name="competitions",
            response={200: CompetitionList, **documented()})
def competition_list(request):
    """Every competition: open ones first (closing soonest first), then upcoming, then the
    closed, newest first. No pages: there are few."""
    items = reads.competition_list()
    return {"competitions": [_summary(request, c, c.state) for c in items]}


def _code_open(submission_ids: list[int]) -> dict[int, bool]:
    """{id: whether its code is open to every visitor}: two queries for any number of rows."""
    rows = Submission.objects.filter(pk__in=submission_ids).only("pk", "hidden", "published_at", "code_withheld_at")
    return {pk: bool(reason) for pk, reason in selectors.code_open_reasons(submissions=rows).items()}


def _links(request, submission_id: int) -> dict:
    return {"url": request.build_absolute_uri(reverse("api:submission", args=[submission_id])),
            "page": request.build_absolute_uri(reverse("submission_detail", args=[submission_id]))}


def _entry(request, row: dict, code_open: dict[int, bool]) -> dict:
    entry = {"rank": row["rank"], "user": row["username"], "submission": row["submission_id"],
             **_links(request, row["submission_id"]),
             "speedup_vs_compile": row["speedup_vs_compile"], "speedup_vs_eager": row["speedup_vs_eager"],
             "pct_of_floor": row["pct_of_floor"], "uploaded_at": iso_utc(row["date"]),
             "code_open": code_open.get(row["submission_id"], False)}
    if "rank_at_freeze" in row:
        entry["rank_at_freeze"] = row["rank_at_freeze"]
    return entry


def _removed(request, row: dict, code_open: dict[int, bool]) -> dict:
    """A frozen entry a disqualification took out, as the page's "Changes after the close" lists it."""
    return {"rank_at_freeze": row["rank"], "user": row["username"], "submission": row["submission_id"],
            **_links(request, row["submission_id"]), "uploaded_at": iso_utc(row["date"]),
            "removed_at": iso_utc(row["removed_at"]), "removed_by": row["removed_by"], "reason": row["reason"],
            "code_open": code_open.get(row["submission_id"], False)}


def _late(request, sub: Submission, code_open: dict[int, bool]) -> dict:
    return {"user": sub.user.get_username(), "submission": sub.pk, **_links(request, sub.pk),
            "task": sub.task.name, "device_type": sub.device_type,
            "speedup_vs_compile": sub.speedup_vs_compile, "speedup_vs_eager": sub.speedup_vs_eager,
            "uploaded_at": iso_utc(sub.created_at), "code_open": code_open.get(sub.pk, False)}


# {slug} takes any text (Django's str converter), not only a slug: a malformed name gets the 404
# that says why it is no competition's name
@router.get("/competitions/{slug}", summary="A competition and its standings", url_name="competition",
            exclude_unset=True, response={200: CompetitionDetail, **documented(404)})
def competition_detail(request, slug: str):
    """The list's fields, the text, the standings per task and device type, what the freeze
    waits for while it waits, and the uploads after the deadline (never in the standings).
    Freezes a due competition first, as its page does."""
    competition = _competition(slug)
    now = timezone.now()
    competitions.competition_freeze_if_due(competition=competition, now=now)
    state = reads.competition_state(competition=competition, now=now)
    boards = reads.standings(competition=competition)
    late = reads.after_deadline(competition=competition) if now >= competition.closes_at else []
    ids = [r["submission_id"] for b in boards for r in b.rows + b.removed] + [s.pk for s in late]
    code_open = _code_open(ids)
    data = _summary(request, competition, state)
    data["text"] = competition.text
    if state == reads.SETTLING:
        # flagged results are their owners' and staff's: the API, like the page to visitors, says how many
        data["evaluating"] = reads.evaluating_count(competition=competition)
        data["awaiting_review"] = len(reads.awaiting_review(competition=competition))
    data["boards"] = [
        {"task": b.task.name, "device_type": b.device_type,
         "entries": [_entry(request, r, code_open) for r in b.rows],
         "removed": [_removed(request, r, code_open) for r in b.removed]}
        for b in boards
    ]
    data["after_deadline"] = [_late(request, s, code_open) for s in late]
    return data


EXPORT_DOC = {"responses": {
    200: {"content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
    404: {"description": "No such competition, or its standings are not final yet: then the error has "
                           "`state` and `final` (false)."},
}}


@router.get("/competitions/{slug}/export.jsonl", summary="Its final standings as JSON Lines",
            url_name="competition-export", openapi_extra=EXPORT_DOC,
            response={200: None, **documented(404)})
def competition_export(request, slug: str):
    """The page's download, the same bytes (JSON Lines), once the standings are frozen."""
    competition = _competition(slug)
    try:
        return export_download(competition)
    except NotReady as exc:
        state = reads.competition_state(competition=competition)
        raise Refusal(404, str(exc), "not_final", state=STATES[state], final=False) from None
