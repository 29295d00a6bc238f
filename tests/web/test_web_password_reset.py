"""Password reset through Django's own views: an optional address at sign-up, a link by mail, a new
password that logs in, and the link working once. Asking for links is throttled per client and
per address (leaderboard/web/throttle.py, counters in the real Redis): a loop fills no inbox."""
import re

from django.contrib.auth import get_user_model
from django.core import mail


def test_a_user_who_signed_up_with_an_address_resets_the_password_by_mail(client, db):
    r = client.post("/accounts/signup/", {"username": "ada", "email": "ada@example.org",
                                          "password1": "a-long-pass-1234", "password2": "a-long-pass-1234"})
    assert r.status_code == 302 and get_user_model().objects.get(username="ada").email == "ada@example.org"
    client.post("/accounts/logout/")
    assert 'id="forgot"' in client.get("/accounts/login/").content.decode()

    r = client.post("/accounts/password-reset/", {"email": "ada@example.org"}, follow=True)
    assert 'id="reset-sent"' in r.content.decode() and len(mail.outbox) == 1
    link = re.search(r"http://testserver(/accounts/password-reset/\S+/)", mail.outbox[0].body).group(1)

    form = client.get(link, follow=True)
    assert 'id="new-password-form"' in form.content.decode()
    done = client.post(form.redirect_chain[-1][0], {"new_password1": "another-pass-5678",
                                                    "new_password2": "another-pass-5678"}, follow=True)
    assert 'id="reset-complete"' in done.content.decode()
    assert client.login(username="ada", password="another-pass-5678")
    client.logout()
    assert 'id="reset-invalid"' in client.get(link, follow=True).content.decode()


def test_the_address_is_optional_at_sign_up(client, db):
    r = client.post("/accounts/signup/", {"username": "bob", "password1": "a-long-pass-1234",
                                          "password2": "a-long-pass-1234"})
    assert r.status_code == 302 and get_user_model().objects.get(username="bob").email == ""


def _ask_reset(client, email, ip="10.0.0.1"):
    return client.post("/accounts/password-reset/", {"email": email}, REMOTE_ADDR=ip)


def test_reset_mails_to_one_address_are_throttled_whoever_asks(client, db, settings):
    assert settings.PASSWORD_RESETS_PER_EMAIL == "3/h"
    get_user_model().objects.create_user("ada", email="ada@example.org", password="a-long-pass-1234")
    # 30 requests, each from its own client, in every spelling that reaches Ada's inbox
    spellings = ["ada@example.org", " ADA@Example.org ", "Ada@EXAMPLE.ORG"]
    answers = [_ask_reset(client, spellings[i % 3], ip=f"10.0.1.{i}") for i in range(30)]
    assert [r.status_code for r in answers] == [302] * 3 + [429] * 27
    assert len(mail.outbox) == 3
    refused = answers[-1]
    assert "Too many password-reset requests" in refused.content.decode()
    assert 0 < int(refused["Retry-After"]) <= 3600
    # another address is not held back
    get_user_model().objects.create_user("bob", email="bob@example.org", password="a-long-pass-1234")
    assert _ask_reset(client, "bob@example.org", ip="10.0.2.1").status_code == 302
    assert len(mail.outbox) == 4


def test_reset_requests_from_one_client_are_throttled_across_addresses(client, db, settings):
    assert settings.PASSWORD_RESETS_PER_IP == "10/h"
    get_user_model().objects.create_user("ada", email="ada@example.org", password="a-long-pass-1234")
    for i in range(10):
        assert _ask_reset(client, f"nobody{i}@example.org").status_code == 302
    resp = _ask_reset(client, "ada@example.org")
    assert resp.status_code == 429 and "Too many password-reset requests" in resp.content.decode()
    assert mail.outbox == []
    assert _ask_reset(client, "ada@example.org", ip="10.0.0.2").status_code == 302
    assert len(mail.outbox) == 1
    assert client.get("/accounts/password-reset/").status_code == 200  # the form itself still shows
