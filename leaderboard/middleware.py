"""What every request meets: TRACE refused, and the response headers every page gets.

TRACE under /api/ goes on to the API, which answers every method an address does not take with
its own 405 naming the ones it does (leaderboard/api/errors.py).

The Content-Security-Policy comes from settings.CONTENT_SECURITY_POLICY (empty: none sent). Django
5.2 has no CSP support of its own (6.0 adds it): one header does not justify another dependency.

Each is a MiddlewareMixin, which Django runs in either mode: under the ASGI server a request
waiting in an async view (the API's ?wait=) holds no thread for a middleware's sake.
"""
from django.conf import settings
from django.http import HttpResponseNotAllowed
from django.utils.deprecation import MiddlewareMixin

# TRACE echoes a request back (cross-site tracing); no page of the site has a use for it
REFUSED_METHODS = {"TRACE"}


class RefuseTraceMiddleware(MiddlewareMixin):
    def process_request(self, request):
        if request.method in REFUSED_METHODS and not request.path.startswith("/api/"):
            return HttpResponseNotAllowed(["GET", "HEAD", "POST", "OPTIONS"])
        return None


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    def process_response(self, request, response):
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
