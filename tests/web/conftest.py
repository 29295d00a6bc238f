"""Fixtures for the page tests: the softmax task as load_tasks stores it, three users (an owner,
another user, staff) and a finished submission with a realistic evaluator report."""
from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

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


@pytest.fixture(autouse=True)
def _fresh_fingerprint(settings):
    """Pages read the data fingerprint on every request and rebuild at once here, so a test sees
    its own writes."""
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0


@pytest.fixture(autouse=True)
def _empty_page_cache():
    from leaderboard.web import pagecache

    pagecache.clear()
