"""What an error shows: never the settings, the environment or a connection URL's password,
whether DEBUG is off (a deployment) or on (a developer's machine)."""
import secrets

import pytest
from django.urls import include, path

# made at run time: the debug page quotes this file's source lines around the error
CANARY = "canary-" + secrets.token_hex(6)
URL_WITH_PASSWORD = f"postgres://site:{CANARY}@db.internal:5432/kb"


def boom(request):
    raise RuntimeError("a bug in a view")


urlpatterns = [path("boom/", boom), path("", include("leaderboard.urls"))]


@pytest.fixture
def boom_site(settings):
    settings.ROOT_URLCONF = __name__
    settings.DATABASE_URL = URL_WITH_PASSWORD
    settings.CELERY_BROKER_URL = f"redis://:{CANARY}@redis.internal:6379/0"


def test_a_server_error_with_debug_off_shows_nothing_of_the_site(client, boom_site, settings):
    settings.DEBUG = False
    client.raise_request_exception = False
    resp = client.get("/boom/", DATABASE_URL=URL_WITH_PASSWORD)
    assert resp.status_code == 500
    body = resp.content.decode()
    assert CANARY not in body and "DATABASE_URL" not in body and "SECRET_KEY" not in body
    assert "Traceback" not in body and "RuntimeError" not in body


def test_the_debug_page_masks_connection_urls(client, boom_site, settings):
    """runserver copies the process environment into every request's META; the debug page lists
    both. Connection URLs carry passwords under names Django does not mask by itself."""
    settings.DEBUG = True
    client.raise_request_exception = False
    resp = client.get("/boom/", DATABASE_URL=URL_WITH_PASSWORD, HTTP_AUTHORIZATION="Token lb_secret-token")
    assert resp.status_code == 500
    body = resp.content.decode()
    assert "RuntimeError" in body  # it is the debug page
    assert CANARY not in body
    assert "lb_secret-token" not in body


def test_too_many_fields_get_a_400_not_a_debug_page(client, db, settings):
    settings.DEBUG = False
    fields = {f"f{i}": "x" for i in range(1002)}
    resp = client.post("/accounts/login/", fields)
    assert resp.status_code == 400
    assert b"SECRET" not in resp.content and b"DATABASE" not in resp.content


def test_pages_send_a_content_security_policy_allowing_only_own_scripts(client, db):
    resp = client.get("/accounts/login/")
    policy = resp["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";") if d.strip())
    assert directives["script-src"] == "'self'"
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in policy
