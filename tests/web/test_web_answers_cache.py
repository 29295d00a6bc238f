"""The public pages in the "answers" cache (Redis, leaderboard/web/pagecache.py): a page is kept
and a repeat costs no query, a new result replaces it, a parameter no view reads keys no new
entry, a logged-in visitor's page is never sent to anyone else, and a client that takes gzip gets
the bytes compressed once."""
import gzip
import uuid

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from cache_helpers import kept_keys
from web_helpers import H200, make_done


def test_a_public_page_is_kept_and_a_new_result_replaces_it(client, settings, task, django_user_model):
    first_coder = django_user_model.objects.create_user("first-coder")
    second_coder = django_user_model.objects.create_user("second-coder")
    make_done(task, first_coder, speedup=1.25)
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600  # as deployed, but read once a long while
    first = client.get("/tasks/softmax/")
    assert first.status_code == 200 and b"first-coder" in first.content and b"second-coder" not in first.content
    assert "page:/tasks/softmax/" in kept_keys()
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


def test_a_parameter_no_view_reads_keys_no_new_entry(client, settings, task, owner):
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600
    make_done(task, owner, speedup=1.25)
    for path in ("/", "/tasks/softmax/?device=cpu", "/api/tasks", "/api/tasks/softmax/leaderboard?device=cpu"):
        first = client.get(path)
        assert first.status_code == 200, path
        keys = kept_keys()
        joiner = "&" if "?" in path else "?"
        for _ in range(3):
            with CaptureQueriesContext(connection) as queries:
                again = client.get(f"{path}{joiner}x={uuid.uuid4().hex}")
            assert again.status_code == 200 and again.content == first.content, path
            assert len(queries) == 0, (path, [q["sql"] for q in queries])  # nothing built
        assert kept_keys() == keys, f"{path}: an unread parameter made a cache entry"
    # a parameter a view reads keys its own entry
    keys = kept_keys()
    assert client.get("/tasks/softmax/?device=cuda:NVIDIA H200").status_code == 200
    assert len(kept_keys()) > len(keys)


def test_a_logged_in_visitors_page_is_never_sent_to_another(settings, task, owner, other, django_user_model):
    settings.WEB_FINGERPRINT_MAX_AGE_S = 3600
    make_done(task, owner, speedup=1.25)
    viewers = []
    for name in ("viewer-ann", "viewer-bob"):
        django_user_model.objects.create_user(name, password=f"pw-{name}-1234")
        browser = Client()
        browser.login(username=name, password=f"pw-{name}-1234")
        viewers.append((name, browser))
    anonymous = Client()
    for path in ("/", "/tasks/softmax/"):
        for turn in range(2):  # the second turn finds whatever the first kept
            for name, browser in viewers:
                page = browser.get(path).content.decode()
                assert name in page, (path, name)
                assert not any(n in page for n, _ in viewers if n != name), (path, name)
            page = anonymous.get(path).content.decode()
            assert not any(n in page for n, _ in viewers), path
    assert not any("viewer" in key for key in kept_keys())


def test_a_client_that_takes_gzip_gets_the_page_compressed_once(client, task, django_user_model):
    for n in range(4):  # a board of over a kilobyte
        make_done(task, django_user_model.objects.create_user(f"coder-{n}"), speedup=1.25 + n / 10)
    plain = client.get("/tasks/softmax/")
    packed = client.get("/tasks/softmax/", HTTP_ACCEPT_ENCODING="gzip, deflate")
    refused = client.get("/tasks/softmax/", HTTP_ACCEPT_ENCODING="gzip;q=0, identity")
    assert "Content-Encoding" not in plain and "Accept-Encoding" in plain["Vary"]
    assert packed["Content-Encoding"] == "gzip" and "Accept-Encoding" in packed["Vary"]
    assert gzip.decompress(packed.content) == plain.content and len(packed.content) < len(plain.content)
    assert "Content-Encoding" not in refused and refused.content == plain.content
    board = f"/api/tasks/softmax/leaderboard?device={H200}"
    packed = client.get(board, HTTP_ACCEPT_ENCODING="gzip")
    assert packed["Content-Type"] == "application/json" and packed["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.content) == client.get(board).content
