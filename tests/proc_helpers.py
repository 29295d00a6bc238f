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
