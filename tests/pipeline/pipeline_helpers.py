"""Real processes for the pipeline tests: a private Redis that can be restarted, a Celery worker
that can be SIGKILLed, and the web server, all pointed at the test database."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


class RedisServer:
    """redis-server on its own port, without persistence like the test services' one: a restart
    loses every message it held."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        exe = shutil.which("redis-server")
        assert exe, "redis-server is not installed"
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.workdir)],
            stdout=open(self.workdir / "redis.log", "ab"), stderr=subprocess.STDOUT,
        )
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)

        def up():
            try:
                return client.ping()
            except redis.ConnectionError:
                return False

        wait_for(up, 20, "redis-server to answer")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(20)
        self.proc = None

    def restart(self):
        self.stop()
        self.start()


class Process:
    """A child in its own process group, so that a kill takes the pool children and the sandbox
    along, as a machine crash would."""

    def __init__(self, argv: list[str], env: dict, log: Path):
        self.argv, self.env, self.log = argv, env, log
        self.proc: subprocess.Popen | None = None

    def start(self):
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=ROOT, stdout=open(self.log, "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL to the whole group: no warm shutdown, nothing acknowledged."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        self.proc = None

    def stop(self, grace: float = 20):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(grace)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def process_env(*, database_name: str, broker_url: str, queue: str) -> dict:
    from django.conf import settings

    db = settings.DATABASES["default"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO"))}
    auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
    env.update({
        "DATABASE_URL": f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{database_name}",
        "REDIS_URL": broker_url,
        "CELERY_BROKER_URL": broker_url,
        "EVAL_QUEUE": queue,
        "WORKER_DEVICE": "cpu",
        "EVALUATOR_QUICK": "1",
        "DJANGO_SETTINGS_MODULE": "pipeline_settings",
        "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(ROOT)]),
        "PYTHONUNBUFFERED": "1",
        "SECRET_KEY": "pipeline-test-only",
    })
    return env


def worker(env: dict, *, queue: str, name: str, workdir: Path) -> Process:
    """A worker as `make run` starts one: no beat inside it (the beat and the repair are processes
    of their own)."""
    argv = [str(VENV_BIN / "celery"), "-A", "leaderboard", "worker", "-Q", queue, "-c", "1",
            "--prefetch-multiplier", "1", "-n", name, "-l", "INFO", "--without-gossip", "--without-mingle"]
    return Process(argv, env, workdir / "worker.log")


def repair(env: dict, *, workdir: Path, every_s: float = 2) -> Process:
    """The repair of stuck submissions, as its own process (`manage.py requeue_stuck --every S`)."""
    argv = [sys.executable, "manage.py", "requeue_stuck", "--every", str(every_s)]
    return Process(argv, env, workdir / "repair.log")


def web_server(env: dict, *, port: int, workdir: Path) -> Process:
    """The web server as scripts/run.sh starts it (scripts/web.sh: uvicorn, static/ served)."""
    argv = [str(ROOT / "scripts" / "web.sh"), "127.0.0.1", str(port)]
    return Process(argv, env, workdir / "web.log")
