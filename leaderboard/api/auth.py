"""Token authentication for the JSON API: `Authorization: Token <key>`.

`TOKEN` is for the operations that need a caller, `TOKEN_OPTIONAL` for those that show a visitor
what is public: without the header the request goes on as an anonymous visitor. A bad token is a
401 either way, and a browser session counts for nothing: the API knows its callers by their
tokens only. Both set request.user, which the views read."""
from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from ninja.security import APIKeyHeader

from leaderboard import services
from leaderboard.api.errors import Refusal

AUTH_REQUIRED = ("Authentication required: send the header 'Authorization: Token <key>' "
                 "(create a token on your profile page).")


def token_user(request):
    """The user of the request's token, None without a token; raises ValueError for a bad one."""
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "token" or not key.strip():
        raise ValueError("The Authorization header must be 'Token <key>'.")
    user = services.api_token_authenticate(key=key.strip())
    if user is None:
        raise ValueError("Invalid or revoked API token.")
    return user


class TokenAuth(APIKeyHeader):
    """What the schema calls the scheme: an API key in the Authorization header, `Token <key>`."""

    param_name = "Authorization"
    openapi_description = ("`Token <key>`: create a key on your profile page or with "
                           "`python manage.py create_api_token USERNAME`.")

    def __init__(self, *, required: bool):
        self.required = required
        super().__init__()

    def __call__(self, request):
        try:
            user = token_user(request)
        except ValueError as exc:
            raise Refusal(401, str(exc), "bad_token") from None
        if user is None and self.required:
            raise Refusal(401, AUTH_REQUIRED, "unauthenticated")
        request.user = user or AnonymousUser()
        return request.user

    def authenticate(self, request, key):  # the header is read in __call__
        raise NotImplementedError


TOKEN = TokenAuth(required=True)
TOKEN_OPTIONAL = TokenAuth(required=False)
# in the schema: the token, or nothing at all
OPTIONAL_SECURITY = {"security": [{}]}
