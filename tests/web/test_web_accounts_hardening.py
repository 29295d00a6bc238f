"""Accounts: the one-time token page is never cached, and sign-up applies Django's full set of
password validators and refuses names that pass for an existing one."""
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


def _signup(client, username):
    password = "a-long-pass-phrase-9"
    return client.post(reverse("signup"), {"username": username, "password1": password, "password2": password})


@pytest.mark.parametrize("existing, lookalike", [
    ("alice", "\u0430lice"),  # Cyrillic а, then Latin
    ("ace", "\u0430\u0441\u0435"),  # all Cyrillic: а с е
    ("Alice", "AIice"),  # capital I for l
    ("bob1", "bobl"),
], ids=["mixed-script", "whole-script", "I-for-l", "l-for-1"])
def test_signup_refuses_a_name_that_passes_for_an_existing_one(client, db, existing, lookalike):
    get_user_model().objects.create_user(existing, password="pw-existing-1234")
    r = _signup(client, lookalike)
    assert r.status_code == 200
    assert "looks like the existing name" in r.content.decode() or "mixes scripts" in r.content.decode()
    assert not get_user_model().objects.filter(username=lookalike).exists()


def test_signup_refuses_a_mixed_script_lookalike_even_alone(client, db):
    r = _signup(client, "\u0430lice")
    assert r.status_code == 200 and "mixes scripts" in r.content.decode()
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize("existing, name", [
    ("alice", "alicia"), ("alice", "alide"), ("ace", "\u043c\u0438\u0440"),
], ids=["longer", "one-letter-apart", "cyrillic-word"])
def test_signup_takes_names_that_only_resemble(client, db, existing, name):
    get_user_model().objects.create_user(existing, password="pw-existing-1234")
    assert _signup(client, name).status_code == 302
    assert get_user_model().objects.filter(username=name).exists()
