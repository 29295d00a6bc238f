"""Fixtures for the site back-end tests: real PostgreSQL (require_postgres), real Redis, the
softmax task as load_tasks stores it, an owner, another user and staff."""
from __future__ import annotations

import os
import uuid

import pytest
import redis
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model



@pytest.fixture(autouse=True)
def _postgres(require_postgres):
    """The site's tests run against PostgreSQL (DATABASE_URL from scripts/services.sh)."""


def _require(available: bool, what: str) -> None:
    if available:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{what} is required under CI=true but is not available")
    pytest.skip(f"{what} not available")


@pytest.fixture
def require_sandbox():
    import sandbox

    try:
        sandbox.choose_backend(django_settings.SANDBOX_BACKEND or None)
        ok = True
    except sandbox.SandboxError:
        ok = False
    _require(ok, "a sandbox backend (Docker or bubblewrap)")


@pytest.fixture(scope="session")
def require_task_commands():
    """`python -m evaluator describe` and `triage`, which the site runs in the box to add a task."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = all(subprocess.run([sys.executable, "-m", "evaluator", kind, "--help"], cwd=root, capture_output=True,
                               timeout=120).returncode == 0 for kind in ("describe", "triage"))
    _require(found, "the evaluator's describe and triage commands")


@pytest.fixture
def redis_client():
    client = redis.Redis.from_url(django_settings.CELERY_BROKER_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        _require(False, f"Redis at {django_settings.CELERY_BROKER_URL}")
    return client


@pytest.fixture
def eval_queue(settings, redis_client):
    """A queue of this test's own, so no worker of a developer's stack takes its messages."""
    name = f"eval-test-{uuid.uuid4().hex[:10]}"
    settings.EVAL_QUEUE = name
    yield name
    redis_client.delete(name)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="pw-staff-1234", is_staff=True,
                                                is_superuser=True)


@pytest.fixture
def users(db):
    """Three plain accounts: ann, ben and cy."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    return {name: User.objects.create_user(name, password="pw-" + name + "-1234") for name in ("ann", "ben", "cy")}
