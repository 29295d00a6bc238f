"""The one shape of every /api/ answer that is not a success:

    {"error": "<words for a person>", "code": "<a machine code>", ...fields of that error}

`error_response` makes it, wherever the error arises: the API's views raise `Refusal` and
django-ninja's exception handlers (`install`) answer it; what Django or a middleware answers
before or outside the API's views (an unknown path, a 405, TRACE, a 500, a CSRF failure) is
turned into it by leaderboard.serving.errors.ApiErrorsMiddleware through `from_response`.
"""
from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import Http404, JsonResponse
from ninja.errors import HttpError
from ninja.errors import ValidationError as ParamsInvalid
from pydantic import BaseModel, ConfigDict, Field

# the code of an error whose raiser names none
CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "too_large",
    415: "unsupported_media_type",
    422: "unprocessable",
    429: "rate_limited",
    500: "server_error",
}

# what a program is told when the answer is not the API's own (Django's 404, 405, 500 and the
# refusals made before any API view runs)
WORDS = {
    400: "Bad request: the body could not be read.",
    403: "Forbidden.",
    404: "Not found: no such address in the API (GET /api/openapi.json lists them).",
    405: "Method not allowed.",
    413: "The request body is too large.",
    500: "Server error: it is logged for the admins; try again in a minute.",
}

# Allow in this order, whatever order a view lists its methods in
METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class ApiError(BaseModel):
    """Every answer that is not a success. Some errors add fields of their own (documented with
    them); a client needs only `code` to tell errors apart and `error` to show a person."""

    model_config = ConfigDict(extra="allow", json_schema_extra={
        "examples": [{"error": "No submission #12 that you can read.", "code": "not_found"}]})

    error: str = Field(description="What went wrong and what to do, in words for a person.")
    code: str = Field(description="A machine code: bad_request, invalid_request, invalid_body, unauthenticated, "
                                  "forbidden, banned, not_found, unknown_task, method_not_allowed, too_large, "
                                  "unsupported_media_type, idempotency_key_reused, rate_limited, queue_full, server_error, ...")


class Refusal(Exception):
    """Raised by an API view: answered as `error_response(status, message, code, ...)`."""

    def __init__(self, status: int, message: str, code: str | None = None, *, headers: dict | None = None,
                 **extra):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code or CODES.get(status, "error")
        self.headers, self.extra = headers or {}, extra


def error_response(status: int, message: str, code: str | None = None, *, headers: dict | None = None,
                   **extra) -> JsonResponse:
    body = {"error": message, "code": code or CODES.get(status, "error"), **extra}
    response = JsonResponse(body, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Token realm="api"'
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def allow_header(methods) -> str:
    # HEAD: leaderboard.serving.middleware.ApiHeadMiddleware
    methods = set(methods) | ({"HEAD"} if "GET" in methods else set())
    known = [m for m in METHOD_ORDER if m in methods]
    return ", ".join(known + sorted(set(methods) - set(known)))


def from_response(response) -> JsonResponse:
    """The shape for an error answer that is not the API's own: its status, words for it, and
    the headers a client needs (Allow on a 405, Retry-After on a 429)."""
    status = response.status_code
    words = WORDS.get(status, f"{response.reason_phrase}.")
    headers = {}
    if response.has_header("Allow"):
        headers["Allow"] = allow_header([m.strip() for m in response["Allow"].split(",") if m.strip()])
        if status == 405:
            words = f"Method not allowed: use {headers['Allow']}."
    if response.has_header("Retry-After"):
        headers["Retry-After"] = response["Retry-After"]
    return error_response(status, words, headers=headers)


def _params_message(errors: list[dict]) -> str:
    """One line for what ninja found wrong with the query, path or headers: our validators'
    own sentences as they are, pydantic's with the parameter they concern."""
    parts = []
    for e in errors:
        if e.get("type") == "lb_invalid":
            parts.append(e["msg"])
        else:
            where = e["loc"][0] if e.get("loc") else "request"
            name = ".".join(str(p) for p in e.get("loc", ())[1:]) or "body"
            parts.append(f"{where} parameter {name!r}: {e.get('msg', 'invalid')}.")
    return " ".join(parts) or "The request's parameters are not valid."


def install(api) -> None:
    """django-ninja's exception handlers, every one answering in the shape above."""

    def refused(request, exc: Refusal):
        return error_response(exc.status, exc.message, exc.code, headers=exc.headers, **exc.extra)

    def params_invalid(request, exc: ParamsInvalid):
        errors = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors]
        return error_response(400, _params_message(exc.errors), "invalid_request", errors=errors)

    def http_error(request, exc: HttpError):
        return error_response(exc.status_code, str(exc))

    def not_found(request, exc: Http404):
        return error_response(404, WORDS[404])

    def too_large(request, exc: RequestDataTooBig):
        return error_response(413, WORDS[413])

    def server_error(request, exc: Exception):
        # Django's own handling logs it (mail to the admins, the got_request_exception signal);
        # ApiErrorsMiddleware then answers its 500 in the shape above
        raise exc

    api.add_exception_handler(Refusal, refused)
    api.add_exception_handler(ParamsInvalid, params_invalid)
    api.add_exception_handler(HttpError, http_error)
    api.add_exception_handler(Http404, not_found)
    api.add_exception_handler(RequestDataTooBig, too_large)
    api.add_exception_handler(Exception, server_error)


def documented(*statuses: int) -> dict:
    """The error answers of an operation for its `response=`: the statuses it answers itself,
    plus 405 and 500, which any address can answer."""
    return {status: ApiError for status in sorted(set(statuses) | {405, 500})}
