"""Logins and sign-ups are throttled per IP and per account (django-ratelimit, counters in the
real Redis): guessing stops after a few failures, the right password included, with a 429 that
says why; other clients and accounts are not affected."""
import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

pytestmark = pytest.mark.django_db

RIGHT = "pw-owner-1234"


def login(client, username, password, ip="10.0.0.1"):
    return client.post(reverse("login"), {"username": username, "password": password}, REMOTE_ADDR=ip)


def signup(client, username, ip="10.0.0.1"):
    password = "a-long-pass-phrase-9"
    return client.post(reverse("signup"), {"username": username, "password1": password, "password2": password},
                       REMOTE_ADDR=ip)


def test_an_account_is_closed_to_guessing_after_five_failures(client, owner, settings):
    assert settings.LOGIN_FAILURES_PER_ACCOUNT == "5/15m"
    for _ in range(5):
        assert login(client, "owner", "wrong-guess").status_code == 200
    resp = login(client, "owner", RIGHT)  # the right password, too late
    assert resp.status_code == 429
    assert "Too many failed logins" in resp.content.decode()
    assert 0 < int(resp["Retry-After"]) <= 15 * 60
    assert "_auth_user_id" not in client.session
    # the same account from another address is closed as well: the limit is per account
    assert login(client, "owner", RIGHT, ip="10.9.9.9").status_code == 429


def test_one_address_is_closed_after_twenty_failures_across_accounts(client, owner, other):
    for i in range(20):
        assert login(client, f"user{i}", "wrong-guess").status_code == 200
    assert login(client, "other", "pw-other-1234").status_code == 429
    # another address still logs in
    assert login(client, "other", "pw-other-1234", ip="10.0.0.2").status_code == 302


def test_successful_logins_are_not_counted(client, owner):
    for _ in range(8):
        assert login(client, "owner", RIGHT).status_code == 302
        client.logout()


def test_sign_ups_are_limited_per_address(client):
    for i in range(5):
        assert signup(client, f"newbie{i}").status_code == 302
        client.logout()
    resp = signup(client, "newbie5")
    assert resp.status_code == 429 and "Too many sign-ups" in resp.content.decode()
    assert not get_user_model().objects.filter(username="newbie5").exists()
    assert signup(client, "newbie5", ip="10.0.0.2").status_code == 302


def test_without_its_counters_the_throttle_refuses_instead_of_failing(client, owner, settings):
    settings.CACHES = {**settings.CACHES, "throttle": {**settings.CACHES["throttle"],
                                                       "LOCATION": "redis://127.0.0.1:1/0"}}
    resp = login(client, "owner", RIGHT)
    assert resp.status_code == 429
    assert client.get(reverse("login")).status_code == 200  # the page itself still shows


def test_the_admin_login_counts_against_the_same_limits(client, owner):
    get_user_model().objects.create_superuser("boss", password="boss-pass-phrase-1")
    for _ in range(5):
        resp = client.post("/admin/login/?next=/admin/", {"username": "boss", "password": "wrong-guess"},
                           REMOTE_ADDR="10.0.0.1")
        assert resp.status_code == 200
    resp = client.post("/admin/login/?next=/admin/", {"username": "boss", "password": "boss-pass-phrase-1"},
                       REMOTE_ADDR="10.0.0.1")
    assert resp.status_code == 429
    # and the site's own login page refuses the same account
    assert login(client, "boss", "boss-pass-phrase-1", ip="10.0.0.3").status_code == 429
