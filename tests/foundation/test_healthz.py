import json

import pytest


@pytest.mark.django_db
def test_healthz_reports_database_and_broker_ok(client, require_postgres):
    response = client.get("/healthz")
    body = json.loads(response.content)
    assert response.status_code == 200, body
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True


@pytest.mark.django_db
def test_healthz_is_503_when_broker_unreachable(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/healthz")
    body = json.loads(response.content)
    assert response.status_code == 503
    assert body["broker"]["ok"] is False
    assert body["database"]["ok"] is True
    assert body["status"] == "unavailable"


def test_healthz_rejects_post(client):
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_healthz_names_the_workers_per_queue_and_is_503_for_work_without_one(client, require_postgres, settings):
    import uuid

    from evaluator.tasks import get_task
    from leaderboard import liveness, services
    from leaderboard.models import Submission
    from django.contrib.auth import get_user_model

    settings.EVAL_QUEUE = queue = f"eval-health-{uuid.uuid4().hex[:8]}"
    task, _ = services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("healthy", password="pw-healthy-1")
    Submission.objects.create(user=user, task=task, device_type="cpu", source="x = 1\n", celery_task_id="t")
    body = json.loads(client.get("/healthz").content)
    assert body["queues"][queue] == {"work": 1, "workers": [], "ok": False} and body["status"] == "unavailable"
    liveness.publish(node="w1@host", queues=[queue])
    try:
        response = client.get("/healthz")
        assert response.status_code == 200
        assert json.loads(response.content)["queues"][queue] == {"work": 1, "workers": ["w1@host"], "ok": True}
    finally:
        liveness.withdraw(node="w1@host", queues=[queue])
    assert client.get("/healthz").status_code == 503
