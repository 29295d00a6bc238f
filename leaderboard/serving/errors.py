"""Error answers in the form their reader expects: under /api/ the API's one error shape
(leaderboard/api/errors.py), for every answer, whichever layer made it; elsewhere the site's own
page for a 405 (Django's views send it empty) and for a form's body too large to read, and the
CSRF failure in either form."""

from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponseNotAllowed

from leaderboard.api.errors import error_response, from_response

API_PREFIX = "/api/"


def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")


class ApiErrorsMiddleware:
    """Outermost: it sees the answers of every other middleware and of Django's handlers too.
    The API's own errors are already in the shape; what Django or a middleware answered (an
    unknown path, a 405, TRACE, a 500) is put into it here."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400 or _is_json(response):
            return response
        if response.status_code == 404 and request.path.endswith("/") and _exists(request.path.rstrip("/")):
            # the API's addresses end without a slash; a browser's or a habit's trailing one is named
            return error_response(404, f"No such address: the API's addresses end without a slash; "
                                       f"try {request.path.rstrip('/')}.", "not_found")
        return from_response(response)


def _exists(path: str) -> bool:
    from django.urls import Resolver404, resolve

    try:
        resolve(path)
    except Resolver404:
        return False
    return True


def csrf_failure(request, reason=""):
    """settings.CSRF_FAILURE_VIEW. The API's operations are exempt (leaderboard/api/urls.py); one
    that is not still answers its program in the API's shape, naming what the API takes instead of
    a session. Elsewhere the site's 403 page."""
    if request.path.startswith(API_PREFIX):
        return error_response(403, f"CSRF check failed ({reason}). The API takes no browser session: "
                                   "send 'Authorization: Token <key>'.", "csrf_failed")
    from leaderboard.web.views.errors import csrf_failure as page

    return page(request, reason)


class NotAllowedPageMiddleware:
    """A GET on a POST-only address (log out, publish, revoke) gets a page that says so."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if isinstance(response, HttpResponseNotAllowed) and not response.content \
                and not request.path.startswith(API_PREFIX):
            from leaderboard.web.views.errors import not_allowed

            allowed = [m.strip() for m in response["Allow"].split(",") if m.strip()]
            return not_allowed(request, allowed)
        return response


class TooLargeFormMiddleware:
    """A form's body over DATA_UPLOAD_MAX_MEMORY_SIZE (a 5 MB paste into the upload form) is read,
    and refused with the site's 413, here: otherwise the CSRF check is the first to read it, and
    Django logs the RequestDataTooBig raised there as an error with its whole traceback, for what
    is the client's to fix. Answered here, it is logged as any 4xx is, in one warning line
    ("Request Entity Too Large: /upload/"), as the API logs the same refusal. After
    AuthenticationMiddleware: the upload form comes back with the limit to a logged-in user.
    Under /api/ the API reads its own bodies (its views are exempt from the CSRF check)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method == "POST" and not request.path.startswith(API_PREFIX):
            try:
                request.POST  # what the CSRF check reads next; parsed once, kept on the request
            except RequestDataTooBig:
                from leaderboard.web.views.errors import too_large

                return too_large(request)
        return self.get_response(request)
