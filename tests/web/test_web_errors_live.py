"""The error pages as `make run` serves them: the development server with DEBUG off and --insecure
(scripts/run.sh), a process of its own on the test database, read over HTTP."""
from __future__ import annotations

import urllib.error
import urllib.request

# one browser: the CSRF cookie of the first page goes with the forms after it
browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())


def fetch(url: str, data: bytes | None = None, content_type: str = "") -> tuple[int, str, str]:
    req = urllib.request.Request(url, data=data, headers={"Content-Type": content_type} if content_type else {})
    try:
        with browser.open(req, timeout=30) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


def test_the_development_server_with_debug_off_shows_the_sites_own_pages(live_site):
    status, kind, body = fetch(live_site + "/no/such/page/")
    assert status == 404 and 'id="not-found"' in body and "URLconf" not in body

    status, kind, body = fetch(live_site + "/api/no/such/thing")
    assert status == 404 and kind == "application/json" and body.startswith('{"error":')

    status, kind, body = fetch(live_site + "/accounts/logout/")
    assert status == 405 and 'id="not-allowed"' in body

    status, kind, body = fetch(live_site + "/accounts/login/", b"username=x", "application/x-www-form-urlencoded")
    assert status == 403 and 'id="forbidden"' in body  # no CSRF cookie yet

    fetch(live_site + "/accounts/login/")
    status, kind, body = fetch(live_site + "/accounts/login/", b"username=" + b"x" * (5 * 1024 * 1024),
                               "application/x-www-form-urlencoded")
    assert status == 413 and 'id="too-large"' in body and "RequestDataTooBig" not in body

    # the stylesheet the pages link to is served with DEBUG off too
    status, kind, body = fetch(live_site + "/static/css/site.css")
    assert status == 200 and kind.startswith("text/css")
