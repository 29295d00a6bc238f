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


class AnswerLosingProxy:
    """Between the CLI and the live server: it passes every request on, but drops the answer to
    the first POST (closes the connection without a word), as a proxy in front of a restarting
    site or a dropped connection does once the upload has been stored."""

    def __init__(self, target: str):
        import http.server
        import threading
        import urllib.error
        import urllib.request

        self.keys = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self, method):
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("authorization", "content-type", "accept", "idempotency-key")}
                req = urllib.request.Request(target + self.path, data=data, method=method, headers=headers)
                try:
                    with urllib.request.urlopen(req, timeout=30) as resp:
                        status, kind, body = resp.status, resp.headers["Content-Type"], resp.read()
                except urllib.error.HTTPError as exc:
                    status, kind, body = exc.code, exc.headers["Content-Type"], exc.read()
                if method == "POST":
                    proxy.keys.append(self.headers.get("Idempotency-Key"))
                    if len(proxy.keys) == 1:
                        return  # stored on the site; the answer never reaches the client
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_a_lost_answer_is_retried_under_the_same_idempotency_key_and_makes_one_submission(
        live_server, kernel, task, owner, key, eval_queue):
    proxy = AnswerLosingProxy(live_server.url)
    try:
        code, out, err = run(kernel, "--task", "softmax", "--mode", "test", "--url", proxy.url, "--token", key,
                             "--no-wait")
    finally:
        proxy.server.shutdown()
    sub = Submission.objects.get()  # one submission for two requests
    assert code == 0 and out.strip() == f"submitted #{sub.pk} (Queued)", (out, err)
    assert "sending it again under the same Idempotency-Key" in err
    assert len(proxy.keys) == 2 and proxy.keys[0] == proxy.keys[1] and len(proxy.keys[0]) == 36
    # each invocation has its own key: the same file submitted again is a new submission
    code, out, err = run(kernel, "--task", "softmax", "--mode", "test", "--url", live_server.url, "--token", key,
                         "--no-wait")
    assert code == 0 and Submission.objects.count() == 2, (out, err)
