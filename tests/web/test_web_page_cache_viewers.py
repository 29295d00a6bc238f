"""The page cache (leaderboard/web/pagecache.py) on the pages themselves: a visitor's page is kept
and a repeat costs no query, a new result replaces it once the fingerprint moves, and a
logged-in visitor's page is never sent to anyone else."""
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from leaderboard.web import pagecache
from web_helpers import H200, make_done


def test_a_public_page_is_kept_and_a_new_result_replaces_it(client, settings, task, django_user_model):
    first_coder = django_user_model.objects.create_user("first-coder")
    second_coder = django_user_model.objects.create_user("second-coder")
    make_done(task, first_coder, speedup=1.25)
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600  # as deployed, but read once a long while
    first = client.get("/tasks/softmax/")
    assert first.status_code == 200 and b"first-coder" in first.content and b"second-coder" not in first.content
    assert "page:/tasks/softmax/" in pagecache._entries
    with CaptureQueriesContext(connection) as queries:
        again = client.get("/tasks/softmax/")
    assert len(queries) == 0, [q["sql"] for q in queries]
    assert again.content == first.content

    make_done(task, second_coder, speedup=1.5)
    assert client.get("/tasks/softmax/").content == first.content  # the fingerprint not read again yet
    settings.WEB_FINGERPRINT_MAX_AGE_S = 0  # the next request reads the moved fingerprint
    page = client.get("/tasks/softmax/").content.decode()
    assert page.index("second-coder") < page.index("first-coder")  # 1.5x above 1.25x
    board = client.get(f"/api/tasks/softmax/leaderboard?device={H200}").json()["entries"]
    assert [e["user"] for e in board] == ["second-coder", "first-coder"]


def test_a_logged_in_visitors_page_is_never_sent_to_another(settings, task, owner, django_user_model):
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600
    make_done(task, owner, speedup=1.25)
    viewers = []
    for name in ("viewer-ann", "viewer-bob"):
        django_user_model.objects.create_user(name, password=f"pw-{name}-1234")
        browser = Client()
        assert browser.login(username=name, password=f"pw-{name}-1234")
        viewers.append((name, browser))
    anonymous = Client()
    for path in ("/", "/tasks/softmax/"):
        for _ in range(2):  # the second turn finds whatever the first kept
            for name, browser in viewers:
                page = browser.get(path).content.decode()
                assert name in page, (path, name)
                assert not any(n in page for n, _ in viewers if n != name), (path, name)
            page = anonymous.get(path).content.decode()
            assert not any(n in page for n, _ in viewers), path
