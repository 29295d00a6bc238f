"""The stack as `make run` starts it, for the tests in this folder: a copy of the checkout with its
own var/, started by the launcher itself (`make run`, its umask, its Redis, its worker, its web
server), driven over HTTP as a user's program would, and stopped with Ctrl-C (SIGINT to its
process group, as a terminal sends it)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# a checkout other than this one can be put through the same test (to show it fails on an old commit)
SOURCE_TREE = Path(os.environ.get("STACK_TEST_SOURCE") or ROOT)
# variables of the test run that must not reach the launcher: it chooses its own database, broker and box
DROPPED = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "SANDBOX_BACKEND", "SANDBOX_JUDGE_CACHE", "DEBUG",
           "DJANGO_SETTINGS_MODULE", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST", "EVAL_QUEUE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_checkout(dest: Path) -> Path:
    """The files git knows of (tracked, and untracked but not ignored), as they are in the work
    tree, with their times (so that make sees the venv as installed); the venv itself is linked."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=SOURCE_TREE, capture_output=True, check=True).stdout.split(b"\0")
    for raw in filter(None, names):
        name = raw.decode()
        src = SOURCE_TREE / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the work tree, not yet in git
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def _ctrl_c_as_in_a_terminal() -> None:
    """SIGINT and SIGQUIT at their default action, as a terminal starts the launcher. A suite run
    from a background job (`.ci/run &`) inherits both ignored, and bash can neither trap nor reset
    a signal that was ignored when it started: the test's Ctrl-C would then never reach run.sh."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


class Stack:
    """`make run` in `root`, its output in `root/make-run.log`."""

    def __init__(self, root: Path, *, backend: str, extra_env: dict | None = None):
        self.root = root
        # STACK_TEST_PORT: for a launcher that takes no PORT (an old commit's, through STACK_TEST_SOURCE)
        self.port = int(os.environ.get("STACK_TEST_PORT") or free_port())
        self.redis_port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k not in DROPPED}
        env.update(PORT=str(self.port), HOST="127.0.0.1", REDIS_URL=f"redis://127.0.0.1:{self.redis_port}/0",
                   SANDBOX_BACKEND=backend, PYTHONUNBUFFERED="1", **(extra_env or {}))
        self.log_path = root / "make-run.log"
        self.log = open(self.log_path, "wb")
        # its own session and process group: the test's Ctrl-C reaches the launcher and its children
        self.proc = subprocess.Popen(["make", "--no-print-directory", "run"], cwd=root, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_ctrl_c_as_in_a_terminal)

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_until_serving(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"make run exited with {self.proc.returncode}:\n{self.output()[-4000:]}"
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2):
                    pass
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
                continue
            # scripts/run.sh says the address once its own probe of the port answers (every
            # 0.2 s): serving and said go together for the newcomer, after a moment
            if f"site on {self.url}" in self.output():
                return
            time.sleep(0.1)
        raise AssertionError(f"the site did not answer within {timeout_s} s:\n{self.output()[-4000:]}")

    def health(self) -> dict:
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=10) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            return json.loads(e.read())

    def admin_password(self) -> str:
        found = re.search(r"admin account created: username (\S+)\s+password (\S+)", self.output())
        assert found, self.output()[-3000:]
        return found.group(2)

    def api(self, path: str, token: str, body: dict | None = None) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data else "GET",
                                     headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def wait_done(self, token: str, ids: list[int], timeout_s: float) -> dict[int, dict]:
        deadline = time.monotonic() + timeout_s
        results: dict[int, dict] = {}
        while time.monotonic() < deadline:
            for pk in ids:
                if pk not in results:
                    status, body = self.api(f"/api/submissions/{pk}", token)
                    assert status == 200, body
                    if body["status"] in ("done", "failed"):
                        results[pk] = body
            if len(results) == len(ids):
                return results
            time.sleep(1)
        raise AssertionError(f"not finished within {timeout_s} s: {sorted(set(ids) - set(results))}; "
                             f"worker log:\n{self.worker_log()[-6000:]}")

    def worker_log(self) -> str:
        logs = sorted((self.root / "var").glob("worker*.log"))
        return "\n".join(p.read_text(errors="replace") for p in logs)

    def processes(self) -> list[str]:
        """Processes whose working directory lies in this copy: what the stack left running."""
        left = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if cwd == str(self.root) or cwd.startswith(str(self.root) + "/"):
                left.append(f"{entry}: {cmd.strip()}")
        return left

    def worker_pids(self) -> list[int]:
        """The Celery worker's processes (its main process and its pool's children)."""
        return [int(p.split(":")[0]) for p in self.processes() if "celery" in p and " worker " in p]

    def kill_worker_while_running(self, token: str, pk: int, timeout_s: float = 300) -> set[int]:
        """SIGKILL to every process of the worker once submission pk has run a few seconds."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            status, body = self.api(f"/api/submissions/{pk}", token)
            if body.get("status") == "running":
                break
            assert body.get("status") == "queued", body
            time.sleep(0.5)
        time.sleep(3)
        pids = set(self.worker_pids())
        assert pids, self.processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def ctrl_c(self, timeout_s: float = 180) -> None:
        """What Ctrl-C in the launcher's terminal does: SIGINT to its whole process group. The
        launcher's own stop is bounded (an idle worker 30 s, the web server, beat and repair 15 s,
        Redis 30 s); on a loaded machine it takes most of that."""
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=timeout_s)
        finally:
            self.log.close()

    def stop(self) -> list[str]:
        """Ctrl-C, then what it left running (killed, so that no test leaves a stack behind)."""
        try:
            self.ctrl_c()
        finally:
            left = self.processes()
            self.kill_all()
        return left

    def kill_all(self) -> None:
        for line in self.processes():
            try:
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
