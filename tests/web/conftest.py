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
