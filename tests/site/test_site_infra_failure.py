"""A fault of ours, not the submission's, planted for real: the judge's compile cache on the host
is broken (its `inductor` entry is a file), so the judge raises before any verdict. Through the
real task and the real sandbox the evaluation is retried, then ends `failed`, and every surface
says so: the owner's page, the API and the CLI in words without host paths, the audit console
with the whole trace for staff."""
import subprocess
import sys
import time

import pytest
from django.urls import reverse

from leaderboard import services
from leaderboard.models import Submission
from leaderboard.tasks import evaluate_submission

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def broken_judge_cache(tmp_path, monkeypatch):
    cache = tmp_path / "judge-cache"
    cache.mkdir(mode=0o700)
    (cache / "inductor").write_text("not a directory\n")
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(cache))
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    return cache


def test_a_judge_failure_is_retried_then_failed_and_never_blamed_on_the_code(
        live_server, client, task, owner, staff, eval_queue, require_sandbox, broken_judge_cache, settings, tmp_path):
    settings.EVAL_MAX_ATTEMPTS = 2
    key = services.api_token_create(user=owner)[1]
    kernel = tmp_path / "softmax_kernel.py"
    kernel.write_text((settings.BASE_DIR / "examples" / "softmax.py").read_text())
    cli = subprocess.Popen([sys.executable, "-m", "leaderboard.cli", "submit", str(kernel), "--task", "softmax",
                            "--mode", "ranked", "--url", live_server.url, "--token", key, "--poll", "0.3"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not Submission.objects.exists():
        assert time.monotonic() < deadline and cli.poll() is None, cli.communicate()
        time.sleep(0.1)
    sub = Submission.objects.get()
    # what a worker does with the message, run here; eager apply runs the retry at once
    evaluate_submission.apply(args=[sub.pk])
    sub.refresh_from_db()
    assert sub.status == "failed" and sub.attempts == 2 and sub.verdict == "" and sub.results_stored == 0
    assert sub.error.startswith("The evaluation could not run: the sandbox or the judge failed.")
    assert "not your code" in sub.error and "Gave up after 2 attempts" in sub.error
    assert str(broken_judge_cache) not in sub.error and "/" not in sub.error
    # staff get the whole trace: the judge's own exception, from inside the box
    assert "FileExistsError" in sub.error_detail and "the judge failed" in sub.error_detail

    out, err = cli.communicate(timeout=60)
    assert cli.returncode != 0 and "status: Failed" in out and sub.error in out, (out, err)
    assert "FileExistsError" not in out + err

    api = client.get(reverse("api:submission", args=[sub.pk]), HTTP_AUTHORIZATION=f"Token {key}").json()
    assert api["status"] == "failed" and api["error"] == sub.error and "error_detail" not in api
    assert api["verdict"] is None or api["verdict"] == ""

    client.force_login(owner)
    page = client.get(reverse("submission_detail", args=[sub.pk])).content.decode()
    assert 'data-status="failed"' in page and "This is not your code." in page
    assert "FileExistsError" not in page and "Traceback" not in page and "rejected" not in page.lower()

    client.force_login(staff)
    console = client.get(reverse("audit_queue")).content.decode()
    failures = console[console.index('id="failures"'):]
    assert f"#{sub.pk}</a>" in failures and "FileExistsError" in failures
    item = client.get(reverse("audit_item", args=[sub.pk])).content.decode()
    assert 'id="error-detail"' in item and "Traceback" in item and "FileExistsError" in item
