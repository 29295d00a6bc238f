"""Throttles for logging in, signing up and asking for a password-reset mail, counted in Redis by
django-ratelimit (shared by every web process): per client IP and, for logging in, per account,
for a reset, per e-mail address (each request sends a mail: a loop must not fill one inbox).

Every POST is counted before the view runs, with django-ratelimit's atomic increment (Redis
INCR), and the decision is taken on the count that increment returned: of many attempts sent at
once, only as many as the limit reach the view. Logging in limits failed attempts: a login that
succeeds is then recorded in a second counter of the same window, and the limit applies to
attempts minus successes, so a person is never held back by their own successes. Once an IP or an
account reaches its limit, every attempt (the right password too) gets a 429 until the window ends.
Signing up and asking for a reset count every attempt.
"""
from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UsernameField
from django.shortcuts import render
from django_ratelimit.core import get_usage

log = logging.getLogger(__name__)


def account_name(raw: str) -> str:
    """The name a login form's username becomes before Django looks the user up (stripped, NFKC,
    as AuthenticationForm and the user model normalise it), case folded: every spelling that can
    reach one account shares its counter. Sign-up refuses names that differ only in case, so
    folding joins no two accounts' counters."""
    user_model = get_user_model()
    max_length = user_model._meta.get_field(user_model.USERNAME_FIELD).max_length
    # with max_length, as the form does: a longer name is refused before any lookup, and NFKC of
    # a huge string is not worth computing
    name = UsernameField(max_length=max_length).to_python(raw)
    return user_model.normalize_username(name).casefold()


def _account(group, request) -> str:
    return account_name(request.POST.get("username", ""))


def reset_email(raw: str) -> str:
    """The address a reset form's e-mail becomes where Django matches it to accounts (stripped,
    NFKC, case folded: PasswordResetForm.get_users), so that every spelling that reaches one inbox
    shares its counter. Cut past the form's 254 characters: a longer one is refused unread, and
    NFKC of a huge string is not worth computing."""
    return unicodedata.normalize("NFKC", raw.strip()[:255]).casefold()


def _email(group, request) -> str:
    return reset_email(request.POST.get("email", ""))


@dataclass(frozen=True)
class Rule:
    name: str
    key: object  # django-ratelimit's key: "ip" or a callable
    setting: str  # the setting that holds the rate


RULES = {
    "login": (Rule("ip", "ip", "LOGIN_FAILURES_PER_IP"), Rule("account", _account, "LOGIN_FAILURES_PER_ACCOUNT")),
    "signup": (Rule("ip", "ip", "SIGNUPS_PER_IP"),),
    "reset": (Rule("ip", "ip", "PASSWORD_RESETS_PER_IP"), Rule("email", _email, "PASSWORD_RESETS_PER_EMAIL")),
}
REFUSALS = {
    "login": "Too many failed logins from here or for this account.",
    "signup": "Too many sign-ups from here.",
    "reset": "Too many password-reset requests from here or for this e-mail address.",
}


def _usage(request, group: str, rule: Rule, *, counter: str = "", increment: bool):
    return get_usage(request, group=f"{group}:{rule.name}{counter}", key=rule.key,
                     rate=getattr(settings, rule.setting), method="POST", increment=increment)


def _reserve(request, group: str, *, refunds: bool) -> int | None:
    """Count this attempt under every rule of `group`; the seconds to wait when a limit is passed,
    else None. With `refunds`, successes recorded in the window are subtracted."""
    waits = []
    for rule in RULES[group]:
        usage = _usage(request, group, rule, increment=True)
        if usage is None:  # throttling is switched off (RATELIMIT_ENABLE)
            continue
        successes = _usage(request, group, rule, counter=":ok", increment=False) if refunds else None
        if usage["time_left"] < 0 or (successes is not None and successes["time_left"] < 0):
            waits.append(60)  # django-ratelimit's answer when the cache did not count
            continue
        if usage["count"] - (successes["count"] if successes else 0) > usage["limit"]:
            waits.append(usage["time_left"])
    return max(waits) if waits else None


def _refund(request, group: str) -> None:
    for rule in RULES[group]:
        _usage(request, group, rule, counter=":ok", increment=True)


def _refused(request, group: str, wait_s: int):
    minutes = max(1, (wait_s + 59) // 60)
    response = render(request, "registration/throttled.html",
                      {"message": f"{REFUSALS[group]} Try again in {minutes} "
                                  f"minute{'s' if minutes != 1 else ''}."}, status=429)
    response["Retry-After"] = str(max(1, wait_s))
    return response


def throttled(group: str, *, failed=None):
    """Count a POST under the limits of `group` and refuse it once one is passed. With `failed`,
    only POSTs whose response `failed(response)` are held against the limits.
    Without Redis every POST is refused: a throttle that cannot count must not let guesses through."""

    def decorator(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method != "POST":
                return view(request, *args, **kwargs)
            request.POST  # a body Django cannot read raises here: a 400, not a throttle matter
            try:
                wait_s = _reserve(request, group, refunds=failed is not None)
            except Exception as exc:  # the cache's errors vary by client library
                log.warning("%s throttle: cannot reach its counters (%s): refusing", group, type(exc).__name__)
                return _refused(request, group, 60)
            if wait_s is not None:
                return _refused(request, group, wait_s)
            response = view(request, *args, **kwargs)
            if failed is not None and not failed(response):
                try:
                    _refund(request, group)
                except Exception as exc:
                    log.warning("%s throttle: could not record a success (%s)", group, type(exc).__name__)
            return response

        return wrapper

    return decorator


def login_failed(response) -> bool:
    """Django's LoginView redirects on success and shows the form again on failure."""
    return response.status_code != 302
