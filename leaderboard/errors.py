"""Error answers in the form their reader expects: JSON `{"error": "..."}` for every /api/ address
(programs read it), the site's own page for a 405 elsewhere (Django's views send it empty), and
the CSRF failure in either form."""

from django.http import HttpResponseNotAllowed, JsonResponse

API_PREFIX = "/api/"

# what a program is told when the answer is not the API's own JSON (Django's 404, 405, 500 and
# refusals that happen before any API view runs)
API_WORDS = {
    400: "Bad request: the body could not be read.",
    403: "Forbidden.",
    404: "Not found.",
    405: "Method not allowed.",
    413: "The request body is too large.",
    500: "Server error: it is logged for the admins; try again in a minute.",
}

def _is_json(response) -> bool:
    return response.get("Content-Type", "").startswith("application/json")

class ApiErrorsMiddleware:
    """Outermost: it sees the answers of every other middleware and of Django's handlers too."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not request.path.startswith(API_PREFIX) or response.status_code < 400 or _is_json(response):
            return response
        status = response.status_code
        words = API_WORDS.get(status, response.reason_phrase + ".")
        if status == 405 and response.has_header("Allow"):
            words = f"Method not allowed: use {response['Allow']}."
        answer = JsonResponse({"error": words}, status=status)
        for header in ("Allow", "Retry-After"):
            if response.has_header(header):
                answer[header] = response[header]
        return answer

def csrf_failure(request, reason=""):
    """settings.CSRF_FAILURE_VIEW. The API's routes are exempt (leaderboard/api/urls.py); one
    that is not still answers its program in JSON, naming what the API takes instead of a
    session. Elsewhere the site's 403 page."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"error": f"CSRF check failed ({reason}). The API takes no browser session: "
                                      "send 'Authorization: Token <key>'."}, status=403)
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
