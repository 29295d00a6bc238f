"""What every request meets: TRACE refused, and the response headers every page gets.

TRACE under /api/ goes on to the API, which answers every method an address does not take with
its own 405 naming the ones it does (leaderboard/api/errors.py).

The Content-Security-Policy comes from settings.CONTENT_SECURITY_POLICY (empty: none sent). Django
5.2 has no CSP support of its own (6.0 adds it): one header does not justify another dependency.
"""
from django.conf import settings
from django.http import HttpResponseNotAllowed

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
