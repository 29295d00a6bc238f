"""Browser tests: Debian's Chromium driven by Playwright against pytest-django's live_server.

The submission really is evaluated: a real Celery worker process (the pipeline tests' helpers,
tests/pipeline/pipeline_helpers.py) reads a queue of the test's own on the test Redis, runs the
sandbox and stores the result in the test database, while the page polls its status with htmx.
"""
from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pipeline"))
import pipeline_helpers as ph  # noqa: E402

# Playwright's sync API runs an asyncio loop in this thread; the ORM calls the tests make between
# browser steps are ordinary blocking calls, which Django otherwise refuses inside a loop.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

@pytest.fixture
def page(require_chromium, chromium):
    # the tests' own waits (wait_for_function) evaluate strings in the page, which the site's
    # Content-Security-Policy forbids; test_browser_csp.py uses the site under its policy
    context = chromium.new_context(bypass_csp=True)
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def site(live_server, transactional_db, require_postgres, settings):
    """The live site with the softmax task loaded; pages read the data fingerprint each request."""
    from evaluator.tasks import get_task
    from leaderboard import services

    from leaderboard.web import pagecache

    settings.WEB_FINGERPRINT_MAX_AGE_S = 0
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0
    pagecache.clear()
    services.task_sync(spec=get_task("softmax"))
    return live_server


@pytest.fixture
def worker(site, settings, tmp_path):
    """A real Celery worker on a queue of this test's own, against the test database."""
    import redis
    from django.db import connection

    client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_connect_timeout=2)
    try:
        client.ping()
    except redis.ConnectionError:
        what = f"Redis at {settings.CELERY_BROKER_URL}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{what} is required under CI=true but is not available")
        pytest.skip(f"{what} not available")
    queue = f"eval-browser-{uuid.uuid4().hex[:8]}"
    settings.EVAL_QUEUE = queue  # where the live server's uploads are sent
    env = ph.process_env(database_name=connection.settings_dict["NAME"], broker_url=settings.CELERY_BROKER_URL,
                         queue=queue)
    proc = ph.worker(env, queue=queue, name=f"{queue}@browser", workdir=tmp_path).start()
    try:
        yield proc
    finally:
        proc.stop(grace=10)
        client.delete(queue)
        connection.close()  # the worker's connections are gone; let the flush run
