"""`python -m leaderboard.cli submit` against a live server: errors, --no-wait, and waiting for a
result that the real evaluate_submission task stores."""
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator import verdict_word
from leaderboard import services
from leaderboard.models import Submission
from leaderboard.tasks import evaluate_submission
from site_helpers import SOURCE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def kernel(tmp_path) -> Path:
    path = tmp_path / "softmax_kernel.py"
    path.write_text(SOURCE)
    return path


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


def cli(*args, env_token=None):
    import os

    env = {k: v for k, v in os.environ.items() if k != "LEADERBOARD_TOKEN"}
    if env_token:
        env["LEADERBOARD_TOKEN"] = env_token
    return subprocess.Popen([sys.executable, "-m", "leaderboard.cli", "submit", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def run(*args, env_token=None):
    proc = cli(*args, env_token=env_token)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_it_needs_a_token(live_server, kernel, task):
    code, _, err = run(kernel, "--task", "softmax", "--url", live_server.url)
    assert code == 2 and "an API token is needed" in err


def test_it_reports_api_errors(live_server, kernel, task, key, eval_queue):
    code, _, err = run(kernel, "--task", "softmax", "--url", live_server.url, "--token", "lb_wrong")
    assert code == 2 and "HTTP 401: Invalid or revoked API token." in err
    code, _, err = run(kernel, "--task", "nope", "--url", live_server.url, "--token", key)
    assert code == 2 and "HTTP 404: Unknown task 'nope'" in err
    code, _, err = run(kernel.parent / "missing.py", "--task", "softmax", "--url", live_server.url, "--token", key)
    assert code == 2 and "cannot read" in err
    code, _, err = run(kernel, "--task", "softmax", "--url", "http://127.0.0.1:9", "--token", key)
    assert code == 2 and "cannot reach" in err


def test_no_wait_submits_and_exits(live_server, kernel, task, owner, eval_queue):
    key = services.api_token_create(user=owner)[1]
    code, out, _ = run(kernel, "--task", "softmax", "--mode", "test", "--url", live_server.url, "--no-wait",
                       env_token=key)
    sub = Submission.objects.get()
    assert code == 0 and out.strip() == f"submitted #{sub.pk} (Queued)"
    assert sub.user == owner and sub.mode == "test" and sub.filename == "softmax_kernel.py"


@pytest.mark.slow
def test_it_waits_for_the_result_and_prints_it(live_server, kernel, task, key, eval_queue, require_sandbox,
                                              tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    result_json = tmp_path / "result.json"
    proc = cli(kernel, "--task", "softmax", "--mode", "test", "--url", live_server.url, "--token", key,
               "--poll", "0.3", "--json", result_json)
    deadline = time.monotonic() + 30
    while not Submission.objects.exists():
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    sub = Submission.objects.get()
    # what a worker does with the message, run here: the real task through the real sandbox
    assert evaluate_submission.apply(args=[sub.pk]).get() == "stored"
    out, err = proc.communicate(timeout=60)
    sub.refresh_from_db()
    assert f"submitted #{sub.pk} (Queued)" in out and "status: Done" in out
    # the site's words for the verdict, the same as its pages: a passing test run is "Verified (test run)"
    assert f"verdict: {verdict_word(sub.verdict, sub.mode)}" in out
    assert sub.verdict != "verified" or "verdict: Verified (test run)" in out
    assert proc.returncode == (1 if sub.verdict == "rejected" else 0), (out, err)
    assert '"status": "done"' in result_json.read_text()
