"""The task boards (the task page and the API's leaderboard) decide whether each row's code is open
in a fixed number of queries, however many rows they show, with the same answers as
selectors.code_open_reason asked row by row: published, withheld, an entry of a frozen
competition, and neither."""
from __future__ import annotations

import re
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard import selectors, services
from leaderboard.models import Competition, Submission
from leaderboard.services import competitions, opencode
from clock_helpers import T0
from web_helpers import upload_done

PAGE = "/tasks/softmax/?device=cpu"
API = "/api/tasks/softmax/leaderboard?device=cpu"




def race(task, staff, slug: str, opens_h: float, closes_h: float) -> Competition:
    c = Competition(slug=slug, title=slug.title(), device_types=["cpu"], opens_at=T0 + timedelta(hours=opens_h),
                    closes_at=T0 + timedelta(hours=closes_h))
    return competitions.competition_save(competition=c, tasks=[task], actor=staff)


def uploads(task, names: list[str], speedup: float) -> list[Submission]:
    User = get_user_model()
    return [upload_done(task, User.objects.create_user(name), speedup=speedup - i * 0.01)
            for i, name in enumerate(names)]


def queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured)


def page_marks(client) -> dict[str, bool]:
    """{user name: whether the task page marks the row's code open}."""
    html = client.get(PAGE).content.decode()
    rows = re.findall(r'/submissions/\d+/">(\w+)</a>( <span class="code-open")?', html)
    return {name: bool(mark) for name, mark in rows}


def test_code_marks_cost_the_same_queries_for_2_rows_and_12(client, task, staff, at, django_assert_max_num_queries):
    race(task, staff, "first", 1, 3)
    at(2)
    first = uploads(task, ["a0", "a1"], speedup=3.0)
    at(4)
    assert competitions.competitions_freeze_due() == 1  # both entries' code opens
    opencode.submission_withhold(submission=first[1], actor=staff, reason="a licensed snippet")
    with_2 = {"page": queries(client, PAGE), "api": queries(client, API)}
    assert len(client.get(API).json()["entries"]) == 2

    race(task, staff, "second", 5, 7)
    at(6)
    second = uploads(task, [f"b{i}" for i in range(7)], speedup=2.0)
    at(7.5)
    late = uploads(task, ["c0", "c1", "c2"], speedup=1.5)  # after the close: not entries
    services.submission_publish(submission=late[0], actor=late[0].user)
    opencode.submission_withhold(submission=second[0], actor=staff, reason="a licensed snippet")
    at(8)
    assert competitions.competitions_freeze_due() == 1

    with django_assert_max_num_queries(with_2["page"]):
        assert client.get(PAGE).status_code == 200
    with django_assert_max_num_queries(with_2["api"]):
        entries = client.get(API).json()["entries"]
    assert len(entries) == 12

    expected = {s.user.username: bool(selectors.code_open_reason(submission=Submission.objects.get(pk=s.pk)))
                for s in first + second + late}
    assert {e["user"]: e["code_open"] for e in entries} == expected
    assert page_marks(client) == expected
    opened = {name for name, is_open in expected.items() if is_open}
    assert opened == {"a0", "c0"} | {f"b{i}" for i in range(1, 7)}  # neither withheld one, nor late c1, c2
