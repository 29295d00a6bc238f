"""Malformed request bodies against the upload form: each gets a 400 and queues nothing. Bodies
the form can read get the form back with the reason; bodies nothing can read get Django's 400. A body
too large to read is a 413 (tests/web/test_web_errors.py)."""
import pytest
from django.urls import reverse

from leaderboard.models import Submission

BOUNDARY = "----lbboundary"
MULTIPART = f"multipart/form-data; boundary={BOUNDARY}"
URLENCODED = "application/x-www-form-urlencoded"
GOOD = b"import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n"


def multipart(*parts: bytes) -> bytes:
    return b"".join(f"--{BOUNDARY}\r\n".encode() + p + b"\r\n" for p in parts) + f"--{BOUNDARY}--\r\n".encode()


def field(name: str, value: bytes) -> bytes:
    return f'Content-Disposition: form-data; name="{name}"\r\n\r\n'.encode() + value


def upload(name: bytes, content: bytes) -> bytes:
    return (b'Content-Disposition: form-data; name="file"; filename="' + name + b'"\r\n'
            b"Content-Type: text/x-python\r\n\r\n" + content)


TASK = (field("task", b"softmax"), field("mode", b"test"))

# (id, content type, body, words the page must contain, or None for Django's own 400)
CASES = [
    ("nul-in-code", URLENCODED, b"task=softmax&mode=test&code=def+custom_kernel(x)%3A%0A++return+x%00", "Null characters"),
    ("surrogate-bytes-in-code", URLENCODED, b"task=softmax&mode=test&code=%ED%A0%80", "custom_kernel"),
    ("non-utf8-code", URLENCODED, b"task=softmax&mode=test&code=%FF%FE", "custom_kernel"),
    ("deeply-nested-code", URLENCODED, b"task=softmax&mode=test&code=x%3D" + b"%5B" * 100_000, "not valid Python"),
    ("non-utf8-file", MULTIPART, multipart(*TASK, upload(b"k.py", b"def custom_kernel(x):\n    return '\xe9'\n")),
     "not UTF-8"),
    ("non-utf8-filename", MULTIPART, multipart(*TASK, upload(b"k\xff.py", GOOD + b"\xff")), None),
    ("nul-in-task", MULTIPART, multipart(field("task", b"soft\x00max"), field("mode", b"test"), field("code", GOOD)),
     "Null characters"),
    ("huge-file", MULTIPART, multipart(*TASK, upload(b"k.py", b"#" * (3 * 1024 * 1024))), "the limit is"),
    ("multipart-no-boundary", "multipart/form-data", b"garbage", None),
    ("multipart-truncated", MULTIPART, f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"task\"\r\n".encode(),
     None),
    ("too-many-fields", URLENCODED, b"&".join(b"f%d=x" % i for i in range(1100)), None),
]


@pytest.mark.parametrize("content_type, body, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_body_gets_a_400(client, owner, task, content_type, body, words):
    client.force_login(owner)
    client.raise_request_exception = False
    resp = client.generic("POST", reverse("upload"), body, content_type=content_type)
    assert resp.status_code == 400, resp.content[:500]
    if words is not None:
        assert words in resp.content.decode()
    assert not Submission.objects.exists()
