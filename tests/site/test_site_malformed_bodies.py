"""Malformed request bodies against the API's upload: each gets a 400 (a 413 when it is too large;
JSON, with a message that says what is wrong) and stores nothing. Never a 500."""
import json

import pytest

from leaderboard import services
from leaderboard.models import Submission
from site_helpers import SOURCE

pytestmark = pytest.mark.django_db

BOUNDARY = "----lbboundary"


def multipart(*parts: bytes) -> bytes:
    return b"".join(f"--{BOUNDARY}\r\n".encode() + p + b"\r\n" for p in parts) + f"--{BOUNDARY}--\r\n".encode()


def field(name: str, value: bytes) -> bytes:
    return f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value


MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
JSON = "application/json"
SURROGATE_SOURCE = b'{"task": "softmax", "mode": "test", "source": "def custom_kernel(x):\\n    return x  # \\ud800\\n"}'

# (id, content type, body, words the message must contain)
CASES = [
    ("surrogate-in-source", JSON, SURROGATE_SOURCE, "not valid Unicode"),
    ("surrogate-in-task", JSON, b'{"task": "soft\\udc00max", "source": "x"}', "Unknown task"),
    ("nul-in-task", JSON, b'{"task": "soft\\u0000max", "source": "x"}', "Unknown task"),
    ("nul-in-source", JSON, json.dumps({"task": "softmax", "source": SOURCE + "\x00"}).encode(), "not valid Python"),
    ("deep-nesting", JSON, b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("deep-nesting-in-object", JSON, b'{"task": ' + b"[" * 100_000, "nested too deeply"),
    ("huge-json", JSON, b'{"task": "softmax", "source": "' + b"x" * (3 * 1024 * 1024) + b'"}', "too large"),
    ("not-json", JSON, b"{task: softmax}", "not valid JSON"),
    ("not-utf8", JSON, b'{"task": "softmax", "source": "\xff\xfe"}', "not valid JSON"),
    # JSON's own rules allow UTF-16: it is read, and the kernel it holds is judged on its merits
    ("utf16", JSON, '{"task": "softmax", "source": "x"}'.encode("utf-16"), "custom_kernel"),
    ("array-not-object", JSON, b"[1, 2]", "must be a JSON object"),
    ("source-not-string", JSON, b'{"task": "softmax", "source": {"a": 1}}', "'source' must be a string"),
    ("task-not-string", JSON, b'{"task": ["softmax"], "source": "x"}', "'task' must be a string"),
    ("task-a-number", JSON, b'{"task": 5, "source": "x"}', "'task' must be a string"),
    ("task-missing", JSON, b'{"source": "x"}', "'task' is required"),
    ("huge-integer", JSON, b'{"task": "softmax", "source": "x", "mode": ' + b"9" * 50_000 + b"}", "not valid JSON"),
    ("multipart-no-boundary", "multipart/form-data", b"garbage", "names no boundary"),
    ("multipart-bad-boundary", "multipart/form-data; boundary=\x00", b"garbage", "could not be read"),
    ("multipart-truncated", MULTIPART, f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"task\"\r\n".encode(),
     "cut short"),
    ("multipart-without-its-end", MULTIPART, multipart(field("task", b"softmax"), field("source", b"x")).rsplit(b"--", 1)[0],
     "cut short"),
    ("multipart-too-many-fields", MULTIPART, multipart(*[field(f"f{i}", b"x") for i in range(1100)]), "could not be read"),
    ("multipart-non-utf8-file", MULTIPART, multipart(
        field("task", b"softmax"),
        b'Content-Disposition: form-data; name="file"; filename="k.py"\r\nContent-Type: text/x-python\r\n\r\n'
        b"def custom_kernel(x):\n    return '\xe9'\n"), "not valid UTF-8"),
    ("multipart-non-utf8-source-field", MULTIPART, multipart(
        field("task", b"softmax"), field("source", b"# caf\xe9\ndef custom_kernel(x):\n    return x\n")),
     "'source' is not valid UTF-8"),
    ("form-non-utf8-source-field", "application/x-www-form-urlencoded",
     b"task=softmax&source=%23+caf%E9%0Adef+custom_kernel%28x%29%3A%0A++++return+x%0A", "'source' is not valid UTF-8"),
    ("multipart-non-utf8-filename", MULTIPART, multipart(
        field("task", b"softmax"),
        b'Content-Disposition: form-data; name="file"; filename="k\xff.py"\r\n\r\nx = 1\n'), "Send the kernel"),
    ("multipart-nul-in-task", MULTIPART, multipart(field("task", b"soft\x00max"), field("source", SOURCE.encode())),
     "Unknown task"),
    ("form-too-many-fields", "application/x-www-form-urlencoded", b"&".join(b"f%d=x" % i for i in range(1100)),
     "could not be read"),
]


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


@pytest.mark.parametrize("content_type, body, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_body_gets_a_400_with_a_message(client, task, key, content_type, body, words):
    client.raise_request_exception = False
    resp = client.generic("POST", "/api/submissions", body, content_type=content_type,
                          HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code in (400, 404, 413), resp.content[:300]
    assert (resp.status_code == 413) == (words == "too large"), resp.status_code
    assert resp["Content-Type"] == "application/json"
    message = resp.json()["error"]
    assert words in message, message
    assert not Submission.objects.exists()


def test_a_well_formed_body_still_passes(client, task, key, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        resp = client.post("/api/submissions", {"task": "softmax", "source": SOURCE, "mode": "test"},
                           content_type=JSON, HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code == 201, resp.content
    assert Submission.objects.count() == 1


@pytest.mark.parametrize("content_type", ["text/plain", "", "application/xml; charset=utf-8"])
def test_a_body_of_another_type_is_a_415_that_names_the_types_taken(client, task, key, content_type):
    body = json.dumps({"task": "softmax", "mode": "test", "source": SOURCE}).encode()
    resp = client.generic("POST", "/api/submissions", body, content_type=content_type,
                          HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code == 415 and resp.json()["code"] == "unsupported_media_type"
    message = resp.json()["error"]
    assert "application/json or multipart/form-data" in message
    assert (content_type.split(";")[0] or "no Content-Type") in message, message
    assert not Submission.objects.exists()


def test_a_replacement_character_the_client_sent_is_its_own(client, task, key, django_capture_on_commit_callbacks):
    source = SOURCE + "# \ufffd\n"
    with django_capture_on_commit_callbacks(execute=False):
        resp = client.generic("POST", "/api/submissions",
                              multipart(field("task", b"softmax"), field("mode", b"test"), field("source", source.encode())),
                              content_type=MULTIPART, HTTP_AUTHORIZATION=f"Token {key}")
    assert resp.status_code == 201, resp.content
    assert Submission.objects.get().source == source
