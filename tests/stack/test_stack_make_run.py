"""The product as people start it: `make run` in a fresh copy of the checkout, with the launcher's
own code and environment (umask 077, its SQLite, its own Redis, its Celery worker and beat, the web
server) and the real box, then used as a newcomer would, and stopped with Ctrl-C.

With bubblewrap (the box of a machine without a Docker engine): sign up and make a token in
Chromium; `examples/softmax.py` through the API in test, ranked and profile mode and through the
CLI; ranked once more through the browser's upload form, watched to its verdict and found on the
board; a cheat from tests/exploits flagged and listed in the audit console for the admin whose
password the launcher printed. Ctrl-C then leaves no process behind, and the test services start in
the same checkout (what `make test` does next). With Docker, where its engine runs: one ranked
upload through the API.

EVALUATOR_QUICK=1 is the one variable added to the launcher's environment: it shrinks the CPU's
benchmark shapes and rounds (as in the rest of the suite) so that the five evaluations fit CI's
time; every check still runs.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from stack_helpers import ROOT, Stack, copy_checkout, free_port

pytestmark = [pytest.mark.slow]

EXAMPLE = ROOT / "examples" / "softmax.py"
CHEAT = ROOT / "tests" / "exploits" / "submissions" / "a14_torch_softmax.py"
PASSWORD = "stack-pw-9813"


@pytest.fixture
def stack_dir():
    # a checkout where a newcomer keeps one: every directory above it traversable by others (the
    # box's runner and PostgreSQL's user meet it), unlike pytest's own 0700 tree
    path = Path(tempfile.mkdtemp(prefix="stack-checkout-", dir="/tmp"))
    os.chmod(path, 0o755)
    yield copy_checkout(path)
    shutil.rmtree(path, ignore_errors=True)


def start(stack_dir, backend: str) -> Stack:
    stack = Stack(stack_dir, backend=backend, extra_env={"EVALUATOR_QUICK": "1"})
    try:
        stack.wait_until_serving(timeout_s=300)
    except BaseException:
        stack.kill_all()
        raise
    return stack


def readme_agent_loop() -> str:
    """The README's Python block under "An agent's loop", with its site from LEADERBOARD_SITE."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"An agent's loop.*?```python\n(.*?)```", text, re.S).group(1)
    assert 'SITE, TOKEN = "http://127.0.0.1:8000"' in block
    return block.replace('SITE, TOKEN = "http://127.0.0.1:8000"', 'SITE, TOKEN = os.environ["LEADERBOARD_SITE"]')


def new_page(chromium):
    page = chromium.new_context().new_page()
    page.set_default_timeout(30_000)
    return page


def sign_up_with_token(page, base: str, username: str) -> str:
    page.goto(f"{base}/accounts/signup/")
    page.fill("#id_username", username)
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.click("#signup-form button[type=submit]")
    page.wait_for_url(f"{base}/")
    page.goto(f"{base}/accounts/profile/")
    page.click("#token-form button[type=submit]")
    token = page.inner_text("#new-token").strip()
    assert token.startswith("lb_"), token
    return token


def docker_available() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0 if shutil.which("docker") else False


def test_make_run_with_bubblewrap_verifies_the_readme_example_everywhere_a_user_meets_it(
        stack_dir, require_bwrap, require_chromium, chromium):
    stack = start(stack_dir, "bwrap")
    try:
        assert "worker" in stack.output() and f"http://127.0.0.1:{stack.port}" in stack.output()
        page = first = new_page(chromium)
        user = f"newcomer{uuid.uuid4().hex[:6]}"
        token = sign_up_with_token(page, stack.url, user)
        source = EXAMPLE.read_text()
        ids = {}

        def post(key, token, mode, text, filename):
            status, body = stack.api("/api/submissions", token,
                                     {"task": "softmax", "mode": mode, "source": text, "filename": filename})
            assert status == 201, body
            ids[key] = body["id"]

        # two at a time per user is the site's limit: the newcomer's first two through the API,
        # a second user's cheat through the API and ranked upload through the browser's form
        post("test", token, "test", source, "softmax.py")
        post("ranked", token, "ranked", source, "softmax.py")
        other = new_page(chromium)
        other_token = sign_up_with_token(other, stack.url, f"other{uuid.uuid4().hex[:6]}")
        post("cheat", other_token, "ranked", CHEAT.read_text(), CHEAT.name)
        other.goto(f"{stack.url}/upload/")
        other.select_option("#id_task", "softmax")
        other.check("input[name=mode][value=ranked]")
        other.set_input_files("#id_file", str(EXAMPLE))
        other.click("#upload-form button[type=submit]")
        other.wait_for_url(re.compile(r"/submissions/\d+/$"))
        ids["browser"] = int(re.search(r"/submissions/(\d+)/$", other.url).group(1))
        page = other

        results = stack.wait_done(token, [ids["test"], ids["ranked"]], timeout_s=900)
        # then profile mode through the API, and ranked through the CLI as the README shows it
        post("profile", token, "profile", source, "softmax.py")
        cli = subprocess.Popen([sys.executable, "-m", "leaderboard.cli", "submit", str(EXAMPLE), "--task", "softmax",
                                "--mode", "ranked", "--url", stack.url, "--token", token, "--poll", "0.3"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        results.update(stack.wait_done(token, [ids["profile"]], timeout_s=900))
        results.update(stack.wait_done(other_token, [ids["cheat"], ids["browser"]], timeout_s=900))
        for mode in ("test", "ranked", "profile", "browser"):
            r = results[ids[mode]]
            assert (r["status"], r["verdict"]) == ("done", "verified"), (mode, r.get("reasons"), r.get("error"))
        assert results[ids["ranked"]]["speedup_vs_compile"] > 0 and results[ids["ranked"]]["shapes"]
        assert results[ids["profile"]]["profile"], results[ids["profile"]]
        cheat = results[ids["cheat"]]
        assert cheat["status"] == "done" and cheat["verdict"] in ("flagged", "rejected"), cheat
        out, _ = cli.communicate(timeout=900)
        assert cli.returncode == 0 and "status: Done" in out and "verdict: Verified" in out, out
        # the judge's steps reach the CLI through the box, the worker and the API as they happen (the
        # CPU's quick rounds can fall between two polls: the compile and a correctness shape cannot)
        phases = {line.strip() for line in out.splitlines() if line.strip().startswith("Running: ")}
        assert len(phases) >= 4 and any("correctness: shape" in p for p in phases), out

        # the README's agent loop, as an agent copies it: it submits, and ?wait=60 holds each answer
        # until the verdict (the web server's wait layer, leaderboard/serving/asgi_wait.py)
        agent = subprocess.run([sys.executable, "-c", readme_agent_loop()], cwd=stack_dir, capture_output=True,
                               text=True, timeout=600, env={**os.environ, "LEADERBOARD_TOKEN": token,
                                                            "LEADERBOARD_SITE": stack.url})
        assert agent.returncode == 0 and agent.stdout.split()[:2] == ["done", "verified"], agent

        page.wait_for_selector("#result[data-status='done']", timeout=120_000)
        assert page.inner_text("#verdict").strip().lower() == "verified", page.inner_text("#result")
        page.goto(f"{stack.url}/tasks/softmax/?device=cpu")
        board = page.locator("#leaderboard tbody").inner_text()
        assert user in board and results[ids["cheat"]]["verdict"] != "verified", board

        # the admin, with the password the launcher printed once, finds the cheat in the console
        admin = new_page(chromium)
        admin.goto(f"{stack.url}/accounts/login/")
        admin.fill("#id_username", "admin")
        admin.fill("#id_password", stack.admin_password())
        admin.locator("form [type=submit]").click()
        admin.wait_for_load_state()
        admin.goto(f"{stack.url}/audit/")
        if cheat["verdict"] == "flagged":
            assert admin.locator(f"#queue a[href='/audit/{ids['cheat']}/']").count() == 1
        admin.goto(f"{stack.url}/audit/{ids['cheat']}/")
        assert cheat["reason_codes"][0] in admin.inner_text("#audit-reasons")
        for each in (first, other, admin):
            each.context.close()

        # the worker killed with SIGKILL mid-evaluation: the launcher starts it again under its
        # name, the new process re-queues what the dead one was running, and it ends once
        status, body = stack.api("/api/submissions", token, {"task": "softmax", "mode": "ranked", "source": source,
                                                             "filename": "softmax.py"})
        assert status == 201, body
        killed = stack.kill_worker_while_running(token, body["id"])
        r = stack.wait_done(token, [body["id"]], timeout_s=600)[body["id"]]
        assert (r["status"], r["verdict"]) == ("done", "verified"), (r.get("reasons"), r.get("error"))
        assert "exited with status" in stack.output() and stack.worker_pids() and not set(stack.worker_pids()) & killed
        assert not [p for p in stack.processes() if "bwrap" in p or "evaluator" in p], stack.processes()
        # one beat and one repair process throughout, whatever happened to the worker
        assert len([p for p in stack.processes() if "celery" in p and " beat " in p]) == 1, stack.processes()
        assert len([p for p in stack.processes() if "requeue_stuck" in p]) == 1, stack.processes()
        health = stack.health()
        assert health["status"] == "ok" and health["queues"]["eval-cpu"]["workers"] == ["worker-eval-cpu@" + os.uname().nodename]
    finally:
        left = stack.stop()
    assert stack.proc.returncode is not None
    assert left == [], "Ctrl-C left these running:\n" + "\n".join(left)
    # `make test` next, in the same checkout: its services start under the var/ that make run made
    if docker_available():  # services.sh would otherwise start a Docker engine of its own
        env = {**os.environ, "TEST_PG_PORT": str(free_port()), "TEST_REDIS_PORT": str(free_port())}
        started = subprocess.run(["scripts/services.sh", "start"], cwd=stack_dir, env=env, capture_output=True,
                                 text=True, timeout=300)
        subprocess.run(["scripts/services.sh", "stop"], cwd=stack_dir, env=env, capture_output=True, timeout=300)
        assert started.returncode == 0, started.stderr


def test_make_run_with_docker_verifies_a_ranked_upload(stack_dir, require_docker, require_chromium, chromium):
    stack = start(stack_dir, "docker")
    try:
        page = new_page(chromium)
        token = sign_up_with_token(page, stack.url, f"dockeruser{uuid.uuid4().hex[:6]}")
        page.context.close()
        status, body = stack.api("/api/submissions", token, {"task": "softmax", "mode": "ranked",
                                                             "source": EXAMPLE.read_text(), "filename": "softmax.py"})
        assert status == 201, body
        r = stack.wait_done(token, [body["id"]], timeout_s=600)[body["id"]]
        assert (r["status"], r["verdict"]) == ("done", "verified"), (r.get("reasons"), r.get("error"))
    finally:
        left = stack.stop()
    assert left == [], "Ctrl-C left these running:\n" + "\n".join(left)
