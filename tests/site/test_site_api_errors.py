"""Every /api/ answer that is not a success has one shape, {"error": words, "code": machine code,
...}, whichever layer made it: one test per status code through the site's own URL conf, an
unknown path and a body too large over HTTP, and the schema that documents them."""
import json
import urllib.error
import urllib.request

import pytest
from django.test import Client

from leaderboard import selectors, services
from site_helpers import SOURCE, make_done

pytestmark = pytest.mark.django_db


def auth(key):
    return {"HTTP_AUTHORIZATION": f"Token {key}"}


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


def shaped(resp, status: int, code: str) -> dict:
    """The body, after checking the status, the content type and the shape."""
    assert resp.status_code == status, (resp.status_code, resp.content[:300])
    assert resp["Content-Type"].startswith("application/json")
    body = resp.json()
    assert isinstance(body["error"], str) and body["error"].strip(), body
    assert body["code"] == code, body
    return body


def test_400_a_bad_parameter_and_a_bad_body(client, task, key):
    body = shaped(client.get("/api/submissions?per_page=1000", **auth(key)), 400, "invalid_request")
    assert "'per_page' must be between 1 and 100" in body["error"]
    assert body["errors"][0]["loc"] == ["query", "per_page"]
    body = shaped(client.post("/api/submissions", "{", content_type="application/json", **auth(key)),
                  400, "invalid_body")
    assert body["error"] == "The body is not valid JSON."
    key_too_long = {"HTTP_IDEMPOTENCY_KEY": "k" * 256}
    body = shaped(client.post("/api/submissions", {"task": "softmax", "source": SOURCE},
                              content_type="application/json", **auth(key), **key_too_long), 400, "invalid_request")
    assert "Idempotency-Key" in body["error"]


def test_400_an_unknown_device_names_the_known_ones(client, task):
    body = shaped(client.get("/api/tasks/softmax/leaderboard?device=nope"), 400, "unknown_device")
    assert "cpu" in body["device_types"]


@pytest.mark.parametrize("header, code", [(None, "unauthenticated"), ("Bearer x", "bad_token"),
                                          ("Token lb_wrong", "bad_token")])
def test_401_without_or_with_a_bad_token(client, db, header, code):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    resp = client.get("/api/submissions", **extra)
    shaped(resp, 401, code)
    assert resp["WWW-Authenticate"] == 'Token realm="api"'


def test_403_banned_and_owner_only(client, task, owner, other, staff, key, eval_queue):
    sub = make_done(task, owner)
    other_key = services.api_token_create(user=other)[1]
    shaped(client.get(f"/api/submissions/{sub.pk}/report", **auth(other_key)), 403, "owner_only")
    services.user_ban(user=owner, actor=staff, reason="x")
    shaped(client.post("/api/submissions", {"task": "softmax", "source": SOURCE}, content_type="application/json",
                       **auth(key)), 403, "banned")


@pytest.mark.parametrize("debug", [False, True])
def test_404_an_unknown_address_under_api_and_an_unknown_submission(client, settings, db, key, debug):
    settings.DEBUG = debug
    body = shaped(client.get("/api/no/such/thing"), 404, "not_found")
    assert "/api/openapi.json" in body["error"]
    shaped(client.post("/api/submissions/1/nothing", **auth(key)), 404, "not_found")
    shaped(client.get("/api/submissions/abc", **auth(key)), 404, "not_found")
    shaped(client.get("/api/nothing/"), 404, "not_found")
    body = shaped(client.get("/api/submissions/999", **auth(key)), 404, "not_found")
    assert body["error"] == "No submission #999 that you can read."


def test_404_an_unknown_task_in_the_list_as_everywhere(client, task, key):
    body = shaped(client.get("/api/submissions?task=nope", **auth(key)), 404, "unknown_task")
    assert "'nope'" in body["error"] and "GET /api/tasks" in body["error"]
    assert client.get("/api/submissions?task=softmax", **auth(key)).json()["count"] == 0


def test_404_an_unknown_task_on_upload(client, task, key, eval_queue):
    shaped(client.post("/api/submissions", {"task": "nope", "source": SOURCE}, content_type="application/json",
                       **auth(key)), 404, "unknown_task")


@pytest.mark.parametrize("method, path, allow", [
    ("delete", "/api/submissions", "GET, HEAD, POST"),
    ("put", "/api/tasks", "GET, HEAD"),
    ("post", "/api/openapi.json", "GET, HEAD"),
    ("post", "/api/docs", "GET, HEAD"),
    ("trace", "/api/competitions", "GET, HEAD"),
])
def test_405_names_what_the_address_takes(key, db, method, path, allow):
    client = Client(enforce_csrf_checks=True)  # as a real client meets the site: never a CSRF refusal
    resp = client.generic(method.upper(), path, **auth(key))
    body = shaped(resp, 405, "method_not_allowed")
    assert resp["Allow"] == allow and f"use {allow}" in body["error"]


def test_413_a_body_larger_than_the_api_reads(client, task, key):
    body = shaped(client.generic("POST", "/api/submissions", b'{"source": "' + b"x" * 600_000 + b'"}',
                                 content_type="application/json", **auth(key)), 413, "too_large")
    assert "at most 528,384 bytes" in body["error"]


def test_429_with_retry_after_until_the_window_ends(client, task, key, settings, eval_queue):
    settings.UPLOAD_RATE_LIMIT_PER_HOUR = 1
    upload = {"task": "softmax", "source": SOURCE}
    assert client.post("/api/submissions", upload, content_type="application/json", **auth(key)).status_code == 201
    resp = client.post("/api/submissions", upload, content_type="application/json", **auth(key))
    shaped(resp, 429, "rate_limited")
    assert 3500 < int(resp["Retry-After"]) <= 3600  # the window is an hour from the first upload


@pytest.mark.parametrize("debug", [False, True])
def test_500_in_an_operation_is_the_shape_without_the_exception(settings, db, monkeypatch, debug):
    settings.DEBUG = debug

    def broken():
        raise RuntimeError("a secret detail")

    monkeypatch.setattr(selectors, "task_list_with_stats", broken)
    resp = Client(raise_request_exception=False).get("/api/tasks")
    body = shaped(resp, 500, "server_error")
    assert "a secret detail" not in body["error"] and "Traceback" not in resp.content.decode()


def test_the_schema_lists_every_address_with_its_errors(client, db):
    from django.urls import get_resolver

    resp = client.get("/api/openapi.json")
    assert resp.status_code == 200
    schema = resp.json()
    assert schema["openapi"].startswith("3.")
    error = schema["components"]["schemas"]["ApiError"]
    assert set(error["required"]) == {"error", "code"} and error["additionalProperties"] is True
    resolver = get_resolver().url_patterns
    [api] = [p for p in resolver if str(p.pattern) == "api/"]
    served = {"/api/" + str(p.pattern).replace("<int:", "{").replace("<slug:", "{").replace("<", "{").replace(">", "}")
              for p in api.url_patterns if p.name not in ("openapi-json", "openapi-view", "api-root", "index")}
    assert served == set(schema["paths"]), served ^ set(schema["paths"])
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"405", "500"} <= set(map(str, responses)), (path, method)
            for status, answer in responses.items():
                if int(status) >= 400:
                    assert answer["content"]["application/json"]["schema"] == {
                        "$ref": "#/components/schemas/ApiError"}, (path, method, status)
    upload = schema["paths"]["/api/submissions"]["post"]
    assert {"200", "201", "400", "401", "403", "404", "413", "422", "429"} <= set(upload["responses"])
    assert "Retry-After" in upload["responses"]["429"]["headers"]
    assert set(upload["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert any(p["name"] == "Idempotency-Key" and p["in"] == "header" for p in upload["parameters"])


def over_http(url: str, key: str, data: bytes | None = None) -> tuple[int, dict, dict]:
    req = urllib.request.Request(url, data=data, headers={"Authorization": f"Token {key}",
                                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


@pytest.mark.django_db(transaction=True)
def test_over_http_an_unknown_path_is_the_shape(live_server, owner):
    key = services.api_token_create(user=owner)[1]
    status, headers, body = over_http(f"{live_server.url}/api/no/such/thing", key)
    assert (status, body["code"]) == (404, "not_found") and headers["Content-Type"] == "application/json"


@pytest.mark.django_db(transaction=True)
def test_over_http_a_body_too_large_is_the_shape(live_server, owner):
    key = services.api_token_create(user=owner)[1]
    body = b'{"task": "softmax", "source": "' + b"x" * 3_000_000 + b'"}'
    status, headers, answer = over_http(f"{live_server.url}/api/submissions", key, body)
    assert (status, answer["code"]) == (413, "too_large") and headers["Content-Type"] == "application/json"
    assert "528,384 bytes" in answer["error"]


def test_a_nul_in_a_query_is_no_500(client, task, key):
    """PostgreSQL cannot compare a text with NUL in it; such a task name names no task."""
    shaped(client.get("/api/submissions?task=soft%00max", **auth(key)), 404, "unknown_task")
    shaped(client.get("/api/competitions/a%00b"), 404, "not_found")
    shaped(client.get("/api/tasks/softmax/leaderboard?device=c%00pu"), 400, "unknown_device")


def test_the_api_root_says_where_to_start_and_a_trailing_slash_is_named(client, db):
    resp = client.get("/api/")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("application/json")
    index = resp.json()
    assert index["docs"].endswith("/api/docs") and index["openapi"].endswith("/api/openapi.json")
    assert client.get(index["tasks"].replace("http://testserver", "")).status_code == 200
    assert "Token" in index["authentication"]
    body = shaped(client.get("/api/docs/"), 404, "not_found")
    assert "try /api/docs" in body["error"]
    body = shaped(client.get("/api/no/such/"), 404, "not_found")
    assert "try" not in body["error"]
