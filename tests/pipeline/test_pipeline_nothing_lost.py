"""Nothing is lost: a real worker SIGKILLed mid-evaluation and a Redis restart leave every
submission finished exactly once; none stuck, none stored twice, none claimed more than needed."""
from __future__ import annotations

import json
import re
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model

from leaderboard import services
from leaderboard.models import Submission
from pipeline_helpers import wait_for

KERNEL = Path(__file__).parent / "kernels" / "softmax_rows.py"
N = 3

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _submit(base: str, key: str) -> int:
    body = json.dumps({"task": "softmax", "mode": "test", "source": KERNEL.read_text(),
                       "filename": "softmax_rows.py"}).encode()
    req = urllib.request.Request(f"{base}/api/submissions", data=body, method="POST",
                                 headers={"Authorization": f"Token {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 201
        return json.loads(resp.read())["id"]


def _evaluating(ids, **extra):
    return (Submission.objects.filter(pk__in=ids, status="running", **extra).exclude(phase="starting the sandbox")
            .order_by("pk").first())


def test_a_killed_worker_and_a_redis_restart_lose_nothing(pipeline):
    from evaluator.tasks import get_task

    services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("pipeline", password="pw-pipeline-1")
    _, key = services.api_token_create(user=user)
    pipeline.start_web()
    pipeline.start_repair()
    worker = pipeline.new_worker()
    ids = [_submit(pipeline.url, key) for _ in range(N)]

    # 1. SIGKILL the worker (and its pool child and sandbox) in the middle of an evaluation
    victim = wait_for(lambda: _evaluating(ids), 180, "an evaluation to start")
    # the worker's heartbeat thread touches the row while the sandbox runs (every 2 s here)
    wait_for(lambda: Submission.objects.filter(
        pk=victim.pk, status="running", heartbeat_at__gt=victim.started_at + timedelta(seconds=1)).exists(),
        15, "a heartbeat during the evaluation")
    worker.kill()
    assert Submission.objects.get(pk=victim.pk).status == "running"  # left behind, as after a crash

    # 2. the same worker comes back: what its previous run left running is queued again
    worker = pipeline.new_worker()
    wait_for(lambda: Submission.objects.get(pk=victim.pk).status != "running", 120, "the killed one to be re-queued")

    # 3. restart Redis while the worker is evaluating and others wait in the queue: their
    #    messages are lost with it (no persistence), the repair job must send them again; the
    #    running evaluation goes on (the worker's heartbeat key goes with Redis, which must not
    #    read as a dead worker)
    def busy_with_backlog():
        return _evaluating(ids) and Submission.objects.filter(pk__in=ids, status="queued").exists()

    wait_for(busy_with_backlog, 240, "an evaluation with others queued behind it")
    pipeline.redis.restart()

    # 4. everything finishes anyway
    def all_finished():
        rows = list(Submission.objects.filter(pk__in=ids).values_list("status", flat=True))
        return all(s in ("done", "failed") for s in rows)

    wait_for(all_finished, 600, "every submission to finish", interval=1)
    log = pipeline.workdir.joinpath("worker.log").read_text(errors="replace")
    rows = {s.pk: s for s in Submission.objects.filter(pk__in=ids)}
    for pk, sub in rows.items():
        assert sub.status == "done", (pk, sub.status, sub.error, log[-4000:])
        assert sub.results_stored == 1
        assert sub.report["task"] == "softmax" and sub.verdict, sub.report
        claims = len(re.findall(rf"submission {pk}: claimed \(attempt", log))
        assert claims == sub.attempts, (pk, claims, sub.attempts)
    assert rows[victim.pk].attempts == 2
    assert sum(sub.attempts for sub in rows.values()) == N + 1  # one redo, for the killed one only
    repair_log = pipeline.workdir.joinpath("repair.log").read_text(errors="replace")
    resent = sum(int(n) for n in re.findall(r"resent: (\d+)", repair_log))
    assert resent >= 1, "the Redis restart lost no message: the test did not test the repair"
    # the honest kernel passes: the evaluations were real and complete
    assert {sub.verdict for sub in rows.values()} == {"verified"}, [s.reasons for s in rows.values()]
    worker.stop()


def test_an_upload_while_redis_is_down_is_kept_and_evaluated_later(pipeline):
    from evaluator.tasks import get_task

    services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("offline", password="pw-offline-1")
    _, key = services.api_token_create(user=user)
    pipeline.start_web()
    pipeline.redis.stop()
    sub_id = _submit(pipeline.url, key)  # accepted: the row is the record, the message comes later
    sub = Submission.objects.get(pk=sub_id)
    assert sub.status == "queued"
    pipeline.redis.start()
    pipeline.start_repair()
    pipeline.new_worker()
    wait_for(lambda: Submission.objects.get(pk=sub_id).status == "done", 300, "the upload to be evaluated",
             interval=1)
    sub.refresh_from_db()
    assert sub.results_stored == 1 and sub.attempts == 1
    log = pipeline.workdir.joinpath("repair.log").read_text(errors="replace")
    assert re.search(r"resent: 1", log), log[-3000:]
