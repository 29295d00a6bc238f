"""Throttles for logging in and signing up, counted in Redis by django-ratelimit (shared by every
web process): per client IP and, for logging in, per account name.

Logging in counts failed attempts only, so a person who types the right password is never held
back by their own successes; once an IP or an account reaches its limit, every attempt (the right
password too) gets a 429 until the window ends. Signing up counts every attempt per IP.
"""
from __future__ import annotations

import logging
from functools import wraps

from django.conf import settings
from django.shortcuts import render
from django_ratelimit.core import get_usage

log = logging.getLogger(__name__)


def _rules(group: str) -> list[tuple[str, str]]:
    if group == "login":
        return [("ip", settings.LOGIN_FAILURES_PER_IP), ("post:username", settings.LOGIN_FAILURES_PER_ACCOUNT)]
    return [("ip", settings.SIGNUPS_PER_IP)]


def _usage(request, group: str, *, increment: bool) -> list[dict | None]:
    return [get_usage(request, group=f"{group}:{key}", key=key, rate=rate, method="POST", increment=increment)
            for key, rate in _rules(group)]


def _refused(request, group: str, wait_s: int):
    what = "Too many failed logins" if group == "login" else "Too many sign-ups"
    minutes = max(1, (wait_s + 59) // 60)
    response = render(request, "registration/throttled.html",
                      {"message": f"{what} from here or for this account. Try again in {minutes} "
                                  f"minute{'s' if minutes != 1 else ''}."}, status=429)
    response["Retry-After"] = str(max(1, wait_s))
    return response


def throttled(group: str, *, failed=lambda response: True):
    """Refuse a POST once a limit of `group` is reached; count the POST when `failed(response)`.
    Without Redis every POST is refused: a throttle that cannot count must not let guesses through."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method != "POST":
                return view(request, *args, **kwargs)
            request.POST  # a body Django cannot read raises here: a 400, not a throttle matter
            try:
                usage = _usage(request, group, increment=False)
            except Exception as exc:  # the cache's errors vary by client library
                log.warning("%s throttle: cannot reach its counters (%s): refusing", group, type(exc).__name__)
                return _refused(request, group, 60)
            # None: throttling is switched off (RATELIMIT_ENABLE); should_limit alone: no count
            over = [u for u in usage if u is not None and (u["should_limit"] or u["count"] >= u["limit"])]
            if over:
                return _refused(request, group, max(u["time_left"] for u in over))
            response = view(request, *args, **kwargs)
            if failed(response):
                try:
                    _usage(request, group, increment=True)
                except Exception as exc:
                    log.warning("%s throttle: could not count an attempt (%s)", group, type(exc).__name__)
            return response

        return wrapper

    return decorator


def login_failed(response) -> bool:
    """Django's LoginView redirects on success and shows the form again on failure."""
    return response.status_code != 302
