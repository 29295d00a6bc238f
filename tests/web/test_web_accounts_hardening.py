"""Accounts: the one-time token page is never cached, and sign-up applies Django's full set of
password validators."""
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse


def test_the_token_page_is_never_stored(client, owner, db):
    client.force_login(owner)
    r = client.post(reverse("token_create"), {"name": "laptop"})
    assert r.status_code == 302  # post, redirect, get: the key is shown by the page that follows
    r = client.get(r["Location"])
    assert re.search(r'id="new-token">lb_', r.content.decode())
    directives = {d.strip() for d in r["Cache-Control"].split(",")}
    assert {"no-store", "private"} <= directives


@pytest.mark.parametrize("password, message", [
    ("83920174650", "entirely numeric"),
    ("short-1", "too short"),
    ("password123", "too common"),
    ("newbie-newbie", "too similar"),
], ids=["numeric", "short", "common", "like-the-username"])
def test_signup_refuses_weak_passwords(client, db, password, message):
    r = client.post(reverse("signup"), {"username": "newbie-newbie", "password1": password, "password2": password})
    assert r.status_code == 200
    assert message in r.content.decode()
    assert not get_user_model().objects.filter(username="newbie-newbie").exists()
