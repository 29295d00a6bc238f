"""POST /api/submissions under an Idempotency-Key: the same key and upload from the same user within
24 hours answers the first submission again (200, same id) and creates nothing, also when the two
requests race (threads against the live server); the key with another upload is a 422; an
expired key counts for nothing and is deleted."""
import json
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard import services
from leaderboard.models import IdempotencyKey, Submission
from site_helpers import SOURCE, queued_task_ids

UPLOAD = {"task": "softmax", "mode": "test", "source": SOURCE, "filename": "k.py"}


def post(client, key, body=UPLOAD, idempotency_key="key-1"):
    extra = {"HTTP_IDEMPOTENCY_KEY": idempotency_key} if idempotency_key else {}
    return client.post("/api/submissions", body, content_type="application/json",
                       HTTP_AUTHORIZATION=f"Token {key}", **extra)


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


@pytest.mark.django_db
def test_a_repeat_answers_the_first_submission_and_creates_nothing(client, task, key, eval_queue, redis_client,
                                                                   settings, django_capture_on_commit_callbacks):
    settings.EVAL_MAX_ACTIVE_PER_USER = 5
    with django_capture_on_commit_callbacks(execute=True):
        first = post(client, key)
        again = post(client, key)
    assert (first.status_code, again.status_code) == (201, 200), (first.content, again.content)
    assert again.json()["id"] == first.json()["id"] and again.json()["url"] == first.json()["url"]
    assert Submission.objects.count() == 1 and len(queued_task_ids(redis_client, eval_queue)) == 1
    # a multipart upload of the same file under the same key is the same upload
    from django.core.files.uploadedfile import SimpleUploadedFile

    form = {"task": "softmax", "mode": "test", "file": SimpleUploadedFile("k.py", SOURCE.encode())}
    resp = client.post("/api/submissions", form, HTTP_AUTHORIZATION=f"Token {key}", HTTP_IDEMPOTENCY_KEY="key-1")
    assert resp.status_code == 200 and resp.json()["id"] == first.json()["id"]
    # without a key, or with another, the same upload is a new submission
    assert post(client, key, idempotency_key=None).status_code == 201
    assert post(client, key, idempotency_key="key-2").status_code == 201
    assert Submission.objects.count() == 3


@pytest.mark.django_db
def test_the_key_with_another_upload_is_a_422_that_says_so(client, task, key, eval_queue):
    first = post(client, key)
    resp = post(client, key, body={**UPLOAD, "source": SOURCE + "# changed\n"})
    assert resp.status_code == 422
    body = resp.json()
    assert body["code"] == "idempotency_key_reused" and body["submission"] == first.json()["id"]
    assert "another upload" in body["error"] and "new key" in body["error"]
    assert post(client, key, body={**UPLOAD, "mode": "ranked"}).status_code == 422
    assert Submission.objects.count() == 1


@pytest.mark.django_db
def test_keys_are_per_user(client, task, key, other, eval_queue):
    other_key = services.api_token_create(user=other)[1]
    mine, theirs = post(client, key), post(client, other_key)
    assert (mine.status_code, theirs.status_code) == (201, 201) and mine.json()["id"] != theirs.json()["id"]


@pytest.mark.django_db
def test_a_refused_upload_does_not_use_up_its_key(client, task, key, eval_queue):
    refused = post(client, key, body={**UPLOAD, "source": "def f(): pass\n"})
    assert refused.status_code == 400 and not IdempotencyKey.objects.exists()
    assert post(client, key).status_code == 201


@pytest.mark.django_db
def test_a_repeat_is_answered_past_the_upload_limit(client, task, key, settings, eval_queue):
    """The retry of an upload that went through is not a new upload: no limit applies to it."""
    settings.UPLOAD_RATE_LIMIT_PER_HOUR = 1
    first = post(client, key)
    assert post(client, key, idempotency_key="key-2").status_code == 429
    again = post(client, key)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


@pytest.mark.django_db
def test_an_expired_key_counts_for_nothing_and_is_deleted(client, task, key, owner, eval_queue):
    first = post(client, key).json()["id"]
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=24, seconds=1))
    resp = post(client, key, body={**UPLOAD, "source": SOURCE + "# another day\n"})
    assert resp.status_code == 201 and resp.json()["id"] != first
    [row] = IdempotencyKey.objects.all()  # the expired row went with the new write
    assert row.submission_id == resp.json()["id"]
    # within the day it still holds
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(hours=23, minutes=59))
    assert post(client, key, body={**UPLOAD, "source": SOURCE + "# another day\n"}).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_racing_requests_with_one_key_make_one_submission(live_server, task, owner, eval_queue, redis_client):
    key = services.api_token_create(user=owner)[1]
    racers = 6
    start = threading.Barrier(racers)
    answers = []

    def send():
        req = urllib.request.Request(f"{live_server.url}/api/submissions", data=json.dumps(UPLOAD).encode(),
                                     method="POST", headers={"Authorization": f"Token {key}",
                                                             "Content-Type": "application/json",
                                                             "Idempotency-Key": "one-upload"})
        start.wait(timeout=30)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                answers.append((resp.status, json.loads(resp.read())))
        except urllib.error.HTTPError as exc:
            answers.append((exc.code, json.loads(exc.read())))

    threads = [threading.Thread(target=send) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=90)
    assert len(answers) == racers, answers
    statuses = sorted(status for status, _ in answers)
    assert statuses == [200] * (racers - 1) + [201], answers
    assert len({body["id"] for _, body in answers}) == 1
    assert Submission.objects.count() == 1 and IdempotencyKey.objects.count() == 1
    assert len(queued_task_ids(redis_client, eval_queue)) == 1
