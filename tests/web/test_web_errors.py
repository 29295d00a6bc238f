"""The site's own error pages with DEBUG off, and JSON for every error under /api/."""
import logging

import pytest
from django.test import Client
from django.urls import path

from leaderboard.urls import handler400, handler403, handler404, handler500  # noqa: F401 (this URLconf's)
from leaderboard.urls import urlpatterns as site_urls


def boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom), path("api/boom", boom)]  # the site's own added below


def test_an_unknown_address_gets_the_sites_404_page(client, settings, db):
    settings.DEBUG = False
    r = client.get("/no/such/page/")
    html = r.content.decode()
    assert r.status_code == 404
    assert 'id="not-found"' in html and 'class="site-header"' in html and "Traceback" not in html


def test_an_unknown_submission_gets_the_404_page(client, settings, owner):
    settings.DEBUG = False
    client.force_login(owner)
    r = client.get("/submissions/999999/")
    assert r.status_code == 404 and 'id="not-found"' in r.content.decode()


@pytest.mark.urls(__name__)
def test_an_error_gets_the_sites_500_page(settings, db):
    settings.DEBUG = False
    r = Client(raise_request_exception=False).get("/boom/")
    html = r.content.decode()
    assert r.status_code == 500
    assert 'id="server-error"' in html and "a bug" not in html and "Traceback" not in html


def forbidden(request):
    from django.core.exceptions import PermissionDenied

    raise PermissionDenied


def bad(request):
    from django.core.exceptions import SuspiciousOperation

    raise SuspiciousOperation("a forged header")


urlpatterns += [path("forbidden/", forbidden), path("bad/", bad), *site_urls]


@pytest.mark.urls(__name__)
def test_a_refusal_gets_the_sites_403_page_and_a_bad_request_its_400_page(settings, db):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    r403, r400 = client.get("/forbidden/"), client.get("/bad/")
    assert r403.status_code == 403 and 'id="forbidden"' in r403.content.decode()
    assert r400.status_code == 400 and 'id="bad-request"' in r400.content.decode()
    assert "a forged header" not in r400.content.decode()


@pytest.mark.parametrize("path", ["/accounts/logout/", "/submissions/1/publish/", "/accounts/tokens/1/revoke/"])
def test_a_visit_to_a_post_only_address_gets_the_405_page(client, settings, owner, path):
    settings.DEBUG = False
    client.force_login(owner)
    r = client.get(path)
    html = r.content.decode()
    assert r.status_code == 405 and 'id="not-allowed"' in html and 'class="site-header"' in html
    assert "POST" in r["Allow"]


def test_a_form_without_its_csrf_cookie_gets_the_sites_403_page(settings, owner):
    settings.DEBUG = False
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    r = client.post("/accounts/logout/")
    assert r.status_code == 403 and "cookie" in r.content.decode() and 'class="site-header"' in r.content.decode()


@pytest.mark.parametrize("urlencoded", [False, True])
def test_a_paste_too_large_to_read_gets_the_upload_form_with_the_limit(client, settings, owner, task, urlencoded):
    settings.DEBUG = False
    client.force_login(owner)
    client.raise_request_exception = False
    if urlencoded:
        body = b"task=softmax&mode=test&code=" + b"x" * (5 * 1024 * 1024)
        r = client.generic("POST", "/upload/", body, content_type="application/x-www-form-urlencoded")
    else:
        r = client.post("/upload/", {"task": "softmax", "mode": "test", "code": "x" * (5 * 1024 * 1024)})
    html = r.content.decode()
    assert r.status_code == 413 and 'id="refusal"' in html and "262,144 bytes" in html
    assert 'name="code"' in html and "RequestDataTooBig" not in html and "Traceback" not in html


def _logged(caplog) -> list[tuple]:
    return [(r.name, r.levelname, r.getMessage(), bool(r.exc_info)) for r in caplog.records]


@pytest.mark.parametrize("path", ["/upload/", "/accounts/login/"])
def test_a_body_too_large_to_read_is_logged_in_one_line_as_the_api_logs_it(client, settings, owner, task,
                                                                         caplog, path):
    """The client's to fix, not the site's: one warning line with the status, no traceback."""
    from leaderboard import services

    settings.DEBUG = False
    _, key = services.api_token_create(user=owner, name="t")
    api = Client(raise_request_exception=False, headers={"Authorization": f"Token {key}"})
    client.force_login(owner)
    client.raise_request_exception = False
    paste = {"task": "softmax", "mode": "test", "code": "x" * (5 * 1024 * 1024)}
    with caplog.at_level(logging.INFO):
        assert api.post("/api/submissions", {**paste, "source": paste["code"]}).status_code == 413
        [(logger, level, line, traceback)] = _logged(caplog)
        caplog.clear()
        assert client.post(path, paste).status_code == 413
    assert _logged(caplog) == [(logger, level, line.replace("/api/submissions", path), False)]
    assert not traceback and level == "WARNING"


def test_a_body_too_large_elsewhere_gets_the_413_page(client, settings, owner):
    settings.DEBUG = False
    client.raise_request_exception = False
    r = client.post("/accounts/login/", {"username": "x" * (5 * 1024 * 1024)})
    assert r.status_code == 413 and 'id="too-large"' in r.content.decode()


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("method, path, status, code", [
    ("get", "/api/no/such/thing", 404, "not_found"),
    ("delete", "/api/tasks", 405, "method_not_allowed"),
    ("trace", "/api/tasks", 405, "method_not_allowed"),
])
def test_every_api_error_is_json(settings, owner, debug, method, path, status, code):
    from leaderboard import services

    settings.DEBUG = debug
    _, key = services.api_token_create(user=owner, name="t")
    client = Client(raise_request_exception=False, headers={"Authorization": f"Token {key}"})
    r = getattr(client, method)(path)
    assert r.status_code == status and r["Content-Type"] == "application/json"
    assert set(r.json()) == {"error", "code"} and r.json()["error"] and r.json()["code"] == code


@pytest.mark.urls(__name__)
def test_an_api_error_is_json_500(settings, db):
    settings.DEBUG = False
    r = Client(raise_request_exception=False).get("/api/boom")
    assert r.status_code == 500 and r.json() == {"error": r.json()["error"], "code": "server_error"}
    assert "a bug" not in r.json()["error"]
