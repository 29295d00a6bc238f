"""Workers whose absence shows: a real worker publishes its heartbeat key in a real Redis; killed
with SIGKILL mid-evaluation, its key expires, /healthz answers 503 naming the queue that has work
and no worker, the submission's page says its worker stopped answering, and the repair process
(not a worker) queues it again, to be finished once by the next worker that starts."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from leaderboard import services
from leaderboard.models import Submission
from pipeline_helpers import wait_for

KERNEL = Path(__file__).parent / "kernels" / "softmax_rows.py"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def health(base: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_killed_worker_shows_and_its_submission_is_repaired_without_it(pipeline):
    from evaluator.tasks import get_task

    services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("alive", password="pw-alive-1")
    pipeline.start_web()
    pipeline.start_repair()
    worker = pipeline.new_worker(name="first@test")
    status, body = wait_for(lambda: (lambda h: h if h[1]["queues"].get(pipeline.queue, {}).get("workers") else None)(
        health(pipeline.url)), 60, "the worker's heartbeat in /healthz")
    assert status == 200 and body["queues"][pipeline.queue]["workers"] == ["first@test"]

    sub = services.submission_create(user=user, task="softmax", source=KERNEL.read_text(), filename="k.py",
                                     mode="ranked")
    wait_for(lambda: Submission.objects.filter(pk=sub.pk, status="running", phase__startswith="correctness").exists(), 120,
             "the evaluation to start")
    worker.kill()

    # the key expires within its TTL (4 s here): the queue has work and no worker
    status, body = wait_for(lambda: (lambda h: h if h[0] == 503 else None)(health(pipeline.url)), 30, "a 503")
    assert body["queues"][pipeline.queue] == {"work": 1, "workers": [], "ok": False}
    page = Client()
    page.force_login(user)
    # the repair may re-queue it while the page renders: the page says what fits the status it read
    before = Submission.objects.get(pk=sub.pk).status
    html = page.get(f"/submissions/{sub.pk}/").content.decode()
    after = Submission.objects.get(pk=sub.pk).status
    said = {"running": "has stopped answering", "queued": "No worker is running"}
    assert any(said[status] in html for status in {before, after}), (before, after, html[-3000:])

    # the repair process, which lives apart from every worker, queues it again at once
    wait_for(lambda: Submission.objects.get(pk=sub.pk).status == "queued", 60, "the repair to re-queue it")
    assert "is gone" in Submission.objects.get(pk=sub.pk).phase
    assert "No worker is running for this device" in page.get(f"/submissions/{sub.pk}/").content.decode()

    # another worker (not the same name: its start re-queues nothing) finishes it once
    pipeline.new_worker(name="second@test")
    wait_for(lambda: Submission.objects.get(pk=sub.pk).status == "done", 300, "the evaluation to finish", interval=1)
    sub.refresh_from_db()
    assert sub.results_stored == 1 and sub.attempts == 2 and sub.verdict == "verified", sub.reasons
    status, body = health(pipeline.url)
    assert status == 200 and body["queues"][pipeline.queue]["workers"] == ["second@test"]
