"""Not collected by the suite (no test_ prefix): test_sqlite_numbers.py runs it in a pytest of its
own on SQLite, the database of `make run`, where a number past a database integer raises
OverflowError when bound instead of finding no row as on PostgreSQL."""
import pytest
from django.contrib.auth import get_user_model

HUGE = str(2**70)
FORM = {"slug": "race", "title": "Race", "text": "", "device_types": ["cpu"],
        "opens_at": "2030-03-02T10:00", "closes_at": "2030-03-03T10:00"}


@pytest.mark.django_db
def test_a_huge_task_id_on_the_competition_forms_is_a_form_error(client, task):
    client.force_login(get_user_model().objects.create_superuser("root", password="pw-root-1234"))
    for tasks in ([HUGE], [str(task.pk), HUGE], ["-" + HUGE]):
        r = client.post("/audit/competitions/new/", {**FORM, "tasks": tasks})
        assert r.status_code == 400 and "is not one of the available choices" in r.content.decode()
        r = client.post("/admin/leaderboard/competition/add/", {**FORM, "tasks": tasks, "entries-TOTAL_FORMS": "0",
                                                                "entries-INITIAL_FORMS": "0"})
        assert r.status_code == 200 and "is not one of the available choices" in r.content.decode()
    r = client.post("/audit/competitions/new/", {**FORM, "tasks": [str(task.pk)]})
    assert r.status_code == 302  # an ordinary id still saves
