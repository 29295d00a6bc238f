"""The JSON API for scripts and agents: submit, status and result, leaderboards (the competitions'
part is leaderboard/api/competition_views.py).

Errors are JSON objects {"error": "..."} with a fitting status code. Uploads go through the same
service as the browser form, so validation and the per-user rate limit are the same.
"""
import json
from datetime import timezone as dt_timezone

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, ValidationError
from django.http.multipartparser import MultiPartParserError
from django.http import JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from leaderboard import profiling, queue_reads, routing, selectors, services
from leaderboard.api.auth import AUTH_REQUIRED, error, token_optional, token_required
from leaderboard.models import Submission, Task


def iso_utc(dt) -> str | None:
    """A moment as the API writes it: ISO 8601 in UTC."""
    return dt.astimezone(dt_timezone.utc).isoformat() if dt else None


def submission_json(request, sub: Submission, summary: bool = False) -> dict:
    """A submission as the API shows it; `summary` leaves out the bulky parts (lists)."""
    data = {
        "id": sub.pk,
        "url": request.build_absolute_uri(reverse("api-submission", args=[sub.pk])),
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
        "page": request.build_absolute_uri(reverse("submission_detail", args=[sub.pk])),
    }
    if not sub.is_finished:  # a queued one's place in line as its phase; the typical duration
        live = queue_reads.live(submission=sub)
        data.update({key: live[key] for key in ("phase", "queue_position", "elapsed_s", "typical_s")})
    if sub.status == Submission.Status.DONE:  # a stored result; the status, not the deferred report
        data["report"] = request.build_absolute_uri(reverse("api-submission-report", args=[sub.pk]))
    if sub.is_finished and summary:
        data.update({"verdict": sub.verdict, "speedup_vs_compile": sub.speedup_vs_compile,
                     "speedup_vs_eager": sub.speedup_vs_eager, "ranked": sub.is_ranked, "hidden": sub.hidden})
    elif sub.is_finished:
        data.update({
            "verdict": sub.verdict,
            "reasons": sub.reasons,
            "reason_codes": sub.reason_codes,
            "speedup_vs_compile": sub.speedup_vs_compile,
            "speedup_vs_eager": sub.speedup_vs_eager,
            "pct_of_floor": sub.pct_of_floor,
            "ranked": sub.is_ranked,
            "hidden": sub.hidden,
            "gpu_name": sub.gpu_name,
            "versions": sub.versions,
            "shapes": selectors.shape_rows(submission=sub),
            "tests": (sub.report or {}).get("tests", []),
            "logs": sub.logs,
            "error": sub.error,
        })
        if sub.mode == Submission.Mode.PROFILE:
            data["profile"] = (sub.report or {}).get("profile")
            if profiling.profile_file_size(submission=sub):
                data["profile_file"] = request.build_absolute_uri(reverse("api-submission-profile-file",
                                                                          args=[sub.pk]))
    return data


MAX_JSON_BODY = settings.SUBMISSION_MAX_BYTES * 2 + 4096  # the source, escaped, and the fields


def _upload_fields(request) -> tuple[dict, bytes | str | None, str]:
    """(fields, source, filename) from a JSON body or a multipart form with a `file`. A body that
    cannot be read raises ValidationError with the reason (the caller answers 400)."""
    try:
        return _read_upload_fields(request)
    except RecursionError:
        raise ValidationError("The JSON body is nested too deeply.") from None
    except RequestDataTooBig:
        raise ValidationError(f"The request body is too large: at most {MAX_JSON_BODY:,} bytes.") from None
    except (MultiPartParserError, SuspiciousOperation, UnicodeError) as exc:
        raise ValidationError(f"The request body could not be read: {exc}") from None


def _read_upload_fields(request) -> tuple[dict, bytes | str | None, str]:
    if request.content_type == "application/json":
        length = request.META.get("CONTENT_LENGTH") or ""
        if (length.isdigit() and int(length) > MAX_JSON_BODY) or len(request.body) > MAX_JSON_BODY:
            raise RequestDataTooBig()
        try:
            body = json.loads(request.body or b"{}")
        except (ValueError, UnicodeDecodeError):
            raise ValidationError("The body is not valid JSON.") from None
        if not isinstance(body, dict):
            raise ValidationError("The body must be a JSON object.")
        source = body.get("source")
        if source is not None and not isinstance(source, str):
            raise ValidationError("'source' must be a string.")
        return body, source, str(body.get("filename") or "submission.py")
    upload = request.FILES.get("file")
    if upload is not None:
        if upload.size > settings.SUBMISSION_MAX_BYTES:
            raise ValidationError(f"The file is {upload.size} bytes; the limit is "
                                  f"{settings.SUBMISSION_MAX_BYTES} bytes (256 KiB).")
        return request.POST, upload.read(), upload.name
    return request.POST, request.POST.get("source"), request.POST.get("filename") or "submission.py"


@csrf_exempt
@require_http_methods(["GET", "POST"])
@token_required
def submissions(request):
    if request.method == "GET":
        return submission_list(request)
    try:
        fields, source, filename = _upload_fields(request)
    except ValidationError as exc:
        return error(400, " ".join(exc.messages))
    task = fields.get("task")
    if not task or not isinstance(task, str):
        return error(400, "'task' is required (a task name, see GET /api/tasks).")
    if source is None:
        return error(400, "Send the kernel as 'source' (JSON or form field) or as a 'file' upload.")
    mode = fields.get("mode") or "ranked"
    try:
        sub = services.submission_create(user=request.user, task=task, source=source, filename=filename,
                                         mode=mode if isinstance(mode, str) else "")
    except services.RateLimited as exc:
        response = error(429, " ".join(exc.messages))
        response["Retry-After"] = str((exc.params or {}).get("retry_after_s", 3600))
        return response
    except services.NotAllowed as exc:
        return error(403, " ".join(exc.messages))
    except ValidationError as exc:
        status = 404 if getattr(exc, "code", None) == "unknown_task" else 400
        return error(status, " ".join(exc.messages))
    return JsonResponse(submission_json(request, sub), status=201)


def _not_found(submission_id: int):
    """The answer for an id the caller may not read, whether or not it exists: the web's 404, so
    that nobody learns that someone else's private submission is there."""
    return error(404, f"No submission #{submission_id} that you can read.")


def _owned(request, submission_id: int):
    """(the submission, None) when the caller is its owner or staff. Else (None, the error): 404
    for no such id and for someone else's private one; 403 for someone else's public one (its
    page shows that it exists), whose stored report stays its owner's and staff's."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    if sub is not None and sub.can_view(request.user):
        return sub, None
    if sub is not None and selectors.submission_is_public(submission=sub):
        return None, error(403, f"Submission #{submission_id} is public, but its stored report is "
                                "its owner's and staff's.")
    return None, _not_found(submission_id)


# What anyone else reads of a public submission (a ranked entry, or one whose code is open): what
# its page shows every visitor. The logs follow the code (selectors.code_visible); the stored
# report and the profile stay with the owner and staff. A field added to submission_json stays
# out of here until someone decides it is public.
PUBLIC_FIELDS = ("id", "url", "task", "mode", "device_type", "filename", "status", "phase", "finished",
                 "created_at", "started_at", "finished_at", "page", "verdict", "reasons", "reason_codes",
                 "speedup_vs_compile", "speedup_vs_eager", "pct_of_floor", "ranked", "hidden", "gpu_name",
                 "versions", "shapes", "tests", "error")


def _readable(request, submission_id: int):
    """(the submission, whether the caller is its owner or staff, None) when the caller may read
    it: their own, or a public one (the rule of its page, selectors.submission_is_public). Else
    (None, False, the error): 401 without a token, else 404, for no such id and for someone else's
    private one alike (_not_found)."""
    sub = Submission.objects.select_related("task", "user").filter(pk=submission_id).first()
    own = sub is not None and sub.can_view(request.user)
    if sub is not None and (own or selectors.submission_is_public(submission=sub)):
        return sub, own, None
    if not request.user.is_authenticated:
        return None, False, error(401, AUTH_REQUIRED)
    return None, False, _not_found(submission_id)


@require_GET
@token_optional
def submission_detail(request, submission_id: int):
    """One submission: everything for its owner and staff, the public part of a public one for
    anyone else (no token needed). `source` links to the code wherever the caller may read it;
    the code itself stays out of here, which clients poll while the evaluation runs."""
    sub, own, refused = _readable(request, submission_id)
    if refused:
        return refused
    reason = selectors.code_open_reason(submission=sub)
    data = submission_json(request, sub)
    if not own:
        data = {k: v for k, v in data.items() if k in PUBLIC_FIELDS + (("logs",) if reason else ())}
    data["code_open"] = bool(reason)
    data["code_open_reason"] = reason
    data["source"] = (request.build_absolute_uri(reverse("api-submission-source", args=[sub.pk]))
                      if own or reason else None)
    return JsonResponse(data)


@require_GET
@token_optional
def submission_source(request, submission_id: int):
    """The code: for its owner and staff, and for anyone while it is open (selectors.code_open_reason)."""
    sub, own, refused = _readable(request, submission_id)
    if refused:
        return refused
    reason = selectors.code_open_reason(submission=sub)
    if not (own or reason):
        return error(403, f"The code of submission #{submission_id} is its owner's and staff's: it opens when "
                          "its owner publishes it or it is an entry in a competition's final standings.")
    return JsonResponse({"id": sub.pk, "filename": sub.filename, "code_open": bool(reason),
                         "code_open_reason": reason, "source": sub.source})


@require_GET
def task_list(request):
    tasks = selectors.task_list_with_stats()
    return JsonResponse({"tasks": [
        {"name": t.name, "title": t.title, "signature": t.signature, "best_speedup_vs_compile": t.best_speedup,
         "submissions": t.submission_count,
         "leaderboard": request.build_absolute_uri(reverse("api-leaderboard", args=[t.name]))}
        for t in tasks
    ]})


@require_GET
def leaderboard(request, name: str):
    task = Task.objects.filter(name=name).first()
    if task is None:
        return error(404, f"No task named {name!r}.")
    device_types = selectors.device_types_for_task(task=task)
    device_type = request.GET.get("device") or routing.default_device_type()
    # the boards that exist: the task's device types and the one this site evaluates on; any
    # other name is a typo, answered as one rather than as an empty board of that name
    known = sorted(set(device_types) | {routing.default_device_type()})
    if device_type not in known:
        return error(400, f"No device type {device_type[:80]!r} for task {task.name!r}: use one of "
                          f"{', '.join(known)}.", device_types=known)
    entries = selectors.leaderboard_for_task(task=task, device_type=device_type)
    code_open = selectors.code_open_reasons(submissions=entries)
    return JsonResponse({
        "task": task.name,
        "device_type": device_type,
        "device_types": device_types,
        "entries": [
            {"rank": e.rank, "user": e.user.username, "submission": e.pk,
             "page": request.build_absolute_uri(reverse("submission_detail", args=[e.pk])),
             "code_open": bool(code_open[e.pk]),
             "speedup_vs_compile": e.speedup_vs_compile, "speedup_vs_eager": e.speedup_vs_eager,
             "pct_of_floor": e.pct_of_floor, "gpu_name": e.gpu_name, "created_at": iso_utc(e.created_at)}
            for e in entries
        ],
    })


PAGE_SIZE = 20
PAGE_SIZE_MAX = 100


def _positive_int(value, name: str, default: int, high: int | None = None) -> int:
    if value in (None, ""):
        return default
    try:
        n = int(value)
    except ValueError:
        raise ValidationError(f"'{name}' must be a whole number, not {value[:20]!r}.") from None
    if n < 1 or (high is not None and n > high):
        raise ValidationError(f"'{name}' must be between 1 and {high or 'the last page'}.")
    return n


def submission_list(request):
    """GET /api/submissions?page=N&per_page=M[&task=NAME]: the caller's own submissions, newest
    first, with the same fields as one submission minus logs, tests and per-shape rows."""
    try:
        page = _positive_int(request.GET.get("page"), "page", 1)
        per_page = _positive_int(request.GET.get("per_page"), "per_page", PAGE_SIZE, PAGE_SIZE_MAX)
    except ValidationError as exc:
        return error(400, " ".join(exc.messages))
    qs = selectors.submissions_for_user(user=request.user)
    if request.GET.get("task"):
        qs = qs.filter(task__name=request.GET["task"])
    total = qs.count()
    pages = max(1, -(-total // per_page))
    if page > pages:
        return error(404, f"No page {page}: there are {pages}.")
    rows = qs[(page - 1) * per_page: page * per_page]

    def link(n):
        query = request.GET.copy()
        query["page"] = str(n)
        return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")

    results = [submission_json(request, sub, summary=True) for sub in rows]
    return JsonResponse({
        "count": total, "page": page, "pages": pages, "per_page": per_page,
        "next": link(page + 1) if page < pages else None,
        "previous": link(page - 1) if page > 1 else None,
        "results": results,
    })


@require_GET
@token_required
def submission_report(request, submission_id: int):
    """The evaluator's report of a finished submission, as stored (owner or staff)."""
    sub, refused = _owned(request, submission_id)
    if refused:
        return refused
    if sub.report is None:
        return error(404, f"Submission #{submission_id} has no report yet ({sub.status}).")
    return JsonResponse(sub.report)


@require_GET
@token_required
def submission_profile_file(request, submission_id: int):
    """The .ncu-rep of a profile run (owner or staff), as the result page offers it."""
    from leaderboard.web.profile_view import ncu_rep_response

    stored = profiling.profile_file_for_viewer(submission_id=submission_id, user=request.user)
    if stored is None:
        return error(404, f"Submission #{submission_id} has no profile file you can read.")
    return ncu_rep_response(stored, submission_id)
