"""The throttles per address count the connection's address: a client's own X-Forwarded-For resets
nothing under the web server as `make run` starts it (scripts/web.sh, uvicorn), and the header
counts only from a proxy the deployment names (TRUSTED_PROXY_IPS). Over HTTP, against the real
Redis, with counters of this test's own (RATELIMIT_CACHE_PREFIX)."""
import re
import uuid

import pytest
import requests
from django.contrib.auth import get_user_model
from django.db import connection

from proc_helpers import site_env, web_server


@pytest.fixture
def start_site(transactional_db, tmp_path):
    def start(**env):
        return web_server(site_env(ALLOWED_HOSTS="127.0.0.1", RATELIMIT_CACHE_PREFIX=f"rl-{uuid.uuid4().hex}:",
                                   **env), tmp_path / "web.log", "/static/css/site.css")

    yield start
    connection.close()


def signup(url: str, username: str, headers: dict | None = None) -> int:
    """A sign-up as a browser sends it (the form's CSRF token and cookie), from a fresh session."""
    with requests.Session() as browser:
        page = browser.get(url + "/accounts/signup/", timeout=10).text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        password = "a-long-pass-phrase-9"
        return browser.post(url + "/accounts/signup/", data={
            "csrfmiddlewaretoken": token, "username": username, "password1": password, "password2": password},
            headers=headers or {}, allow_redirects=False, timeout=10).status_code


def test_a_spoofed_forwarded_for_does_not_reset_the_sign_up_limit(start_site, settings):
    assert settings.SIGNUPS_PER_IP == "5/h" and settings.TRUSTED_PROXY_IPS == []
    with start_site() as url:
        for i in range(5):
            assert signup(url, f"newbie{i}") == 302
        assert signup(url, "newbie5") == 429
        for spoofed in ("203.0.113.7", "198.51.100.1, 203.0.113.8"):
            assert signup(url, "newbie5", {"X-Forwarded-For": spoofed}) == 429
    assert not get_user_model().objects.filter(username="newbie5").exists()


def test_a_named_proxys_forwarded_for_is_the_clients_address(start_site):
    with start_site(TRUSTED_PROXY_IPS="127.0.0.1") as url:
        for i in range(5):
            assert signup(url, f"newbie{i}", {"X-Forwarded-For": "203.0.113.7"}) == 302
        assert signup(url, "newbie5", {"X-Forwarded-For": "203.0.113.7"}) == 429
        # another client behind the same proxy has counters of its own
        assert signup(url, "newbie5", {"X-Forwarded-For": "203.0.113.8"}) == 302
