"""Wrong passwords sent at once, each from its own client address, against the live server (its
threads, the real Redis and PostgreSQL): the per-account limit holds however many are in flight,
and whatever spelling of the name reaches the account."""
from __future__ import annotations

import re
import threading

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_login_failed

pytestmark = pytest.mark.django_db(transaction=True)

BURST = 40
RIGHT = "pw-carol-1234"
# each reaches carol's account once Django has normalised it (strip, NFKC)
SPELLINGS = ["carol", "carol ", " carol", "ｃａｒｏｌ", "carol\t"]


@pytest.fixture
def carol(transactional_db):
    return get_user_model().objects.create_user("carol", password=RIGHT)


@pytest.fixture
def checked():
    """Passwords the live server checked and found wrong: Django sends user_login_failed from
    authenticate(), in the server's own threads."""
    seen = []
    lock = threading.Lock()

    def count(sender, credentials, **kwargs):
        with lock:
            seen.append(credentials.get("username"))

    user_login_failed.connect(count, weak=False)
    yield seen
    user_login_failed.disconnect(count)


@pytest.fixture(autouse=True)
def _one_window(time_machine, settings):
    """django-ratelimit counts in fixed windows, each key's shifted by crc32(key) % period: a burst
    that straddles the account's boundary is counted in two windows, twice the limit in all (a
    property of fixed windows, not of the burst). The clock starts just past carol's boundary."""
    import time
    import zlib

    from django_ratelimit.core import _split_rate

    period = _split_rate(settings.LOGIN_FAILURES_PER_ACCOUNT)[1]
    now = int(time.time())
    time_machine.move_to(now - now % period + zlib.crc32(b"carol") % period + 1, tick=True)


@pytest.fixture
def login_url(live_server, settings):
    # each request names its client in X-Real-IP, as the proxy of a deployment does
    settings.RATELIMIT_IP_META_KEY = "HTTP_X_REAL_IP"
    return live_server.url + "/accounts/login/"


def _csrf(url: str) -> str:
    page = requests.get(url, timeout=30)
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1), page.cookies["csrftoken"]


def _post(url, token, cookie, username, password, ip):
    # the live server's listen queue is short (Django's WSGIServer: 10): a connection it resets
    # before reading the request is sent again
    for _ in range(5):
        try:
            return requests.post(url, data={"csrfmiddlewaretoken": token, "username": username,
                                            "password": password},
                                 cookies={"csrftoken": cookie}, headers={"X-Real-IP": ip},
                                 allow_redirects=False, timeout=60)
        except requests.ConnectionError:
            continue
    raise AssertionError(f"the live server refused the connection five times ({username!r}, {ip})")


def _burst(url: str, usernames: list[str]) -> list[int]:
    token, cookie = _csrf(url)
    start = threading.Barrier(len(usernames))
    codes = [None] * len(usernames)

    def one(i):
        start.wait()
        codes[i] = _post(url, token, cookie, usernames[i], "wrong-guess", f"10.1.{i // 250}.{i % 250 + 1}").status_code

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(usernames))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def test_forty_wrong_passwords_at_once_are_checked_at_most_five_times(carol, checked, login_url, settings):
    assert settings.LOGIN_FAILURES_PER_ACCOUNT == "5/15m"
    codes = _burst(login_url, ["carol"] * BURST)
    assert len(checked) <= 5, f"{len(checked)} of {BURST} passwords were checked"
    assert codes.count(429) >= BURST - 5 and set(codes) <= {200, 429}
    token, cookie = _csrf(login_url)
    assert _post(login_url, token, cookie, "carol", RIGHT, "10.2.0.1").status_code == 429


def test_every_spelling_of_the_name_counts_against_the_one_account(carol, checked, login_url):
    codes = _burst(login_url, [SPELLINGS[i % len(SPELLINGS)] for i in range(BURST)])
    assert len(checked) <= 5, f"{len(checked)} of {BURST} passwords were checked"
    assert codes.count(429) >= BURST - 5
    # locked under every spelling, the right password included
    token, cookie = _csrf(login_url)
    for i, spelling in enumerate(SPELLINGS + ["CAROL"]):
        resp = _post(login_url, token, cookie, spelling, RIGHT, f"10.3.0.{i + 1}")
        assert resp.status_code == 429, (spelling, resp.status_code)
