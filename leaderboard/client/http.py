"""The CLI's (leaderboard/cli.py) one way to talk to the site: an API call and its errors, standard
library only. A 404, or an error not in the API's shape, is checked against `GET /api/`, the
index that names the docs and the first addresses: a --url that answers 404 for everything
(another server, a path under the site) would otherwise read as "no submission #N that you can
read"."""
from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request

# a proxy's answers while the site behind it restarts: the upload may or may not have been stored
RETRY_STATUSES = {502, 503, 504}
# the connection dropped or timed out once the request was on its way: the site may have stored it
LOST_ANSWER = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, TimeoutError,
               http.client.HTTPException)
# the keys of GET /api/ (leaderboard/api/urls.py index) that this CLI relies on being there
INDEX_KEYS = {"docs", "submissions", "tasks"}
API_PATH = "/api/"


class ApiError(Exception):
    def __init__(self, message: str, status: int | None = None, *, lost: bool = False):
        super().__init__(message)
        self.status = status
        self.lost = lost  # no answer came, or a proxy's 502/503/504: sending it again may help


def _site(url: str) -> str:
    """The site's address that `url`, one of its API addresses, lies under: what comes before the
    last /api/ of its path (a --url may hold a path of its own; the API's own paths hold no /api/)."""
    parts = urllib.parse.urlsplit(url)
    return url[:len(parts.scheme) + 3 + len(parts.netloc) + parts.path.rfind(API_PATH)]


def is_the_api(url: str) -> bool | None:
    """Whether the site that `url` lies under answers GET /api/ with the leaderboard's index;
    None when it cannot be told (no answer, or only a proxy's 502/503/504)."""
    req = urllib.request.Request(_site(url) + API_PATH, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            index = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return None if exc.code in RETRY_STATUSES else False
    except (OSError, http.client.HTTPException):
        return None
    except ValueError:
        return False
    return isinstance(index, dict) and INDEX_KEYS <= index.keys()


def not_the_api(url: str) -> ApiError:
    site = _site(url)
    return ApiError(f"{site} does not look like this leaderboard's API: GET {site}{API_PATH} does not name its "
                    "docs and addresses (is --url or $LEADERBOARD_URL the leaderboard's address?)")


def call(method: str, url: str, token: str, body: dict | None = None, *, raw: bool = False,
         headers: dict | None = None):
    """The JSON answer (or with raw=True the body's bytes) of one API call; ApiError otherwise,
    with the HTTP status where there was an answer, and none when the address is not the API's."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if token:
        req.add_header("Authorization", f"Token {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        try:
            answer = json.loads(exc.read())
        except (ValueError, OSError, http.client.HTTPException):
            answer = None
        shaped = isinstance(answer, dict) and {"error", "code"} <= answer.keys()  # the API's one error shape
        # a 404 may be another server's too (one that answers 404 for everything), as may any
        # error not in the API's shape (a static server's 501 for a POST); a proxy's 502-504 is not
        if (exc.code == 404 or not shaped) and exc.code not in RETRY_STATUSES and is_the_api(url) is False:
            raise not_the_api(url) from None
        message = (answer.get("error") if shaped else None) or exc.reason
        raise ApiError(f"HTTP {exc.code}: {message}", exc.code, lost=exc.code in RETRY_STATUSES) from None
    except urllib.error.URLError as exc:
        raise ApiError(f"cannot reach {url}: {exc.reason} (is the site running? --url or $LEADERBOARD_URL)",
                       lost=isinstance(exc.reason, LOST_ANSWER)) from None
    except (OSError, http.client.HTTPException) as exc:
        raise ApiError(f"cannot reach {url}: {exc or type(exc).__name__}",
                       lost=isinstance(exc, LOST_ANSWER)) from None
    if raw:
        return body
    try:
        return json.loads(body)
    except ValueError:
        raise ApiError(f"{url} did not answer in JSON: is --url the leaderboard's address?") from None
