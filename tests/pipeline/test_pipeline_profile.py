"""Profile mode through the real pipeline on the CPU: the CLI submits examples/softmax.py to the
web server, a real Celery worker runs it in the sandbox, and the CLI prints the profile; the next
profile past the account's limit is refused with 429 while the worker is untouched."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import Submission

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "softmax.py"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _cli(pipeline, key: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "leaderboard.cli", "submit", str(EXAMPLE), "--task", "softmax", "--mode", "profile",
         "--url", pipeline.url, "--token", key, "--poll", "0.5", "--timeout", "600"],
        capture_output=True, text=True, timeout=700, env=pipeline.env)


def test_a_profile_runs_through_the_worker_and_the_next_one_waits_for_the_limit(pipeline):
    from evaluator.tasks import get_task

    services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("profiler", password="pw-profiler-1")
    _, key = services.api_token_create(user=user)
    pipeline.env["PROFILES_PER_USER"] = "1/h"
    pipeline.start_web()
    pipeline.new_worker()

    done = _cli(pipeline, key)
    log = pipeline.workdir.joinpath("worker.log")
    assert done.returncode == 0, (done.stdout, done.stderr, log.read_text(errors="replace")[-3000:])
    assert "mode profile" in done.stdout and "verdict: Verified (profile run)" in done.stdout
    assert "with torch.profiler" in done.stdout and "custom_kernel" in done.stdout
    sub = Submission.objects.get(user=user)
    assert sub.status == "done" and sub.report["profile"]["ops"] and sub.speedup_vs_compile is None

    refused = _cli(pipeline, key)
    assert refused.returncode == 2 and "HTTP 429: Profile limit reached: 1 profile run per hour" in refused.stderr
    assert Submission.objects.filter(user=user).count() == 1
