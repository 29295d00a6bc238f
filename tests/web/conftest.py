"""Fixtures for the page tests: the softmax task as load_tasks stores it, three users (an owner,
another user, staff) and a finished submission with a realistic evaluator report."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from proc_helpers import site_env, web_server
from web_helpers import make_done


@pytest.fixture(autouse=True)
def _postgres(require_postgres):
    """The pages are measured and tested on PostgreSQL (DATABASE_URL from scripts/services.sh)."""


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="pw-staff-1234", is_staff=True)


@pytest.fixture
def done(task, owner):
    return make_done(task, owner, speedup=1.25)


@pytest.fixture
def live_site(transactional_db, tmp_path):
    """The web server as `make run` starts it (scripts/web.sh: uvicorn, DEBUG off), a process of its
    own on the test database, read over HTTP."""
    from django.db import connection

    env = site_env(ALLOWED_HOSTS="127.0.0.1,localhost", PYTHONUNBUFFERED="1")
    try:
        with web_server(env, tmp_path / "web.log", "/static/css/site.css") as url:
            yield url
    finally:
        connection.close()
