"""The repair job: dead workers' submissions go back to the queue (or fail after the last attempt),
lost messages are sent again, nothing that is fine is touched."""
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from leaderboard import services
from leaderboard.models import Submission
from leaderboard.tasks import broker_task_ids
from site_helpers import SOURCE, make_queued, queued_task_ids

pytestmark = pytest.mark.django_db


def _running(task, user, *, heartbeat_age_s=0, attempts=1, worker="celery@gpu0"):
    sub = make_queued(task, user, device_type="cpu")
    claimed = services.submission_claim(submission_id=sub.pk, worker=worker)
    Submission.objects.filter(pk=sub.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age_s), attempts=attempts)
    claimed.refresh_from_db()
    return claimed


def test_a_submission_whose_worker_died_is_queued_again(task, owner, eval_queue, redis_client,
                                                         django_capture_on_commit_callbacks):
    dead = _running(task, owner, heartbeat_age_s=3600)
    alive = _running(task, owner, heartbeat_age_s=5)
    with django_capture_on_commit_callbacks(execute=True):
        counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)
    assert counts == {"requeued": 1, "failed": 0, "resent": 0}
    dead.refresh_from_db()
    alive.refresh_from_db()
    assert dead.status == "queued" and dead.claim_token == "" and "stopped responding" in dead.phase
    assert alive.status == "running"
    assert queued_task_ids(redis_client, eval_queue) == [dead.celery_task_id]
    # and the worker that takes the new message can claim it
    assert services.submission_claim(submission_id=dead.pk).attempts == 2


def test_it_fails_after_the_last_attempt(task, owner, settings, eval_queue, django_capture_on_commit_callbacks):
    settings.EVAL_MAX_ATTEMPTS = 2
    sub = _running(task, owner, heartbeat_age_s=3600, attempts=2)
    with django_capture_on_commit_callbacks(execute=True):
        counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)
    assert counts["failed"] == 1
    sub.refresh_from_db()
    assert sub.status == "failed" and "after 2 attempts" in sub.error and sub.finished_at


def test_a_run_past_the_hard_limit_is_queued_again(task, owner, eval_queue, django_capture_on_commit_callbacks):
    sub = _running(task, owner, heartbeat_age_s=0)
    Submission.objects.filter(pk=sub.pk).update(started_at=timezone.now() - timedelta(hours=3))
    with django_capture_on_commit_callbacks(execute=True):
        counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)
    assert counts["requeued"] == 1
    sub.refresh_from_db()
    assert sub.status == "queued" and "ran too long" in sub.phase


def test_a_lost_message_is_sent_again_and_a_present_one_is_not(task, owner, eval_queue, redis_client,
                                                               django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        kept = services.submission_create(user=owner, task=task, source=SOURCE)
        lost = services.submission_create(user=owner, task=task, source=SOURCE)
    redis_client.lrem(eval_queue, 0, *[raw for raw in redis_client.lrange(eval_queue, 0, -1)
                                        if lost.celery_task_id.encode() in raw])
    assert queued_task_ids(redis_client, eval_queue) == [kept.celery_task_id]
    old = timezone.now() - timedelta(hours=1)
    Submission.objects.filter(pk__in=[kept.pk, lost.pk]).update(enqueued_at=old)
    counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)
    assert counts == {"requeued": 0, "failed": 0, "resent": 1}
    assert sorted(queued_task_ids(redis_client, eval_queue)) == sorted([kept.celery_task_id, lost.celery_task_id])
    # a second pass right after sends nothing more
    assert services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)["resent"] == 0


def test_recent_queued_submissions_are_left_alone(task, owner, eval_queue, redis_client):
    sub = make_queued(task, owner, device_type="cpu")
    Submission.objects.filter(pk=sub.pk).update(enqueued_at=timezone.now())
    assert services.submissions_requeue_stuck(broker_task_ids=broker_task_ids)["resent"] == 0
    assert queued_task_ids(redis_client, eval_queue) == []


def test_a_restarting_worker_requeues_what_it_left_running(task, owner, eval_queue,
                                                           django_capture_on_commit_callbacks):
    mine = _running(task, owner, worker="celery@gpu0")
    theirs = _running(task, owner, worker="celery@gpu1")
    with django_capture_on_commit_callbacks(execute=True):
        assert services.submissions_requeue_orphans(worker="celery@gpu0") == 1
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.status == "queued" and "restarted" in mine.phase
    assert theirs.status == "running"


def test_the_command_runs_the_job(task, owner, eval_queue, capsys):
    _running(task, owner, heartbeat_age_s=3600)
    call_command("requeue_stuck")
    assert "requeued: 1" in capsys.readouterr().out


def test_a_submission_whose_worker_has_no_heartbeat_key_is_queued_again_at_once(
        task, owner, eval_queue, redis_client, settings, django_capture_on_commit_callbacks):
    from leaderboard import liveness

    settings.WORKER_ALIVE_TTL_S = 3  # the test Redis has been up longer (liveness.alive_nodes)
    gone = _running(task, owner, heartbeat_age_s=5, worker="gone@gpu0")
    live = _running(task, owner, heartbeat_age_s=5, worker="live@gpu1")
    fresh = _running(task, owner, heartbeat_age_s=0, worker="new@gpu2")  # claimed just now: not judged yet
    old = timezone.now() - timedelta(seconds=60)
    Submission.objects.filter(pk__in=[gone.pk, live.pk]).update(started_at=old)
    liveness.publish(node="live@gpu1", queues=[eval_queue], client=redis_client)
    try:
        assert "live@gpu1" in liveness.live_workers(redis_client)[eval_queue]
        with django_capture_on_commit_callbacks(execute=True):
            counts = services.submissions_requeue_stuck(broker_task_ids=broker_task_ids,
                                                        alive_nodes=liveness.alive_nodes)
    finally:
        liveness.withdraw(node="live@gpu1", queues=[eval_queue], client=redis_client)
    assert counts == {"requeued": 1, "failed": 0, "resent": 0}
    for sub in (gone, live, fresh):
        sub.refresh_from_db()
    assert gone.status == "queued" and "its worker gone@gpu0 is gone" in gone.phase
    assert live.status == "running" and fresh.status == "running"
    # Redis unreadable: the heartbeat key decides nothing, the row's own heartbeat still does
    assert services.submissions_requeue_stuck(alive_nodes=lambda: None) == {"requeued": 0, "failed": 0, "resent": 0}
