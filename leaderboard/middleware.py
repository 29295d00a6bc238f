"""Response headers every page gets.

The Content-Security-Policy comes from settings.CONTENT_SECURITY_POLICY (empty: none sent). Django
5.2 has no CSP support of its own (6.0 adds it): one header does not justify another dependency.
"""
from django.conf import settings


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", "")
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
