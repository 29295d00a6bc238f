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
