"""Token authentication for the JSON API: `Authorization: Token <key>`."""
from functools import wraps

from django.contrib.auth.models import AnonymousUser
from django.http import JsonResponse

from leaderboard import services


def error(status: int, message: str, **extra) -> JsonResponse:
    response = JsonResponse({"error": message, **extra}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Token realm="api"'
    return response


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


AUTH_REQUIRED = ("Authentication required: send the header 'Authorization: Token <key>' "
                 "(create a token on your profile page).")


def token_required(view):
    return _with_token(view, required=True)


def token_optional(view):
    """Like token_required, except that a request without the header goes on as an anonymous
    visitor (the view then shows only what is public). A bad token is still a 401, and a browser
    session counts for nothing: the API knows its callers by their tokens only."""
    return _with_token(view, required=False)


def _with_token(view, *, required: bool):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            user = token_user(request)
        except ValueError as exc:
            return error(401, str(exc))
        if user is None and required:
            return error(401, AUTH_REQUIRED)
        request.user = user or AnonymousUser()
        return view(request, *args, **kwargs)

    return wrapper
