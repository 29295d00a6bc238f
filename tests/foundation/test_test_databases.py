"""The suite's own plumbing: the test databases are dropped at the end of a run even when a
session on them was left open (tests/conftest.py, django_db_setup)."""
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]


def test_the_test_database_is_dropped_with_a_session_left_open(require_postgres):
    from django.conf import settings

    s = settings.DATABASES["default"]
    name = f"leakcase_{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_"))}
    env.update(DATABASE_URL=f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{name}", PGPASSWORD=s["PASSWORD"] or "")
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-W", "error::pytest.PytestWarning", "tests/foundation/leak_case.py"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    finally:
        with psycopg.connect(dbname="postgres", user=s["USER"], password=s["PASSWORD"] or None, host=s["HOST"],
                             port=s["PORT"] or None, autocommit=True) as maintenance:
            left = [row[0] for row in maintenance.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                                          (f"%{name}%",))]
            for db in left:  # so that a failed run's stays on no developer's server
                maintenance.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "1 passed" in out and "teardown test databases" not in out, out
    assert left == []
