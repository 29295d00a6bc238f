"""What the API refuses, and how: someone else's private submission is a 404 on every
per-submission address (as on the web: nothing confirms that it exists), an unknown device type a
400 that names the known ones, a method an address does not take a JSON 405 with Allow, never
Django's CSRF refusal."""
import pytest
from django.test import Client
from django.urls import path

from leaderboard import services
from leaderboard.urls import urlpatterns as site_urls
from site_helpers import H200, make_done

pytestmark = pytest.mark.django_db

SUBMISSION_ADDRESSES = ["", "/source", "/report", "/profile.ncu-rep"]


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


@pytest.fixture
def other_key(other):
    return services.api_token_create(user=other)[1]


@pytest.fixture
def csrf_client():
    """A client that meets Django's CSRF check as a real one does (the test client skips it)."""
    return Client(enforce_csrf_checks=True)


@pytest.mark.parametrize("suffix", SUBMISSION_ADDRESSES)
def test_someone_elses_private_submission_reads_as_missing(client, task, owner, other_key, suffix):
    private = make_done(task, owner, mode="test")  # a test run is its owner's and staff's
    missing = private.pk + 1000
    seen = client.get(f"/api/submissions/{private.pk}{suffix}", **auth(other_key))
    unseen = client.get(f"/api/submissions/{missing}{suffix}", **auth(other_key))
    assert seen.status_code == unseen.status_code == 404, (seen.content, unseen.content)
    assert seen.json()["error"] == unseen.json()["error"].replace(str(missing), str(private.pk))
    assert "another user" not in seen.json()["error"]


def test_a_disqualified_entry_reads_as_missing_to_others(client, task, owner, other_key, staff):
    sub = make_done(task, owner)
    services.submission_disqualify(submission=sub, actor=staff, reason="forged")
    for suffix in ("", "/source", "/report"):
        assert client.get(f"/api/submissions/{sub.pk}{suffix}", **auth(other_key)).status_code == 404


def test_a_public_entrys_report_stays_its_owners(client, task, owner, other_key):
    sub = make_done(task, owner)  # a ranked entry: its page is public, so its existence is no secret
    resp = client.get(f"/api/submissions/{sub.pk}/report", **auth(other_key))
    assert resp.status_code == 403 and "owner's and staff's" in resp.json()["error"]


def test_an_unknown_device_is_a_400_that_names_the_known_ones(client, task, owner, settings):
    settings.WORKER_DEVICE = "cpu"
    make_done(task, owner, device_type=H200)
    resp = client.get("/api/tasks/softmax/leaderboard?device=garbage")
    assert resp.status_code == 400
    body = resp.json()
    assert "'garbage'" in body["error"] and H200 in body["error"] and "cpu" in body["error"]
    assert {H200, "cpu"} <= set(body["device_types"])
    # the site's own device is a board even before it has results, and no parameter means it
    assert client.get("/api/tasks/softmax/leaderboard?device=cpu").status_code == 200
    assert client.get("/api/tasks/softmax/leaderboard").json()["device_type"] == "cpu"
    assert client.get("/api/tasks/softmax/leaderboard?device=" + "x" * 5000).status_code == 400


@pytest.mark.parametrize("address, allowed", [
    ("/api/submissions/{id}", "GET, HEAD"),
    ("/api/submissions/{id}/source", "GET, HEAD"),
    ("/api/submissions/{id}/report", "GET, HEAD"),
    ("/api/submissions/{id}/profile.ncu-rep", "GET, HEAD"),
    ("/api/submissions", "GET, HEAD, POST"),
    ("/api/tasks", "GET, HEAD"),
    ("/api/tasks/softmax/leaderboard", "GET, HEAD"),
    ("/api/competitions", "GET, HEAD"),
    ("/api/competitions/spring", "GET, HEAD"),
    ("/api/competitions/spring/export.jsonl", "GET, HEAD"),
])
@pytest.mark.parametrize("method", ["delete", "put", "patch"])
def test_a_method_an_address_does_not_take_is_a_json_405(csrf_client, task, owner, address, allowed, method):
    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner)
    for extra in (auth(key), {}):
        resp = getattr(csrf_client, method)(address.format(id=sub.pk), **extra)
        assert resp.status_code == 405, (method, address, resp.status_code, resp.content[:300])
        assert resp["Content-Type"].startswith("application/json")
        assert resp["Allow"] == allowed and allowed in resp.json()["error"]
    sub.refresh_from_db()
    assert sub.status == "done"


@pytest.mark.parametrize("address", ["/api/tasks", "/api/tasks/softmax/leaderboard", "/api/submissions/{id}",
                                     "/api/submissions/{id}/source", "/api/submissions", "/api/openapi.json",
                                     "/api/no/such/thing", "/api/submissions/999999"])
def test_head_is_answered_wherever_get_is_without_the_body(client, task, owner, address):
    key = services.api_token_create(user=owner)[1]
    path = address.format(id=make_done(task, owner).pk)
    got, head = client.get(path, **auth(key)), client.head(path, **auth(key))
    assert head.status_code == got.status_code and head["Content-Type"] == got["Content-Type"]
    assert head.content == b"" and int(head["Content-Length"]) == len(got.content) > 0


def test_a_post_with_a_token_and_a_session_but_no_csrf_token_is_taken(csrf_client, task, owner, eval_queue):
    """A browser session counts for nothing in the API, so its CSRF token is not asked for."""
    csrf_client.force_login(owner)
    key = services.api_token_create(user=owner)[1]
    resp = csrf_client.post("/api/submissions", {"task": "softmax", "mode": "test", "source": "x = 1\n"},
                            content_type="application/json", **auth(key))
    assert resp.status_code in (201, 400), resp.content
    assert resp["Content-Type"].startswith("application/json")


def unexempt(request):
    from django.http import JsonResponse

    return JsonResponse({"ok": True})


urlpatterns = [path("api/unexempt", unexempt), *site_urls]


@pytest.mark.urls(__name__)
def test_a_csrf_failure_under_api_is_json_that_names_the_token(csrf_client, settings, db):
    settings.DEBUG = False
    resp = csrf_client.post("/api/unexempt", {})
    assert resp.status_code == 403 and resp["Content-Type"].startswith("application/json")
    assert "Authorization: Token" in resp.json()["error"] and "CSRF" in resp.json()["error"]
    page = csrf_client.post("/accounts/login/", {})  # the site's forms keep their page
    assert page.status_code == 403 and page["Content-Type"].startswith("text/html")


@pytest.mark.django_db(transaction=True)
def test_delete_over_http_is_a_json_405_not_a_csrf_page(live_server, task, owner):
    """Through the real server, as curl sends it: token header, no cookie, no CSRF token."""
    import json
    import urllib.error
    import urllib.request

    key = services.api_token_create(user=owner)[1]
    sub = make_done(task, owner)
    req = urllib.request.Request(f"{live_server.url}/api/submissions/{sub.pk}", method="DELETE",
                                 headers={"Authorization": f"Token {key}"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=30)
    assert refused.value.code == 405 and refused.value.headers["Allow"] == "GET, HEAD"
    assert refused.value.headers["Content-Type"].startswith("application/json")
    assert "use GET" in json.loads(refused.value.read())["error"]
