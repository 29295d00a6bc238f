"""No secret reaches a log line: the site's log handler and the worker's take URL passwords and the
site's own secrets out of every message and traceback, whatever an exception quoted."""
import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

from leaderboard.reporting import RedactingFilter, redact

ROOT = Path(__file__).resolve().parents[2]

LOG_THEM = """
import django, logging
django.setup()
from django.conf import settings
log = logging.getLogger("leaderboard.services")
log.warning("could not enqueue: broker %s, database %s", settings.CELERY_BROKER_URL, settings.DATABASE_URL)
try:
    raise ConnectionError(f"auth failed with key {settings.SECRET_KEY}")
except ConnectionError:
    log.exception("evaluation failed")
print("LOGGED")
"""


def test_the_site_log_has_no_password_and_no_secret_key(tmp_path):
    pw_db, pw_broker = (secrets.token_hex(8) for _ in range(2))
    key = secrets.token_urlsafe(50)  # DEBUG off refuses a weak key
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    env.update(DEBUG="0", ALLOWED_HOSTS="lb.example.org", SECRET_KEY=key, VAR_DIR=str(tmp_path),
               DJANGO_SETTINGS_MODULE="leaderboard.settings",
               DATABASE_URL=f"postgres://site:{pw_db}@db.internal:5432/kb",
               CELERY_BROKER_URL=f"redis://:{pw_broker}@redis.internal:6379/0")
    out = subprocess.run([sys.executable, "-c", LOG_THEM], cwd=ROOT, env=env, capture_output=True, text=True)
    assert "LOGGED" in out.stdout, out.stderr
    assert "could not enqueue" in out.stderr and "redis.internal" in out.stderr and "Traceback" in out.stderr
    for secret in (pw_db, pw_broker, key):
        assert secret not in out.stderr


def test_the_worker_log_handlers_get_the_filter():
    from leaderboard.celery import _redact_worker_logs

    logger = logging.getLogger("test-worker-" + secrets.token_hex(4))
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    _redact_worker_logs(logger=logger)
    assert any(isinstance(f, RedactingFilter) for f in handler.filters)


def test_redact_keeps_the_rest_of_the_line():
    assert redact("Error connecting to redis://:hunter2@host:6379/0 (refused)") == \
        "Error connecting to redis://:***@host:6379/0 (refused)"
    assert redact("postgres://site:p%40ss@db/kb") == "postgres://site:***@db/kb"
    assert redact("nothing to hide here") == "nothing to hide here"


def test_healthz_says_what_is_down_without_the_password(client, settings, db):
    password = secrets.token_hex(8)
    settings.CELERY_BROKER_URL = f"redis://:{password}@127.0.0.1:1/0"
    resp = client.get("/healthz")
    assert resp.status_code == 503
    assert resp.json()["broker"]["ok"] is False
    assert password not in resp.content.decode()
