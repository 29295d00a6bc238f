"""Request bodies as the web server `make run` starts reads them (uvicorn, the ASGI layers of
leaderboard/asgi.py, the WSGI bridge): a body sent chunked, without Content-Length, reaches the
API whole; one too large is refused as one with a length is; HEAD is answered without a body."""
from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request

from leaderboard import services


def post_chunked(url: str, parts: list[bytes], headers: dict) -> tuple[int, dict, dict]:
    """urllib sends a body it cannot measure (an iterator) chunked, as curl does a streamed one."""
    request = urllib.request.Request(url, data=iter(parts), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.status, json.loads(resp.read()), dict(request.unredirected_hdrs)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(request.unredirected_hdrs)


def test_a_chunked_upload_is_read_whole(live_site, task, owner):
    key = services.api_token_create(user=owner)[1]
    headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}
    body = json.dumps({"task": "softmax", "mode": "test", "source": "", "filename": "k.py"}).encode()
    status, answer, sent = post_chunked(live_site + "/api/submissions", [body[:20], body[20:]], headers)
    assert sent.get("Transfer-encoding") == "chunked" and "Content-length" not in sent
    # the empty source is this body's own fault: a body lost on the way would be a missing 'task'
    assert status == 400 and answer["code"] == "empty", answer

    source = "x = 1\n" * 100_000  # 600 KB: over the upload's limit, which it has no length to show
    big = json.dumps({"task": "softmax", "mode": "test", "source": source}).encode()
    status, answer, _ = post_chunked(live_site + "/api/submissions", [big[i:i + 65536] for i in range(0, len(big), 65536)],
                                     headers)
    assert status == 413 and answer["code"] == "too_large", answer

    huge = [b"x" * (1024 * 1024)] * 9  # past what the layer reads before it hands the body on
    status, answer, _ = post_chunked(live_site + "/api/submissions", huge, headers)
    assert status == 413 and answer["code"] == "too_large", answer

    status, answer, _ = post_chunked(live_site + "/api/submissions", [body], {**headers, "Content-Type": "text/plain"})
    assert status == 415 and answer["code"] == "unsupported_media_type", answer


def test_head_over_http_is_the_gets_headers_without_a_body(live_site, task):
    where = urllib.parse.urlsplit(live_site)
    connection = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    connection.request("GET", "/api/tasks")
    got = connection.getresponse()
    body = got.read()
    connection.request("HEAD", "/api/tasks")
    head = connection.getresponse()
    assert head.status == got.status == 200 and head.read() == b""
    assert head.getheader("Content-Type") == "application/json"
    assert int(head.getheader("Content-Length")) == len(body) > 0
    connection.close()
