"""A fair queue: one user may have EVAL_MAX_ACTIVE_PER_USER evaluations queued or running, and the
worker takes users in turn, so one user's burst delays another user's upload by at most the one
evaluation already running."""
import json

import pytest

from leaderboard import services
from leaderboard.models import Submission
from leaderboard.tasks import broker_task_ids
from site_helpers import SOURCE, report_for

pytestmark = pytest.mark.django_db


def run_worker(redis_client, queue: str) -> list[Submission]:
    """What one worker does with the queue as the broker holds it: take each message in arrival
    order and evaluate what the claim gives it (the sandbox replaced by a stored result)."""
    order = []
    while (raw := redis_client.rpop(queue)) is not None:  # kombu pushes left, consumes right
        message = json.loads(raw)
        submission_id = json.loads(__import__("base64").b64decode(message["body"]))[0][0]
        claimed = services.submission_claim_next(submission_id=submission_id, message_id=message["headers"]["id"],
                                                 worker="w1")
        if claimed is None:
            continue
        # what the broker holds is what the stuck-submission job sees: nothing queued is "lost"
        present = broker_task_ids([queue])
        for row in Submission.objects.filter(status="queued"):
            assert row.celery_task_id in present, "a queued row points at no message"
        services.submission_store_result(submission=claimed,
                                         report=report_for(claimed.task, mode="test", device="cpu"))
        order.append(claimed)
    return order


def test_a_burst_delays_another_users_upload_by_at_most_one_evaluation(
        task, owner, other, settings, eval_queue, redis_client, django_capture_on_commit_callbacks):
    settings.EVAL_MAX_ACTIVE_PER_USER = 6
    with django_capture_on_commit_callbacks(execute=True):
        burst = [services.submission_create(user=owner, task=task, source=SOURCE, mode="test") for _ in range(6)]
        single = services.submission_create(user=other, task=task, source=SOURCE, mode="test")
    order = run_worker(redis_client, eval_queue)
    assert [s.pk for s in order].count(single.pk) == 1 and len(order) == 7
    # first come: the burst's first upload; then the other user's turn; then the rest of the burst
    assert [s.pk for s in order] == [burst[0].pk, single.pk] + [s.pk for s in burst[1:]]
    assert set(Submission.objects.values_list("status", flat=True)) == {"done"}


def test_users_take_turns(task, owner, other, staff, settings, eval_queue, redis_client,
                          django_capture_on_commit_callbacks):
    settings.EVAL_MAX_ACTIVE_PER_USER = 3
    with django_capture_on_commit_callbacks(execute=True):
        for user in (owner, owner, owner, other, other, staff):
            services.submission_create(user=user, task=task, source=SOURCE, mode="test")
    users = [s.user.username for s in run_worker(redis_client, eval_queue)]
    assert users == ["owner", "other", "staff", "owner", "other", "owner"]


def test_a_user_may_not_queue_more_than_the_limit(task, owner, other, settings, eval_queue,
                                                 django_capture_on_commit_callbacks):
    assert settings.EVAL_MAX_ACTIVE_PER_USER == 2  # the default
    with django_capture_on_commit_callbacks(execute=True):
        first = services.submission_create(user=owner, task=task, source=SOURCE)
        services.submission_create(user=owner, task=task, source=SOURCE)
        with pytest.raises(services.QueueFull, match="limit is 2 at a time"):
            services.submission_create(user=owner, task=task, source=SOURCE)
        services.submission_create(user=other, task=task, source=SOURCE)  # per user
        # a finished evaluation frees a place
        claimed = services.submission_claim(submission_id=first.pk)
        services.submission_store_result(submission=claimed, report=report_for(task, device="cpu"))
        services.submission_create(user=owner, task=task, source=SOURCE)
    assert Submission.objects.filter(user=owner).count() == 3


def test_the_api_and_the_form_refuse_beyond_the_limit_with_a_message(
        client, task, owner, eval_queue, django_capture_on_commit_callbacks):
    key = services.api_token_create(user=owner)[1]
    body = {"task": "softmax", "source": SOURCE, "mode": "test"}
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            assert client.post("/api/submissions", body, content_type="application/json",
                               HTTP_AUTHORIZATION=f"Token {key}").status_code == 201
        resp = client.post("/api/submissions", body, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Token {key}")
        assert resp.status_code == 429
        assert "limit is 2 at a time" in resp.json()["error"] and resp["Retry-After"].isdigit()
        client.force_login(owner)
        page = client.post("/upload/", {"task": "softmax", "mode": "test", "code": SOURCE})
    assert page.status_code == 429
    assert "limit is 2 at a time" in page.content.decode()
    assert Submission.objects.filter(user=owner).count() == 2
