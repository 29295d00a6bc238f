"""Processes as /proc shows them, for tests that look for what a submission left running; the web
server as `make run` starts it."""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def alive(pid: int) -> bool:
    """Running or stopped, not a zombie waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return False


def pids_where(match: Callable[[bytes], bool]) -> list[int]:
    """Host pids of live processes, in any PID namespace, whose raw command line (arguments
    separated by NUL) satisfies `match`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if match(cmdline) and alive(int(entry)):
            found.append(int(entry))
    return found


@contextlib.contextmanager
def web_server(env: dict, log: Path, ready_path: str = "/healthz"):
    """The web server as `make run` starts it (scripts/web.sh) on a free port, with `env`; yields
    its address once `ready_path` answers, and stops it after."""
    import socket
    import subprocess
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(ROOT / "scripts" / "web.sh"), "127.0.0.1", str(port)], cwd=ROOT, env=env,
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                urllib.request.urlopen(url + ready_path, timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def site_env(**more) -> dict:
    """The environment of a site process as `make run` starts one with DEBUG off, on this test
    run's database and Redis: web_server's `env`."""
    import secrets

    from django.conf import settings
    from django.db import connection

    db = connection.settings_dict
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), SECURE_COOKIES="0", REDIS_URL=settings.REDIS_URL,
               DATABASE_URL=f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}")
    env.update(more)
    return env
