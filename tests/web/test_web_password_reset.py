"""Password reset through Django's own views: an optional address at sign-up, a link by mail, a new
password that logs in, and the link working once."""
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
