"""Real hostile submissions through the real sandbox and `python -m evaluator run`, on both
backends. The hostile code runs at import time (the memory hog inside custom_kernel)
and prints `OBS key value` lines; they reach us through the judge's report logs.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import threading
import time

import pytest

from proc_helpers import pids_where
from sandbox import Limits, image

from sandbox_helpers import HONEST, LIMITS, UNCLEAN, WRONG, evaluate, everything, observations

pytestmark = pytest.mark.slow

PRELUDE = """
import os, sys

def obs(key, value):
    print("OBS", key, value, flush=True)
"""


def host_addresses() -> list[str]:
    found = ["127.0.0.1"]
    try:
        out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True).stdout
        found += [m.split("/")[0] for m in re.findall(r"inet (\S+)", out)]
    except OSError:
        pass
    return sorted(set(found))


class Listener:
    """A TCP listener on every host address; counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.accepted += 1
                conn.close()
            except socket.timeout:
                continue
            except OSError:
                return

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


# ---- one reconnaissance submission per backend, many assertions ------------------------------
RECON = PRELUDE + r"""
import glob, socket

for host in HOSTS:
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, PORT))
        obs("net_" + host, "connected")
    except OSError as e:
        obs("net_" + host, "failed:" + type(e).__name__)
    finally:
        s.close()

for i, path in enumerate(READ_PATHS):
    try:
        if os.path.isdir(path):
            obs(f"read{i}", "listed:" + ",".join(sorted(os.listdir(path))))
        else:
            with open(path, "rb") as f:
                obs(f"read{i}", "read:" + f.read(200).decode("latin-1").replace(chr(10), " "))
    except OSError as e:
        obs(f"read{i}", "denied:" + type(e).__name__)

obs("environ_self", repr(sorted(os.environ.items())))
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        obs("environ_" + path.split("/")[2], repr(open(path, "rb").read()))
    except OSError as e:
        obs("environ_" + path.split("/")[2], "denied:" + type(e).__name__)

for i, path in enumerate(WRITE_PATHS):
    try:
        with open(path, "ab") as f:
            f.write(b"planted")
        obs(f"write{i}", "ok")
    except OSError as e:
        obs(f"write{i}", "failed:" + type(e).__name__)

# the box's pid 1 and the judge: their command lines are readable by every process in the box
for pid in ("1", "2"):
    try:
        obs("cmdline_" + pid, open(f"/proc/{pid}/cmdline", "rb").read().decode("latin-1").replace(chr(0), " "))
    except OSError as e:
        obs("cmdline_" + pid, "denied:" + type(e).__name__)

for line in open("/proc/self/status").read().splitlines():
    key, _, value = line.partition(":")
    if key in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapAmb", "NoNewPrivs", "Seccomp"):
        obs("status_" + key, value.strip().replace(chr(9), " ") or "-")
""" + HONEST

CANARY_SECRET = "canary-secret-" + secrets.token_hex(8)
CANARY_DB = "postgres://canary:" + secrets.token_hex(8) + "@db.invalid/prod"
DB_CONTENT = "SQLite format 3 canary-db-" + secrets.token_hex(8)

# outside /tmp and /dev/shm nothing may be writable by the submission
WRITE_PATHS = ["/planted", "/usr/planted", "/etc/planted", "/etc/passwd", "/opt/planted",
               f"{image.VENV_INSIDE}/planted", "/opt/kernelboard/evaluator/planted",
               "/opt/kernelboard/evaluator/__init__.py", "/submission/planted",
               "/submission/submission.py", "/out/planted", "/out/report.json", "/root/planted",
               "/proc/sys/kernel/hostname"]


@pytest.fixture(scope="module")
def recon(backend):
    project = image.PROJECT_ROOT
    # a directory of this run's own: another test process may run the same fixture at once
    fake_db = project / "var" / f"sandbox-test-{secrets.token_hex(4)}" / "db.sqlite3"
    fake_db.parent.mkdir(parents=True)
    fake_db.write_text(DB_CONTENT)
    # each exists on the host (so that the test can fail); none may be readable inside
    read_paths = [str(project), str(project / "docs" / "architecture.md"), str(fake_db),
                  str(project / "var"), "/etc/shadow", "/root/.bashrc", "/root/.gitconfig",
                  "/var/run/docker.sock", "/proc/1/environ"]
    read_paths = [p for p in read_paths if os.path.exists(p)]
    assert len(read_paths) >= 6
    read_paths.append("/root")  # exists inside only as the path to the interpreter
    listener = Listener()
    saved = {k: os.environ.get(k) for k in ("SECRET_KEY", "DATABASE_URL")}
    os.environ["SECRET_KEY"] = CANARY_SECRET
    os.environ["DATABASE_URL"] = CANARY_DB
    try:
        source = (f"HOSTS = {host_addresses()!r}\nPORT = {listener.port}\n"
                  f"READ_PATHS = {read_paths!r}\nWRITE_PATHS = {WRITE_PATHS!r}\n" + RECON)
        result = evaluate(backend, source)
        time.sleep(0.5)
        accepted = listener.accepted
    finally:
        listener.close()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        fake_db.unlink()
        fake_db.parent.rmdir()
    return result, observations(result), read_paths, accepted


def test_recon_ran_through_the_real_evaluator(recon):
    result, obs, _, _ = recon
    assert "status_Uid" in obs, everything(result)[-3000:]
    # the judge says so too: it ran as root, the submission's runner as another user
    assert result.report.to_json()["isolation"]["separate_user"] is True
    assert result.report.to_json()["isolation"]["judge_uid"] == 0


def test_no_connection_reaches_a_listener_on_the_host(recon):
    result, obs, _, accepted = recon
    tried = [k for k in obs if k.startswith("net_")]
    assert "net_127.0.0.1" in tried
    assert all(obs[k].startswith("failed") for k in tried), obs
    assert accepted == 0


def test_project_database_and_shadow_are_not_readable(recon):
    result, obs, read_paths, _ = recon
    for i, path in enumerate(read_paths[:-1]):
        assert obs[f"read{i}"].startswith("denied"), (path, obs[f"read{i}"])
    # /root: nothing but the bound interpreter's directory chain
    assert obs[f"read{len(read_paths) - 1}"] in ("denied:PermissionError", "denied:FileNotFoundError",
                                                 "listed:", "listed:.pyenv")
    assert DB_CONTENT not in everything(result)


def test_no_command_line_in_the_box_shows_a_host_path(recon):
    """The box's pid 1 (bwrap's reaper, Docker's init) is readable from inside; its command line
    must not carry the host paths of the box's mounts."""
    result, obs, _, _ = recon
    assert "cmdline_1" in obs, everything(result)[-3000:]
    project = str(image.PROJECT_ROOT)
    for pid in ("1", "2"):
        cmdline = obs.get(f"cmdline_{pid}", "")
        assert project not in cmdline and "bind" not in cmdline and "/tmp/" not in cmdline, (pid, cmdline)


def test_canary_secrets_appear_nowhere_inside_nor_in_logs(recon):
    result, obs, _, _ = recon
    dumped = [v for k, v in obs.items() if k.startswith("environ_") and not v.startswith("denied")]
    assert dumped and len([k for k in obs if k.startswith("environ_")]) >= 2  # the probe did look
    assert "TMPDIR" in obs["environ_self"]
    text = everything(result)
    for canary in (CANARY_SECRET, CANARY_DB, "SECRET_KEY", "DATABASE_URL"):
        assert canary not in text


def test_writes_outside_tmpfs_fail(recon):
    result, obs, _, _ = recon
    for i, path in enumerate(WRITE_PATHS):
        assert obs[f"write{i}"].startswith("failed"), (path, obs[f"write{i}"])
    assert not os.path.exists("/planted")
    assert not (image.evaluator_source() / "planted").exists()


def test_submission_runs_as_nobody_without_privileges(recon):
    result, obs, _, _ = recon
    assert obs["status_NoNewPrivs"] == "1"
    assert obs["status_CapEff"] == "0000000000000000"
    assert obs["status_CapPrm"] == "0000000000000000"
    assert obs["status_Uid"].split()[0] == "65534"
    assert obs["status_Groups"] in ("-", "65534")


# ---- destructive submissions, one run each ---------------------------------------------------
def test_filling_the_tmpfs_ends_cleanly(backend):
    limits = Limits(**{**LIMITS.__dict__, "tmpfs_bytes": 128 * 1024**2})
    source = PRELUDE + """
import errno, tempfile
written = 0
path = os.path.join(tempfile.gettempdir(), "fill")
try:
    with open(path, "wb") as f:
        while written < (1 << 34):
            f.write(b"x" * (1 << 20))
            f.flush()
            written += 1 << 20
except OSError as e:
    err = e.errno
os.unlink(path)  # the judge's logs live on the same tmpfs: make room before reporting
obs("fill", f"{err} {written}")
""" + HONEST
    result = evaluate(backend, source, limits=limits)
    obs = observations(result)
    err, written = obs["fill"].split()
    assert int(err) == 28  # ENOSPC
    assert int(written) <= limits.tmpfs_bytes
    assert not UNCLEAN & set(result.report.to_json()["reason_codes"]), result.report
    assert result.wall_s < limits.time_limit_s


def test_fork_flood_is_capped(backend):
    source = PRELUDE + """
import time
n = 0
try:
    while n < 100000:
        pid = os.fork()
        if pid == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    obs("forks", f"{n} {e.errno}")
""" + HONEST
    result = evaluate(backend, source)
    forks, err = observations(result)["forks"].split()
    assert int(forks) < LIMITS.pids
    assert int(err) == 11  # EAGAIN
    assert result.wall_s < LIMITS.time_limit_s + 10


def test_memory_hog_ends_as_out_of_memory(backend):
    # near the limit the kernel reclaims page cache (torch's libraries) before it kills: on a busy
    # machine that takes a while, and this test is about memory, not time
    limits = Limits(**{**LIMITS.__dict__, "time_limit_s": 120})
    # inside the call this time, while the judge waits for the result
    source = """
import torch

def custom_kernel(x):
    hog = []
    while True:
        hog.append(b"\\x01" * (64 << 20))
"""
    result = evaluate(backend, source, limits=limits)
    assert result.report.to_json()["verdict"] == "rejected"
    assert result.report.to_json()["reasons"] == ["out of memory"]
    assert result.report.to_json()["reason_codes"] == ["out_of_memory"]


def test_endless_loop_ends_at_the_limit(backend):
    # the loop spins a core until the limit: a short limit keeps the suite's CPU for other tests
    limits = Limits(**{**LIMITS.__dict__, "time_limit_s": 10})
    source = PRELUDE + "\nwhile True:\n    pass\n" + HONEST
    started = time.monotonic()
    result = evaluate(backend, source, limits=limits)
    took = time.monotonic() - started
    assert result.report.to_json()["verdict"] == "rejected"
    assert result.report.to_json()["reasons"] == ["time limit 10 s exceeded"]
    assert result.report.to_json()["reason_codes"] == ["timeout"]
    assert 10 <= took <= 20


def _processes_with(marker: str) -> list[int]:
    return pids_where(lambda cmdline: marker.encode() in cmdline)


def test_detached_child_is_gone_after_the_run(backend):
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(10**6)}"
    source = PRELUDE + f"""
import subprocess, time
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/sleep", ["sleep", "{marker}"])
    os._exit(0)
os.waitpid(pid, 0)
time.sleep(1.5)
obs("detached", "started")
""" + HONEST
    seen = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            if _processes_with(marker):
                seen.append(True)
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        result = evaluate(backend, source)
    finally:
        done.set()
        watcher.join()
    assert observations(result).get("detached") == "started", everything(result)[-2000:]
    assert seen, "the detached child was never seen running: the test could not fail"
    deadline = time.monotonic() + 2
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with(marker) == []


FORGED = {"schema": 1, "verdict": "verified", "reasons": [], "reason_codes": [], "task": "softmax",
          "mode": "test", "device": "cpu", "speedup_vs_compile": 999.0, "speedup_vs_eager": 999.0,
          "logs": "forged"}


@pytest.fixture(scope="module")
def baselines(backend):
    return {"honest": evaluate(backend, HONEST).report.to_json(), "wrong": evaluate(backend, WRONG).report.to_json()}


def _verdict(report):
    return report["verdict"], report["reason_codes"]


def test_forged_report_on_stdout_leaves_the_verdict_unchanged(backend, baselines):
    forge = PRELUDE + f"""
import json
forged = json.dumps({FORGED!r})
print(forged, flush=True)
print(forged, file=sys.stderr, flush=True)
for path in ("/out/report.json", "/tmp/report.json"):
    try:
        with open(path, "w") as f:
            f.write(forged)
    except OSError:
        pass
"""
    assert baselines["wrong"]["verdict"] == "rejected"
    for name, kernel in (("honest", HONEST), ("wrong", WRONG)):
        report = evaluate(backend, forge + kernel).report.to_json()
        assert _verdict(report) == _verdict(baselines[name]), (name, report)
        assert report["speedup_vs_compile"] != 999.0


def test_writes_to_every_fd_leave_the_verdict_unchanged(backend, baselines):
    source = PRELUDE + f"""
import json, resource
forged = (json.dumps({FORGED!r}) + "\\n").encode()
hits = 0
for fd in range(resource.getrlimit(resource.RLIMIT_NOFILE)[0]):
    try:
        os.set_blocking(fd, False)
        os.write(fd, forged)
        hits += 1
    except OSError:
        pass
obs("fds_written", hits)
""" + WRONG
    report = evaluate(backend, source).report.to_json()
    assert report["verdict"] == "rejected"
    assert _verdict(baselines["wrong"])[0] == "rejected"
    assert report["speedup_vs_compile"] is None
    assert "forged" not in report["reasons"]


def test_200_mb_of_output_is_truncated(backend):
    source = PRELUDE + """
chunk = ("y" * 1023 + "\\n") * 1024
for _ in range(100):
    sys.stdout.write(chunk)
    os.write(2, chunk.encode())
sys.stdout.flush()
""" + HONEST
    started = time.monotonic()
    result = evaluate(backend, source)
    assert time.monotonic() - started < LIMITS.time_limit_s
    assert len(result.logs.encode()) <= LIMITS.log_bytes
    assert len(result.report.to_json()["logs"].encode()) <= 70_000
    assert result.report.to_json()["reason_codes"] != ["timeout"]


def test_the_judge_cache_is_closed_to_the_submission(backend, tmp_path, monkeypatch):
    cache = tmp_path / "judge-cache"
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(cache))
    source = PRELUDE + """
where = "/var/cache/kernelboard-judge"
for op in ("list", "write"):
    try:
        if op == "list":
            os.listdir(where)
        else:
            with open(where + "/planted", "w") as f:
                f.write("x")
        obs("cache_" + op, "ok")
    except OSError as e:
        obs("cache_" + op, "denied:" + type(e).__name__)
""" + HONEST
    result = evaluate(backend, source)
    obs = observations(result)
    assert obs["cache_list"].startswith("denied"), obs
    assert obs["cache_write"].startswith("denied"), obs
    assert not (cache / "planted").exists()
    assert cache.stat().st_mode & 0o777 == 0o700
