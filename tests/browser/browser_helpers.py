"""What the browser tests share: one password for their users, and logging in through the form."""
from __future__ import annotations

PASSWORD = "a-long-pass-phrase-9"


def user(name, **kw):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(name, password=PASSWORD, **kw)


def log_in(page, base: str, name: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", name)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base}/")
