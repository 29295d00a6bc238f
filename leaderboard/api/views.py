"""The JSON API for scripts and agents: submit, status and result, as django-ninja operations on
`router` (the tasks and their boards are leaderboard/api/task_views.py, the competitions
leaderboard/api/competition_views.py).

Errors are raised as errors.Refusal and answered in the API's one error shape. Uploads go through
the same service as the browser form, so validation and the per-user rate limit are the same; their
bodies are read by leaderboard/api/upload_body.py.
"""
import json
import re
from datetime import timezone as dt_timezone
from typing import Annotated, Optional

from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import condition
from ninja import Header, Query, Router, Status
from pydantic import BaseModel, BeforeValidator, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

from leaderboard import selectors, services
from leaderboard.api import owncache
from leaderboard.selectors import queue as queue_reads
from leaderboard.services import profiling
from leaderboard.api.auth import (AUTH_REQUIRED, OPTIONAL_SECURITY, TOKEN, TOKEN_OPTIONAL, TOKEN_OPTIONAL_STAMPED,
                                  TOKEN_STAMPED)
from leaderboard.api.errors import Refusal, documented
from leaderboard.api.schemas import SourceOut, SubmissionForm, SubmissionIn, SubmissionOut, SubmissionPage
from leaderboard.api.upload_body import upload_fields
from leaderboard.models import Submission, Task
from leaderboard.serving.asgi_wait import WAIT_MAX_S

router = Router(tags=["submissions"])


def iso_utc(dt) -> str | None:
    """A moment as the API writes it: ISO 8601 in UTC."""
    return dt.astimezone(dt_timezone.utc).isoformat() if dt else None


_ID = 918273645546372819  # stands for the id in a link's template: no host or path holds it


def link(request, name: str, pk: int) -> str:
    """The absolute address of URL `name` for object `pk`. A page of 100 submissions needs 300
    links: each request reverses each name once and fills its template after that (reverse() was
    a fifth of the list's time)."""
    templates = request.__dict__.setdefault("_lb_link_templates", {})
    template = templates.get(name)
    if template is None:
        template = templates[name] = request.build_absolute_uri(reverse(name, args=[_ID])).rpartition(str(_ID))
    head, _, tail = template
    return f"{head}{pk}{tail}"


def vs_compile_json(row) -> dict:
    """A scored result's standing against torch.compile (scoring.vs_compile) and its interval;
    nulls for one without a speedup. `row` is a Submission or a dict of its fields."""
    get = row.get if isinstance(row, dict) else lambda key: getattr(row, key)
    return {"vs_compile": get("vs_compile") or None, "vs_compile_low": get("vs_compile_low"),
            "vs_compile_high": get("vs_compile_high")}


def submission_json(request, sub: Submission, summary: bool = False) -> dict:
    """A submission as the API shows it; `summary` leaves out the bulky parts (lists)."""
    data = {
        "id": sub.pk,
        "url": link(request, "api:submission", sub.pk),
        "task": sub.task.name,
        "mode": sub.mode,
        "device_type": sub.device_type,
        "filename": sub.filename,
        "status": sub.status,
        "phase": sub.phase,
        "finished": sub.is_finished,
        "created_at": iso_utc(sub.created_at),
        "started_at": iso_utc(sub.started_at),
        "finished_at": iso_utc(sub.finished_at),
        "attempts": sub.attempts,
        "page": link(request, "submission_detail", sub.pk),
    }
    if not sub.is_finished:  # a queued one's place in line as its phase; the typical duration
        live = queue_reads.live(submission=sub)
        data.update({key: live[key] for key in ("phase", "queue_position", "elapsed_s", "typical_s")})
    if sub.status == Submission.Status.DONE:  # a stored result; the status, not the deferred report
        data["report"] = link(request, "api:submission-report", sub.pk)
    if sub.is_finished and summary:
        data.update({"verdict": sub.verdict, "speedup_vs_compile": sub.speedup_vs_compile, **vs_compile_json(sub),
                     "speedup_vs_eager": sub.speedup_vs_eager, "ranked": sub.is_ranked, "hidden": sub.hidden})
    elif sub.is_finished:
        report = sub.typed_report
        data.update({
            "verdict": sub.verdict,
            "reasons": sub.reasons,
            "reason_codes": sub.reason_codes,
            "speedup_vs_compile": sub.speedup_vs_compile,
            **vs_compile_json(sub),
            "speedup_vs_eager": sub.speedup_vs_eager,
            "pct_of_floor": sub.pct_of_floor,
            "ranked": sub.is_ranked,
            "hidden": sub.hidden,
            "gpu_name": sub.gpu_name,
            "gpu_index": report.gpu_index if report else None,
            "gpu_uuid": report.gpu_uuid if report else None,
            "versions": sub.versions,
            "shapes": selectors.shape_rows(submission=sub),
            "tests": [row.to_json() for row in report.tests] if report else [],
            "logs": sub.logs,
            "error": sub.error,
        })
        if sub.mode == Submission.Mode.PROFILE:
            data["profile"] = report.to_json()["profile"] if report else None
            if profiling.profile_file_size(submission=sub):
                data["profile_file"] = request.build_absolute_uri(reverse("api:submission-profile-file",
                                                                          args=[sub.pk]))
    return data


# --- the upload ---------------------------------------------------------------------------------

def _idempotency_key(value):
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"[\x20-\x7e]{1,255}", value) or not value.strip():
        raise PydanticCustomError("lb_invalid", "{message}", {
            "message": "The Idempotency-Key header must be 1 to 255 printable ASCII characters (a UUID will do)."})
    return value


IdempotencyKey = Annotated[Optional[str], BeforeValidator(_idempotency_key), WithJsonSchema({
    "type": "string", "minLength": 1, "maxLength": 255,
    "description": "A new key (a UUID) per upload; a retry of the upload sends the same key."})]

UPLOADS_LEFT_DOC = {
    "X-Uploads-Left": {"description": "Uploads the hourly limit still takes (any mode counts).",
                       "schema": {"type": "integer"}},
    "X-Uploads-Limit": {"description": "The hourly upload limit.", "schema": {"type": "integer"}},
}

UPLOAD_DOC = {
    "requestBody": {"required": True, "content": {
        "application/json": {"schema": SubmissionIn.model_json_schema()},
        "multipart/form-data": {"schema": SubmissionForm.model_json_schema()},
    }},
    "responses": {
        200: {"description": "The submission made earlier under the same Idempotency-Key; nothing new "
                             "was created.", "headers": UPLOADS_LEFT_DOC},
        201: {"description": "Created and queued.", "headers": UPLOADS_LEFT_DOC},
        422: {"description": "The Idempotency-Key was sent with another upload in the last 24 hours."},
        429: {"headers": {"Retry-After": {"description": "Seconds until the limit's window ends.",
                                          "schema": {"type": "integer"}}, **UPLOADS_LEFT_DOC}},
    },
}


@router.post("/submissions", summary="Upload a kernel", auth=TOKEN, url_name="submissions", exclude_unset=True,
             openapi_extra=UPLOAD_DOC,
             response={201: SubmissionOut, 200: SubmissionOut, **documented(400, 401, 403, 404, 413, 415, 422, 429)})
def submission_create(request, response: HttpResponse,
                      idempotency_key: IdempotencyKey = Header(None, alias="Idempotency-Key")):
    """Upload a kernel: JSON or a multipart form. With an `Idempotency-Key` header (any unique
    string, such as a UUID), a repeat of the same upload with the same key within 24 hours answers
    200 with the first submission and creates nothing; the same key with another upload is a 422.
    The answer says how many uploads the hourly limit still takes: `X-Uploads-Left` (and
    `X-Uploads-Limit`, the limit itself), as the upload form does."""
    upload = upload_fields(request)
    try:
        if idempotency_key:
            sub, created = services.submission_create_once(user=request.user, key=idempotency_key, **upload)
        else:
            sub, created = services.submission_create(user=request.user, **upload), True
    except services.RateLimited as exc:
        retry = str((exc.params or {}).get("retry_after_s", 3600))
        raise Refusal(429, " ".join(exc.messages), exc.code or "rate_limited",
                      headers={"Retry-After": retry, **_allowance_headers(request.user)}) from None
    except services.KeyReused as exc:
        raise Refusal(422, " ".join(exc.messages), exc.code, submission=exc.params["submission"]) from None
    except services.NotAllowed as exc:
        raise Refusal(403, " ".join(exc.messages), exc.code) from None
    except ValidationError as exc:
        code = getattr(exc, "code", None) or exc.error_list[0].code
        raise Refusal(404 if code == "unknown_task" else 400, " ".join(exc.messages), code) from None
    for name, value in _allowance_headers(request.user).items():
        response[name] = value
    return Status(201 if created else 200, submission_json(request, sub))


def _allowance_headers(user) -> dict[str, str]:
    """How many uploads the hourly limit still takes (services.upload_allowance)."""
    allowance = services.upload_allowance(user=user)
    return {"X-Uploads-Left": str(allowance["left"]), "X-Uploads-Limit": str(allowance["limit"])}


# --- reading submissions ----------------------------------------------------------------------------

def _not_found(submission_id: int) -> Refusal:
    """The answer for an id the caller may not read, whether or not it exists: the web's 404, so
    that nobody learns that someone else's private submission is there."""
    return Refusal(404, f"No submission #{submission_id} that you can read.")


def _owned(request, submission_id: int) -> Submission:
    """The submission when the caller is its owner or staff. Else a 404 for no such id and for
    someone else's private one; a 403 for someone else's public one (its page shows that it
    exists), whose stored report stays its owner's and staff's."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    if sub is not None and sub.can_view(request.user):
        return sub
    if sub is not None and selectors.submission_is_public(submission=sub):
        raise Refusal(403, f"Submission #{submission_id} is public, but its stored report is its owner's and "
                           "staff's.", "owner_only")
    raise _not_found(submission_id)


# What anyone else reads of a public submission (a ranked entry, or one whose code is open): what
# its page shows every visitor. The logs follow the code (selectors.code_visible); the stored
# report and the profile stay with the owner and staff. A field added to submission_json stays
# out of here until someone decides it is public.
PUBLIC_FIELDS = ("id", "url", "task", "mode", "device_type", "filename", "status", "phase", "finished",
                 "created_at", "started_at", "finished_at", "page", "verdict", "reasons", "reason_codes",
                 "speedup_vs_compile", "vs_compile", "vs_compile_low", "vs_compile_high", "speedup_vs_eager",
                 "pct_of_floor", "ranked", "hidden", "gpu_name",
                 "gpu_index", "gpu_uuid", "versions", "shapes", "tests", "error")


def _readable(request, submission_id: int) -> tuple[Submission, bool]:
    """(the submission, whether the caller is its owner or staff) when the caller may read it:
    their own, or a public one (the rule of its page, selectors.submission_is_public). Else 401
    without a token, else 404, for no such id and for someone else's private one alike."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    own = sub is not None and sub.can_view(request.user)
    if sub is not None and (own or selectors.submission_is_public(submission=sub)):
        return sub, own
    if not request.user.is_authenticated:
        raise Refusal(401, AUTH_REQUIRED)
    raise _not_found(submission_id)


def _whole_number(name: str, default: int, high: int | None = None, low: int = 1):
    """A query parameter that is a whole number from `low` (to `high`), refused in the API's words."""

    def check(value):
        if value in (None, ""):
            return default
        try:
            n = int(value)
        except (TypeError, ValueError):
            raise PydanticCustomError("lb_invalid", "{message}", {
                "message": f"'{name}' must be a whole number, not {str(value)[:20]!r}."}) from None
        if n < low or (high is not None and n > high):
            raise PydanticCustomError("lb_invalid", "{message}", {
                "message": f"'{name}' must be between {low} and {high or 'the last page'}."})
        return n

    return Annotated[int, Field(ge=low, le=high), BeforeValidator(check)]


class DetailQuery(BaseModel):
    wait: _whole_number("wait", 0, WAIT_MAX_S, low=0) = Field(0, description=(
        f"Seconds (at most {WAIT_MAX_S}) to hold the answer until the submission finishes; it "
        "answers as soon as it does, or with the state at that time. 0: at once."))


def render(schema, data: dict, *, exclude_unset: bool = False) -> bytes:
    """The body ninja answers for `data` under `schema`, made here for the answers that are kept
    (api/owncache, task_views._public): checked against the schema when built."""
    return json.dumps(schema.model_validate(data).model_dump(mode="json", exclude_unset=exclude_unset),
                      cls=DjangoJSONEncoder).encode()


def _detail(request, submission_id: int) -> tuple[dict, Submission]:
    """(the answer, the submission)."""
    sub, own = _readable(request, submission_id)
    reason = selectors.code_open_reason(submission=sub)
    data = submission_json(request, sub)
    if not own:
        data = {k: v for k, v in data.items() if k in PUBLIC_FIELDS + (("logs",) if reason else ())}
    # the caller's own: what lets a client say "yours" only to its owner, as the result page does
    data["yours"] = request.user.is_authenticated and sub.user_id == request.user.pk
    data["code_open"] = bool(reason)
    data["code_open_reason"] = reason
    data["source"] = (link(request, "api:submission-source", sub.pk)
                      if own or reason else None)
    return data, sub


@router.get("/submissions/{int:submission_id}", summary="One submission", auth=TOKEN_OPTIONAL_STAMPED, url_name="submission",
            exclude_unset=True, openapi_extra=OPTIONAL_SECURITY, response={200: SubmissionOut, **documented(400, 401, 404)})
@condition(etag_func=owncache.etag)  # If-None-Match: 304 while the caller's own answer stands
def submission_detail(request, submission_id: int, query: Query[DetailQuery]):
    """One submission: everything for its owner and staff, the public part of a public one for
    anyone else (no token needed). `source` links to the code wherever the caller may read it;
    the code itself stays out of here, which clients poll while the evaluation runs. With
    `?wait=S` the answer waits until the submission finishes or S seconds pass: one request
    instead of a polling loop."""
    # The waiting is the web server's (leaderboard/serving/asgi_wait.py): it asks this view without
    # `wait`, holds an unfinished answer and asks again when the submission finishes. A `wait`
    # that reaches the view (a WSGI server, a bad value) is checked here and answered at once.
    def build():
        data, sub = _detail(request, submission_id)
        # kept for its owner only (staff see others' too); not a profile run's, which names its
        # stored file, whose rows the stamp does not follow
        keep = sub.user_id == request.user.pk and sub.mode != Submission.Mode.PROFILE
        return owncache.Built(render(SubmissionOut, data, exclude_unset=True), own=keep,
                              unfinished=not sub.is_finished)

    return owncache.answer(request, build)


@router.get("/submissions/{int:submission_id}/source", summary="Its code", auth=TOKEN_OPTIONAL,
            url_name="submission-source", openapi_extra=OPTIONAL_SECURITY,
            response={200: SourceOut, **documented(401, 403, 404)})
def submission_source(request, submission_id: int):
    """The code: for its owner and staff, and for anyone while it is open (selectors.code_open_reason)."""
    sub, own = _readable(request, submission_id)
    reason = selectors.code_open_reason(submission=sub)
    if not (own or reason):
        raise Refusal(403, f"The code of submission #{submission_id} is its owner's and staff's: it opens when "
                           "its owner publishes it or it is an entry in a competition's final standings.", "owner_only")
    return {"id": sub.pk, "filename": sub.filename, "code_open": bool(reason), "code_open_reason": reason,
            "source": sub.source}


@router.get("/submissions/{int:submission_id}/report", summary="Its stored report", auth=TOKEN,
            url_name="submission-report", response={200: dict, **documented(401, 403, 404)})
def submission_report(request, submission_id: int):
    """The evaluator's report of a finished submission, as stored (owner or staff)."""
    sub = _owned(request, submission_id)
    if sub.report is None:
        raise Refusal(404, f"Submission #{submission_id} has no report yet ({sub.status}).")
    return sub.report


BINARY = {"responses": {200: {"content": {"application/octet-stream": {
    "schema": {"type": "string", "format": "binary"}}}}}}


@router.get("/submissions/{int:submission_id}/profile.ncu-rep", summary="Its Nsight Compute report", auth=TOKEN,
            url_name="submission-profile-file", openapi_extra=BINARY, response={200: None, **documented(401, 404)})
def submission_profile_file(request, submission_id: int):
    """The .ncu-rep of a profile run (owner or staff), as the result page offers it."""
    from leaderboard.web.profile_view import ncu_rep_response

    stored = profiling.profile_file_for_viewer(submission_id=submission_id, user=request.user)
    if stored is None:
        raise Refusal(404, f"Submission #{submission_id} has no profile file you can read.")
    return ncu_rep_response(stored, submission_id)


# --- your submissions, page by page -------------------------------------------------------------------

PAGE_SIZE = 20
PAGE_SIZE_MAX = 100


class ListQuery(BaseModel):
    page: _whole_number("page", 1) = 1
    per_page: _whole_number("per_page", PAGE_SIZE, PAGE_SIZE_MAX) = PAGE_SIZE
    task: Optional[str] = Field(None, description="Only this task's.")


@router.get("/submissions", summary="Your submissions", auth=TOKEN_STAMPED, url_name="submission-list",
            exclude_unset=True, response={200: SubmissionPage, **documented(400, 401, 404)})
@condition(etag_func=owncache.etag)
def submission_list(request, query: Query[ListQuery]):
    """Your own submissions, newest first, with the same fields as one submission minus logs,
    tests and per-shape rows."""
    def build():
        data = _page(request, query)
        return owncache.Built(render(SubmissionPage, data, exclude_unset=True), own=True,
                              unfinished=any(not row["finished"] for row in data["results"]))

    return owncache.answer(request, build)


def _page(request, query: ListQuery) -> dict:
    qs = selectors.submission_summaries_for_user(user=request.user)
    if query.task:
        # a NUL names no task, and PostgreSQL cannot even compare one
        if "\x00" in query.task or not Task.objects.filter(name=query.task).exists():
            raise Refusal(404, f"No task named {query.task[:64]!r} (GET /api/tasks lists them).", "unknown_task")
        qs = qs.filter(task__name=query.task)
    total = qs.count()
    pages = max(1, -(-total // query.per_page))
    if query.page > pages:
        raise Refusal(404, f"No page {query.page}: there are {pages}.")
    rows = qs[(query.page - 1) * query.per_page: query.page * query.per_page]

    def link(n):
        params = request.GET.copy()
        params["page"] = str(n)
        return request.build_absolute_uri(f"{request.path}?{params.urlencode()}")

    return {
        "count": total, "page": query.page, "pages": pages, "per_page": query.per_page,
        "next": link(query.page + 1) if query.page < pages else None,
        "previous": link(query.page - 1) if query.page > 1 else None,
        "results": [submission_json(request, sub, summary=True) for sub in rows],
    }
