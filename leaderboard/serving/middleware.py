"""What every request meets: TRACE refused, HEAD answered under /api/, and the response headers
every page gets, and every API answer to a caller's token.

TRACE under /api/ goes on to the API, which answers every method an address does not take with
its own 405 naming the ones it does (leaderboard/api/errors.py).

The Content-Security-Policy comes from settings.CONTENT_SECURITY_POLICY (empty: none sent). Django
5.2 has no CSP support of its own (6.0 adds it): one header does not justify another dependency.
"""
from django.conf import settings
from django.http import HttpResponseNotAllowed
from django.utils.cache import patch_cache_control

# TRACE echoes a request back (cross-site tracing); no page of the site has a use for it
REFUSED_METHODS = {"TRACE"}


class RefuseTraceMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in REFUSED_METHODS and not request.path.startswith("/api/"):
            return HttpResponseNotAllowed(["GET", "HEAD", "POST", "OPTIONS"])
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response


class ApiHeadMiddleware:
    """HEAD under /api/ is answered as GET is, without the body: django-ninja routes an operation
    for the methods it names, where HTTP has every address that takes GET take HEAD too (curl -I,
    monitors, link checkers). Outermost, so that the body is gone whichever layer wrote it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method != "HEAD" or not request.path.startswith("/api/"):
            return self.get_response(request)
        request.method = "GET"
        response = self.get_response(request)
        if response.streaming:
            response.streaming_content = []  # a file's handle is still closed with the response
        else:
            response["Content-Length"] = str(len(response.content))
            response.content = b""
        return response


class ApiPrivateMiddleware:
    """An API answer to a request with an Authorization header depends on the token (the caller's
    own submissions, a code or report only they may read, the refusal of their token):
    `Cache-Control: private`, so that no shared cache between a caller and the site keeps it for
    someone else. Outermost, so that every answer gets it, the JSON errors too; the kept-answer
    layer (leaderboard/serving/asgi_kept.py) keeps the header with the answer."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path.startswith("/api/") and "HTTP_AUTHORIZATION" in request.META:
            patch_cache_control(response, private=True)
        return response
