"""`GET /api/submissions/<id>?wait=S` on the web server scripts/run.sh starts (uvicorn, the ASGI
layer of leaderboard/serving/asgi_wait.py) with a real worker and a real Redis: the answer comes when the
worker stores the result, a hundred waiting clients cost the server no thread and no database
connection each, and what is not the caller's to wait on is answered at once."""
from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from leaderboard import services
from leaderboard.models import Submission
from leaderboard.serving import asgi_kept

KERNEL = Path(__file__).parent / "kernels" / "softmax_rows.py"
CLIENTS = 100

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def get(url: str, token: str | None = None, timeout: float = 90) -> tuple[int, dict, float]:
    """(status, JSON body, seconds it took)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"} if token else {})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read()), time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), time.monotonic() - started


def server_threads(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def db_connections_but_mine() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid()")
        return cursor.fetchone()[0]


@pytest.fixture
def site(pipeline, settings):
    from evaluator.tasks import get_task

    settings.REDIS_URL = pipeline.redis.url  # this process announces what it finishes there too
    services.task_sync(spec=get_task("softmax"))
    user = get_user_model().objects.create_user("waiter", password="pw-waiter-1")
    other = get_user_model().objects.create_user("other", password="pw-other-1")
    _, token = services.api_token_create(user=user)
    pipeline.web = pipeline.start_web()
    pipeline.user, pipeline.other, pipeline.token = user, other, token
    return pipeline


def upload(site) -> Submission:
    """Through the API, so that the web server sends the message to the test's own broker."""
    body = json.dumps({"task": "softmax", "mode": "test", "source": KERNEL.read_text(), "filename": "k.py"})
    request = urllib.request.Request(f"{site.url}/api/submissions", data=body.encode(), method="POST", headers={
        "Authorization": f"Token {site.token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status == 201
        return Submission.objects.get(pk=json.loads(resp.read())["id"])


def test_waiting_clients_are_answered_when_the_worker_stores_the_result(site, settings):
    sub = upload(site)
    url = f"{site.url}/api/submissions/{sub.pk}?wait=60"
    answers: list[tuple[int, dict, float]] = []
    clients = [threading.Thread(target=lambda: answers.append(get(url, site.token))) for _ in range(CLIENTS)]
    for client in clients:
        client.start()
    # every client is waiting (nothing is finished, no worker runs yet): what does the server hold?
    time.sleep(4)
    assert not answers, answers[:1]
    threads, connections = server_threads(site.web.proc.pid), db_connections_but_mine()
    # a thread or a connection per client would be 100 of each: the server keeps its event loop's
    # few threads (uvloop's included) and the WEB_THREADS (16) that run Django, each with at most
    # one connection
    assert threads <= settings.WEB_THREADS + 8 < CLIENTS, threads
    # (+ the few connections of the layer that answers kept reads, leaderboard/serving/asgi_kept.py; +2: a
    # backend of an earlier test's killed process can linger on this worker's database)
    assert connections <= settings.WEB_THREADS + asgi_kept.POOL_SIZE + 2 < CLIENTS, connections

    site.new_worker()
    for client in clients:
        client.join(120)
    done = Submission.objects.get(pk=sub.pk)
    assert done.status == "done" and done.verdict == "verified", (done.status, done.error)
    assert len(answers) == CLIENTS
    assert {status for status, _, _ in answers} == {200}
    assert all(body["finished"] and body["status"] == "done" and body["verdict"] == "verified"
               for _, body, _ in answers), answers[0][1]
    # answered on the worker's announcement, not at a re-read 20 s later
    finished_after = (done.finished_at - done.created_at).total_seconds()
    assert max(took for _, _, took in answers) < finished_after + 3, (finished_after, max(a[2] for a in answers))


def test_a_wait_that_runs_out_answers_with_the_state_then(site):
    sub = services.submission_create(user=site.user, task="softmax", source=KERNEL.read_text(), filename="k.py",
                                     mode="test")
    status, body, took = get(f"{site.url}/api/submissions/{sub.pk}?wait=2", site.token)
    assert status == 200 and body["finished"] is False and body["status"] == "queued"
    assert 2 <= took < 4, took


def test_what_is_not_the_callers_to_wait_on_is_answered_at_once(site):
    theirs = services.submission_create(user=site.other, task="softmax", source=KERNEL.read_text(),
                                        filename="k.py", mode="test")
    status, body, took = get(f"{site.url}/api/submissions/{theirs.pk}?wait=30", site.token)
    assert status == 404 and body["code"] == "not_found" and took < 2, (status, body, took)
    status, body, took = get(f"{site.url}/api/submissions/{theirs.pk}?wait=30")
    assert status == 401 and took < 2, (status, body)
    for bad in ("61", "-1", "soon"):
        status, body, took = get(f"{site.url}/api/submissions/{theirs.pk}?wait={bad}", site.token)
        assert status == 400 and "'wait'" in body["error"] and took < 2, (bad, status, body)
