"""Token authentication for the JSON API: `Authorization: Token <key>`.

`TOKEN` is for the operations that need a caller, `TOKEN_OPTIONAL` for those that show a visitor
what is public: without the header the request goes on as an anonymous visitor. A bad token is a
401 either way, and a browser session counts for nothing: the API knows its callers by their
tokens only. Both set request.user, which the views read."""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.utils.functional import SimpleLazyObject
from ninja.security import APIKeyHeader

from leaderboard import services
from leaderboard.api import owncache
from leaderboard.api.errors import Refusal
from leaderboard.models import ApiToken

AUTH_REQUIRED = ("Authentication required: send the header 'Authorization: Token <key>' "
                 "(create a token on your profile page).")


def _key(request) -> str | None:
    """The request's token key, None without the header; raises ValueError for a malformed one."""
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token" or not key.strip():
        raise ValueError("The Authorization header must be 'Token <key>'.")
    return key.strip()


def token_user(request):
    """The user of the request's token, None without a token; raises ValueError for a bad one."""
    key = _key(request)
    if key is None:
        return None
    user = services.api_token_authenticate(key=key)
    if user is None:
        raise ValueError("Invalid or revoked API token.")
    return user


def stamped_token_user(request):
    """As token_user, for the reads api/owncache keeps: the token check and the caller's stamp in
    one query (request.lb_stamp), the user itself loaded only if the answer has to be built."""
    key = _key(request)
    if key is None:
        return None
    found = owncache.token_stamp(ApiToken.hash_key(key)) if len(key) <= 200 else None
    if found is None:
        raise ValueError("Invalid or revoked API token.")
    token_id, user_id, last_used_at, stamp = found
    services.api_token_used(token_id=token_id, last_used_at=last_used_at)
    request.lb_stamp = (user_id, stamp)
    # a user deleted since the token was read is nobody (a 401 or a 404 from the view, not a 500)
    return SimpleLazyObject(lambda: get_user_model().objects.filter(pk=user_id).first() or AnonymousUser())


class TokenAuth(APIKeyHeader):
    """What the schema calls the scheme: an API key in the Authorization header, `Token <key>`."""

    param_name = "Authorization"
    openapi_description = ("`Token <key>`: create a key on your profile page or with "
                           "`python manage.py create_api_token USERNAME`.")

    def __init__(self, *, required: bool, stamped: bool = False):
        self.required, self.stamped = required, stamped
        super().__init__()

    def __call__(self, request):
        try:
            user = (stamped_token_user if self.stamped else token_user)(request)
        except ValueError as exc:
            raise Refusal(401, str(exc), "bad_token") from None
        if user is None and self.required:
            raise Refusal(401, AUTH_REQUIRED, "unauthenticated")
        # `is None`, not truth: a truth test would load a stamped request's user
        request.user = AnonymousUser() if user is None else user
        # what ninja keeps as request.auth and tests for truth: the caller's name for the logs
        return "token" if user is not None else "anonymous"

    def authenticate(self, request, key):  # the header is read in __call__
        raise NotImplementedError


TOKEN = TokenAuth(required=True)
TOKEN_OPTIONAL = TokenAuth(required=False)
# for a caller's own reads, which api/owncache keeps
TOKEN_STAMPED = TokenAuth(required=True, stamped=True)
TOKEN_OPTIONAL_STAMPED = TokenAuth(required=False, stamped=True)
# in the schema: the token, or nothing at all
OPTIONAL_SECURITY = {"security": [{}]}
