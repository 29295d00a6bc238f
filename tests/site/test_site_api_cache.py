"""The public API reads (the task list, a task's board) are kept per address and data fingerprint
like the public pages: a repeat costs no query, a new result shows once the fingerprint moves, a
refusal is never kept, and what is kept still matches the schema."""
from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.web import pagecache
from site_helpers import H200, make_done


def test_a_repeat_costs_no_query_and_a_new_result_shows(client, settings, task, owner, other):
    make_done(task, owner, speedup=1.3)
    settings.WEB_FINGERPRINT_MAX_AGE_S = 60  # as deployed: the fingerprint read at most so often
    settings.WEB_REBUILD_MIN_INTERVAL_S = 0
    board = f"/api/tasks/softmax/leaderboard?device={H200}"
    first = client.get(board)
    tasks = client.get("/api/tasks")
    with CaptureQueriesContext(connection) as queries:
        again, tasks_again = client.get(board), client.get("/api/tasks")
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert again.content == first.content and tasks_again.content == tasks.content
    assert again["Content-Type"] == "application/json"
    assert [e["user"] for e in again.json()["entries"]] == ["owner"]

    make_done(task, other, speedup=1.5)
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0  # the next request reads the moved fingerprint
    assert [e["user"] for e in client.get(board).json()["entries"]] == ["other", "owner"]
    assert client.get("/api/tasks").json()["tasks"][0]["submissions"] == 2


def test_a_refusal_is_not_kept_and_each_address_is_its_own(client, task, owner):
    make_done(task, owner, speedup=1.3)
    assert client.get("/api/tasks/softmax/leaderboard?device=nope").status_code == 400
    assert client.get("/api/tasks/nope/leaderboard").status_code == 404
    cpu = client.get("/api/tasks/softmax/leaderboard?device=cpu").json()
    h200 = client.get(f"/api/tasks/softmax/leaderboard?device={H200}").json()
    assert cpu["entries"] == [] and len(h200["entries"]) == 1
    # the absolute links are the caller's host's
    other_host = client.get("/api/tasks", HTTP_HOST="localhost").json()
    assert other_host["tasks"][0]["leaderboard"].startswith("http://localhost/")
    assert not any(key.startswith("api:") and "nope" in key for key in pagecache._entries)
