"""Requests the site refuses whatever the page: TRACE anywhere (405), and a /static/ path that
climbs out of the static directories on the development server (404, nothing of the file)."""
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("path", ["/", "/accounts/login/", "/api/tasks", "/no-such-page/"])
def test_trace_is_refused_everywhere(client, path):
    resp = client.generic("TRACE", path)
    assert resp.status_code == 405
    assert "TRACE" not in resp["Allow"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture
def runserver(tmp_path):
    """`manage.py runserver` as a developer starts it (DEBUG on, static files served by Django)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    env.update(DEBUG="1", VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="leaderboard.settings")
    env.pop("DATABASE_URL", None)
    log = open(tmp_path / "runserver.log", "wb")
    proc = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "runserver.log").read_text()
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


@pytest.mark.parametrize("path", ["/static/..%2f..%2fleaderboard/settings.py", "/static/..%2fmanage.py",
                                  "/static/%2e%2e/%2e%2e/leaderboard/settings.py"])
def test_the_development_server_answers_404_to_a_path_out_of_static(runserver, path):
    assert _get(runserver + "/static/vendor/htmx/htmx.min.js")[0] == 200  # it does serve static files
    status, body = _get(runserver + path)
    assert status == 404
    assert b"SECRET_KEY" not in body and b"DJANGO_SETTINGS_MODULE" not in body
