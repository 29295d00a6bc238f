"""Shared test plumbing.

The real services (PostgreSQL, Redis, Docker engine, Chromium) are started by `make test`
(scripts/services.sh). A test that needs one asks `require(...)`: without the service it skips on
a developer's machine, and FAILS under CI=true so that a broken CI can never pass by skipping.
"""
import json
import os
import shutil
import subprocess

import pytest

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(available: bool, what: str) -> None:
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required under CI=true but is not available")
    pytest.skip(f"{what} not available")


def docker_available() -> bool:
    if not shutil.which("docker"):
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def bwrap_available() -> bool:
    if not shutil.which("bwrap"):
        return False
    return subprocess.run(["bwrap", "--ro-bind", "/", "/", "true"], capture_output=True).returncode == 0


def cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_addoption(parser):
    parser.addoption(
        "--part", choices=("parallel", "serial"), default=None,
        help="only the tests not marked serial (`make test` runs them on several workers), or only "
             "those marked serial (run afterwards, a worker per core); default: every test")


def pytest_configure(config):
    _pin_serial_worker(config)


def _pin_serial_worker(config) -> None:
    """`--part serial` on several workers (scripts/test.sh): each worker, and everything it starts
    (judges, runners, boxes: sandbox/limits.py), runs on a core of its own, so that two timed
    evaluations never share a core. Without a core for each worker, nothing is pinned."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or config.getoption("part") != "serial":
        return
    from evaluator.wire import affinity
    from sandbox.limits import worker_cores

    cores = worker_cores()
    count, index = int(workerinput["workercount"]), int(workerinput["workerid"].removeprefix("gw"))
    if count > len(cores):
        return

    # every thread of the worker, execnet's too, as the judge pins a process for timing
    affinity.pin({"worker": [os.getpid()]}, {"worker": cores[index]})


def pytest_collection_modifyitems(config, items):
    _keep_part(config, items)
    _longest_modules_first(config, items)
    # GPU tests skip without a GPU, in CI too: CI machines have none.
    if cuda_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


def _longest_modules_first(config, items) -> None:
    """The modules that took longest last time first (tests/module_durations.json, the table of
    the part being run; a module not listed last, each module's tests in their own order). Under
    `--dist loadscope` with `--no-loadscope-reorder` the workers take modules in this order, so no
    long module starts near the end while the other workers run out of work."""
    path = os.path.join(os.path.dirname(__file__), "module_durations.json")
    try:
        with open(path) as f:
            seconds = json.load(f)[config.getoption("part") or "parallel"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0))


def _keep_part(config, items) -> None:
    """--part: deselect the tests of the other part, as -m would (and composing with any -m)."""
    part = config.getoption("part")
    if part is None:
        return
    want_serial = part == "serial"
    kept, dropped = [], []
    for item in items:
        (kept if (item.get_closest_marker("serial") is not None) == want_serial else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture
def require_docker():
    require(docker_available(), "a Docker engine")


@pytest.fixture
def require_bwrap():
    require(bwrap_available(), "bubblewrap")


@pytest.fixture
def require_postgres():
    from django.conf import settings

    require(settings.DATABASES["default"]["ENGINE"].endswith("postgresql"), "PostgreSQL (DATABASE_URL)")


@pytest.fixture
def require_chromium():
    require(os.path.exists("/usr/bin/chromium"), "Chromium at /usr/bin/chromium")


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture(scope="session")
def chromium():
    """One browser for the whole session, whichever folder's tests use it: Playwright's sync API
    runs an event loop in this thread, so a second sync_playwright() in the same process fails.
    Tests ask require_chromium first, so this only runs with it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's, and before it drops the test databases, no other session left on them:
    DROP DATABASE refuses a database another session still uses (it waits 5 s for sessions that
    are ending). One can stay open in this process: once Playwright's sync API runs its event loop
    in the main thread, Django keeps that thread's connections per context rather than per thread
    (asgiref's Local), so a connection opened before the browser started is out of reach of every
    later close_all(). A session left by a test's killed child would end by itself; ending it here
    costs nothing. Without pytest-django (the GPU host) nothing asks for this fixture."""
    yield
    from django.db import connections

    with django_db_blocker.unblock():
        for conn in connections.all():
            if conn.vendor != "postgresql":
                continue
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                               "WHERE datname = current_database() AND pid <> pg_backend_pid()")
            conn.close()


# ---- site fixtures shared by tests/site, tests/web and the browser tests ----------------------

@pytest.fixture(autouse=True)
def _site_settings(request):
    """Test users are made and logged in with a fast hasher: the default one takes a quarter of a
    second per password on this machine, a second or more per test of the pages. Each test counts
    logins and sign-ups from zero (the counters live in the shared Redis), and sees its own writes
    on the cached pages.

    Without pytest-django (the GPU host runs the evaluator's tests and has no Django) there are no
    settings to change."""
    if not request.config.pluginmanager.hasplugin("django"):
        return
    import uuid

    settings = request.getfixturevalue("settings")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    settings.RATELIMIT_CACHE_PREFIX = f"rl-test-{uuid.uuid4().hex}:"
    # the public pages and API reads (leaderboard/web/pagecache.py) read the data fingerprint on
    # every request and rebuild at once, from an empty cache: a test sees its own writes
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0
    settings.QUEUE_READS_MAX_AGE_S = 0
    settings.API_OWN_UNFINISHED_MAX_AGE_S = 0
    from leaderboard.api import owncache
    from leaderboard.web import pagecache

    pagecache.clear()
    owncache.clear()


@pytest.fixture
def task(db):
    """The softmax task as `manage.py load_tasks` stores it."""
    from evaluator.tasks import get_task
    from leaderboard import services

    row, _ = services.task_sync(spec=get_task("softmax"))
    return row


@pytest.fixture
def owner(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("owner", password="pw-owner-1234")


@pytest.fixture
def other(db):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user("other", password="pw-other-1234")


@pytest.fixture
def at(time_machine):
    """at(hours after clock_helpers.T0): the clock stands there until moved again."""
    from datetime import timedelta

    from clock_helpers import T0

    def move(hours: float):
        time_machine.move_to(T0 + timedelta(hours=hours), tick=False)
    move(0)
    return move
