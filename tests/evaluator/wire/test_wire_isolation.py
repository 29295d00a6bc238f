"""The runner is another user with no privileges, sees none of the judge's secrets, and whatever it
prints only ends up, truncated, in the report's logs."""
import os

import pytest

from evaluator.contract.report import MAX_LOGS, validate

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the judge drops privileges only as root")


@root_only
def test_the_runner_is_nobody_without_capabilities(evaluate, honest):
    src = "import os\nprint('runner ids', os.getuid(), os.getgid(), os.getgroups())\n" + honest
    r = evaluate(src)
    assert r["verdict"] == "verified", r["reasons"]
    assert "runner ids 65534 65534 []" in r["logs"]
    iso = r["isolation"]
    assert iso["judge_uid"] == 0 and iso["runner_uid"] == 65534 and iso["runner_gid"] == 65534
    assert iso["separate_user"] is True
    assert iso["runner_cap_eff"] == "0000000000000000"
    assert iso["runner_cap_prm"] == "0000000000000000"
    assert iso["runner_no_new_privs"] is True
    assert iso["runner_pid_namespace"] is True


@root_only
def test_no_process_of_the_submission_outlives_the_evaluation(evaluate, honest):
    # a double-forked daemon in its own session, out of the runner's process group, re-parented
    # away from the runner, writing a heartbeat; it must stop when the evaluation ends
    import tempfile
    import time
    from pathlib import Path

    shared = Path(tempfile.mkdtemp())
    os.chmod(shared, 0o777)
    beat = shared / "heartbeat"
    src = f"BEAT = {str(beat)!r}\n" + """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while True:
            with open(BEAT, "w") as f:
                f.write(str(time.time()))
            time.sleep(0.05)
    os._exit(0)
""" + honest
    try:
        r = evaluate(src)
        assert r["verdict"] == "flagged", r["reasons"]
        assert beat.exists(), "the daemon never ran"
        time.sleep(0.5)
        last = beat.read_text()
        time.sleep(1.0)
        assert beat.read_text() == last, "a process of the submission is still running"
    finally:
        import shutil
        shutil.rmtree(shared, ignore_errors=True)


@root_only
def test_the_runner_cannot_read_the_judges_environment_or_become_root(evaluate, honest, monkeypatch):
    monkeypatch.setenv("EVALUATOR_TEST_SECRET", "hunter2-do-not-leak")
    src = f"JUDGE = {os.getpid()}\n" + """
import os
try:
    data = open(f"/proc/{JUDGE}/environ", "rb").read()
    print("read judge environ", len(data), b"hunter2" in data)
except OSError as e:
    print("judge environ:", type(e).__name__)
print("own environ", sorted(os.environ))
try:
    os.setuid(0)
    print("became root")
except OSError as e:
    print("setuid:", type(e).__name__)
try:
    open("/root/.bashrc").read()
    print("read /root")
except OSError as e:
    print("/root:", type(e).__name__)
""" + honest
    r = evaluate(src)
    assert r["verdict"] == "verified", r["reasons"]
    logs = r["logs"]
    # another user (PermissionError); with the runner's own /proc the judge is not even there
    assert "judge environ: PermissionError" in logs or "judge environ: FileNotFoundError" in logs
    assert "hunter2" not in logs
    assert "EVALUATOR_TEST_SECRET" not in logs
    assert "setuid: PermissionError" in logs
    assert "became root" not in logs and "read /root" not in logs


def test_a_flood_of_output_is_truncated_in_the_logs(evaluate, honest):
    src = "import sys\nsys.stdout.write('x' * 3_000_000)\nsys.stderr.write('tail-marker\\n')\n" + honest
    r = evaluate(src)
    assert r["verdict"] == "verified", r["reasons"]
    assert len(r["logs"]) <= MAX_LOGS
    assert "bytes cut" in r["logs"] and "tail-marker" in r["logs"]
    validate(r)


def test_the_runner_cannot_signal_the_judge(evaluate, honest):
    if os.geteuid() != 0:
        pytest.skip("same uid: signals are not blocked without the privilege drop")
    src = f"JUDGE = {os.getpid()}\n" + """
import os, signal
try:
    os.kill(JUDGE, signal.SIGTERM)
    print("signalled the judge")
except OSError as e:
    print("kill:", type(e).__name__)
""" + honest
    r = evaluate(src)
    # another user (PermissionError), and in its own PID namespace the judge is not even visible
    assert "kill: PermissionError" in r["logs"] or "kill: ProcessLookupError" in r["logs"]
    assert "signalled the judge" not in r["logs"]
    assert set(r["reason_codes"]) == {"suspicious_source"}
