"""What an upload to `POST /api/submissions` sends, read from its body: JSON, or a form (multipart,
the kernel as `file` or as the `source` field; urlencoded), checked against schemas.SubmissionIn.
Every body that cannot be read is refused with words that say why (docs/site.md, "JSON API":
400, 413, 415); whether the fields make a submission is services.submission_create's to say."""
import json
import urllib.parse

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http.multipartparser import MultiPartParserError
from pydantic import ValidationError as SchemaError

from leaderboard.api.errors import Refusal
from leaderboard.api.schemas import SubmissionIn
from leaderboard.services.submissions import too_big_message

MAX_BODY = settings.SUBMISSION_MAX_BYTES * 2 + 4096  # the source, escaped, and the fields
TOO_LARGE = f"The request body is too large: at most {MAX_BODY:,} bytes."


BODY_TYPES = ("application/json", "multipart/form-data", "application/x-www-form-urlencoded")


def _read_body(request) -> tuple[dict, bytes | str | None]:
    """(the fields, the source) of a JSON body or a form (multipart: the kernel as `file`, or as
    the `source` field). A body that cannot be read is a 400 with the reason, one of another type
    a 415; one over MAX_BODY a 413, refused from its Content-Length before it is read."""
    length = request.META.get("CONTENT_LENGTH") or ""
    if length.isdigit() and int(length) > MAX_BODY:
        raise Refusal(413, TOO_LARGE)
    if request.content_type not in BODY_TYPES:
        sent = f"Content-Type {request.content_type[:80]!r}" if request.content_type else "no Content-Type"
        raise Refusal(415, f"Send the upload as application/json or multipart/form-data (this request has {sent}).",
                      "unsupported_media_type")
    try:
        if request.content_type == "application/json":
            if len(request.body) > MAX_BODY:
                raise Refusal(413, TOO_LARGE)
            try:
                body = json.loads(request.body or b"{}")
            except (ValueError, UnicodeDecodeError):
                raise Refusal(400, "The body is not valid JSON.", "invalid_body") from None
            if not isinstance(body, dict):
                raise Refusal(400, "The body must be a JSON object.", "invalid_body")
            return body, body.get("source")
        if request.content_type == "multipart/form-data":
            _check_multipart(request)
        upload = request.FILES.get("file")
        fields = {name: request.POST[name] for name in ("task", "mode", "filename") if name in request.POST}
        if upload is not None:
            if upload.size > settings.SUBMISSION_MAX_BYTES:
                raise Refusal(400, too_big_message(upload.size), "too_big")
            fields["filename"] = upload.name
            return fields, upload.read()
        return fields, _form_source(request)
    except RecursionError:
        raise Refusal(400, "The JSON body is nested too deeply.", "invalid_body") from None
    except RequestDataTooBig:
        raise Refusal(413, TOO_LARGE) from None
    except (MultiPartParserError, SuspiciousOperation, UnicodeError) as exc:
        raise Refusal(400, f"The request body could not be read: {exc}", "invalid_body") from None


def _form_source(request) -> str | None:
    """A form's `source` field. Django decodes a field's bytes with errors="replace", so bytes
    that are not UTF-8 would reach the judge as U+FFFD, changed without a word, where the same
    bytes sent as a file are refused: they are refused here too. A U+FFFD the client sent encoded
    is its own."""
    source = request.POST.get("source")
    if source and "\ufffd" in source:
        raw = request.body
        if request.content_type == "application/x-www-form-urlencoded":
            raw = urllib.parse.unquote_to_bytes(raw.replace(b"+", b" "))
        if source.count("\ufffd") > raw.count("\ufffd".encode()):
            raise Refusal(400, "'source' is not valid UTF-8 text: send the kernel's text in UTF-8, as the file "
                               "upload takes it.", "bad_upload")
    return source


def _check_multipart(request) -> None:
    """A multipart body names its boundary and ends with it: Django's parser takes a body cut
    short as one with fewer fields, which would be answered as a missing field."""
    boundary = request.content_params.get("boundary", "")
    if not boundary:
        raise Refusal(400, "The multipart body's Content-Type names no boundary: let the HTTP client build "
                           "the form (curl -F, requests' files=) rather than setting the header by hand.",
                      "invalid_body")
    body = request.body
    request.POST  # Django's parser refuses a malformed form first (MultiPartParserError)
    if not body.rstrip(b"\r\n").endswith(b"--" + boundary.encode("latin-1", "replace") + b"--"):
        raise Refusal(400, "The multipart body ends before its closing boundary: it was cut short on the way "
                           "or built by hand.", "invalid_body")


# the refusal of a field, in the words the API has always used: the first that applies
FIELD_WORDS = [
    ("source", "string_type", "'source' must be a string."),
    ("task", "missing", "'task' is required (a task name, see GET /api/tasks)."),
    ("task", None, "'task' must be a string: a task name (see GET /api/tasks)."),
    ("source", "missing", "Send the kernel as 'source' (JSON or form field) or as a 'file' upload."),
    ("mode", None, "'mode' must be a string: ranked, test or profile."),
    ("filename", None, "'filename' must be a string ending in .py."),
]


def upload_fields(request) -> dict:
    """The upload as services.submission_create takes it (task, mode, filename, source), its
    fields checked against schemas.SubmissionIn; whether they make a submission is the service's."""
    fields, source = _read_body(request)
    # an empty or null mode or filename means the default, as on the form
    data = {k: fields[k] for k in ("task", "mode", "filename") if fields.get(k) not in (None, "")}
    if source is not None:  # a file's bytes are the service's to check (size, UTF-8)
        data["source"] = "" if isinstance(source, bytes) else source
    try:
        upload = SubmissionIn.model_validate(data)
    except SchemaError as exc:
        failed = {(str(e["loc"][0]), e["type"]) for e in exc.errors() if e["loc"]}
        words = next((w for f, kind, w in FIELD_WORDS if any(f == name and kind in (None, t) for name, t in failed)),
                     "The upload's fields are not valid.")
        raise Refusal(400, words, "invalid_body") from None
    return {"task": upload.task, "mode": upload.mode, "filename": upload.filename,
            "source": source if isinstance(source, bytes) else upload.source}
