"""Ctrl-C on `make run` while the worker evaluates: the worker ends its evaluation and acknowledges
it before Redis stops, the terminal says what it waits for, and the next `make run` keeps the
logs of this one (var/worker.log.1 and the others) instead of emptying them.

The launcher as people start it (tests/stack/stack_helpers.py: a copy of the checkout, its own
var/, Redis and web ports), the real CPU worker in bubblewrap, and a test-mode upload that
EVALUATOR_QUICK=1 keeps to a few seconds. STACK_TEST_SOURCE=DIR puts another checkout through it.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stack"))
from stack_helpers import DROPPED, ROOT, Stack, copy_checkout  # noqa: E402

pytestmark = [pytest.mark.slow]

IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
LOGS = ("worker.log", "beat.log", "redis.log")


@pytest.fixture
def stack_dir():
    path = Path(tempfile.mkdtemp(prefix="run-stop-", dir="/tmp"))
    os.chmod(path, 0o755)  # the box's runner passes through it, as through a newcomer's checkout
    yield copy_checkout(path)
    shutil.rmtree(path, ignore_errors=True)


def start(root: Path) -> Stack:
    stack = Stack(root, backend="bwrap", extra_env={"EVALUATOR_QUICK": "1"})
    try:
        # the address is said once the site answers there: opened at once, it is not refused
        deadline = time.monotonic() + 180
        while "site on http://" not in stack.output():
            assert stack.proc.poll() is None and time.monotonic() < deadline, stack.output()[-3000:]
            time.sleep(0.05)
        socket.create_connection(("127.0.0.1", stack.port), timeout=2).close()
        stack.wait_until_serving(timeout_s=180)
        deadline = time.monotonic() + 120
        while "ready." not in stack.worker_log():
            assert time.monotonic() < deadline, stack.worker_log()[-3000:]
            time.sleep(0.3)
    except BaseException:
        stack.kill_all()
        raise
    return stack


def token_for_a_new_user(root: Path) -> str:
    """A user and an API token, made as an admin would with manage.py in the launcher's checkout."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    py = str(root / ".venv" / "bin" / "python")
    made = subprocess.run([py, "manage.py", "shell", "-c",
                           "from django.contrib.auth import get_user_model; "
                           "get_user_model().objects.create_user('stopper', password='stop-pw-5521')"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    key = subprocess.run([py, "manage.py", "create_api_token", "stopper"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=60)
    assert key.returncode == 0, key.stderr
    return key.stdout.strip()


def ctrl_c_and_watch(stack: Stack, timeout_s: float = 360) -> dict[str, float]:
    """Ctrl-C, then the time (from the Ctrl-C) at which the last Celery worker process and the
    last redis-server of the copy were gone. The worker first ends the evaluation it runs, which
    run.sh waits for up to its time limit and 30 s: on a loaded machine, minutes."""
    gone: dict[str, float] = {}
    t0 = time.monotonic()
    os.killpg(stack.proc.pid, signal.SIGINT)
    while time.monotonic() - t0 < timeout_s:
        left = stack.processes()
        now = time.monotonic() - t0
        if "worker" not in gone and not any("celery" in p and " worker " in p for p in left):
            gone["worker"] = now
        if "redis" not in gone and not any("redis-server" in p for p in left):
            gone["redis"] = now
        if len(gone) == 2 and stack.proc.poll() is not None:
            break
        time.sleep(0.05)
    stack.proc.wait(timeout=60)
    stack.log.close()
    return gone


def test_ctrl_c_lets_the_worker_finish_before_redis_stops_and_the_next_run_keeps_the_logs(stack_dir, require_bwrap):
    if not shutil.which("redis-server"):
        (pytest.fail if IN_CI else pytest.skip)("redis-server is not installed")
    stack = start(stack_dir)
    try:
        token = token_for_a_new_user(stack_dir)
        status, body = stack.api("/api/submissions", token, {"task": "softmax", "mode": "test", "filename": "softmax.py",
                                                             "source": (ROOT / "examples" / "softmax.py").read_text()})
        assert status == 201, body
        pk = body["id"]
        deadline = time.monotonic() + 120
        while stack.api(f"/api/submissions/{pk}", token)[1].get("status") != "running":
            assert time.monotonic() < deadline, stack.worker_log()[-3000:]
            time.sleep(0.2)
        gone = ctrl_c_and_watch(stack)
    finally:
        left = stack.processes()
        stack.kill_all()
    out = stack.output()
    assert left == [], "Ctrl-C left these running:\n" + "\n".join(left)
    # the worker first, Redis last: the worker acknowledged its evaluation while Redis answered
    assert gone["worker"] < gone["redis"], (gone, out[-3000:])
    assert f"waiting for the worker to finish submission {pk}" in out, out[-3000:]
    worker_log = (stack_dir / "var" / "worker.log").read_text(errors="replace")
    assert "Couldn't ack" not in worker_log and "Traceback" not in worker_log, worker_log[-6000:]
    with sqlite3.connect(stack_dir / "var" / "db.sqlite3") as db:
        row = db.execute("select status, verdict from leaderboard_submission where id = ?", (pk,)).fetchone()
    assert row == ("done", "verified"), (row, worker_log[-3000:])

    # the next run starts with empty logs and keeps this run's beside them
    first = {name: (stack_dir / "var" / name).read_text(errors="replace") for name in LOGS}
    assert all(first.values()), first
    again = start(stack_dir)
    try:
        again.ctrl_c(timeout_s=60)
    finally:
        again.kill_all()
    for name in LOGS:
        assert (stack_dir / "var" / f"{name}.1").read_text(errors="replace") == first[name], name
        assert (stack_dir / "var" / name).read_text(errors="replace") != first[name], name
