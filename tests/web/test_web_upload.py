"""The upload form: each bad upload gets a clear form error and queues nothing."""
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from leaderboard.models import Submission

GOOD = b"import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, dim=-1)\n"


@pytest.fixture
def logged_in(client, owner):
    client.force_login(owner)
    return client


def post(client, task, *, file=None, code="", mode="test"):
    data = {"task": task.name, "mode": mode, "code": code}
    if file is not None:
        data["file"] = file
    return client.post(reverse("upload"), data)


def test_it_creates_a_submission_and_redirects_to_it(logged_in, task, owner, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        r = post(logged_in, task, file=SimpleUploadedFile("softmax.py", GOOD), mode="ranked")
    sub = Submission.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("submission_detail", args=[sub.pk])
    assert (sub.user, sub.task, sub.mode, sub.filename, sub.status) == (owner, task, "ranked", "softmax.py", "queued")
    assert sub.source == GOOD.decode()


def test_it_accepts_pasted_code(logged_in, task, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        r = post(logged_in, task, code=GOOD.decode())
    assert r.status_code == 302
    assert Submission.objects.get().filename == "submission.py"


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("kernel.txt", GOOD, "must end in .py"),
        ("kernel.py", b"# " + b"x" * (256 * 1024) + b"\n" + GOOD, "the limit is 262,144 bytes"),
        ("kernel.py", "def custom_kernel(x):\n    return 'é'\n".encode("latin-1"), "not UTF-8"),
        ("kernel.py", b"def custom_kernel(x:\n    pass\n", "not valid Python: &#x27;(&#x27; was never closed (line 1)"),
        ("kernel.py", b"import torch\n\ndef my_kernel(x):\n    return x\n", "custom_kernel"),
    ],
    ids=["not-py", "too-big", "not-utf8", "syntax", "no-custom-kernel"],
)
def test_it_rejects_a_bad_file_with_a_form_error(logged_in, task, name, content, message):
    r = post(logged_in, task, file=SimpleUploadedFile(name, content))
    assert r.status_code == 400
    assert message in r.content.decode()
    assert 'class="errorlist' in r.content.decode()
    assert not Submission.objects.exists()


def test_it_rejects_pasted_code_with_a_syntax_error(logged_in, task):
    r = post(logged_in, task, code="def custom_kernel(:\n")
    assert "The code is not valid Python" in r.content.decode()  # pasted: no file was sent
    assert not Submission.objects.exists()


def test_pasted_code_is_called_code_and_its_errors_show_no_backticks(logged_in, task):
    r = post(logged_in, task, code="import torch\n\ndef my_kernel(x):\n    return x\n")
    html = r.content.decode()
    errors = re.search(r'<ul class="errorlist[^"]*"[^>]*>(.*?)</ul>', html, re.S).group(1)
    assert errors == ("<li>The code does not define a top-level custom_kernel (or, for a KernelBench-style task, "
                      "a class ModelNew).</li>")
    assert "`" not in html.split('<form')[1].split("</form>")[0].replace(r.wsgi_request.POST["code"], "")
    wrong_task = post(logged_in, task, code="def custom_kernel(x, w, b):\n    return x\n").content.decode()
    assert "this code&#x27;s takes (x, w, b)" in wrong_task and "file" not in wrong_task.split("errorlist")[1][:300]


def test_one_format_for_the_size_limit_on_the_form_and_in_the_api(logged_in, task, owner):
    """The form and the API write the sizes alike ("300,000 bytes"), never 300000 in one and 300,000 in the other."""
    from leaderboard import services

    big = b"x = 1\n" * 50_000  # 300,000 bytes
    form = post(logged_in, task, file=SimpleUploadedFile("k.py", big)).content.decode()
    pasted = post(logged_in, task, code=big.decode()).content.decode()
    key = services.api_token_create(user=owner)[1]
    api = logged_in.post("/api/submissions", {"task": task.name, "file": SimpleUploadedFile("k.py", big)},
                         HTTP_AUTHORIZATION=f"Token {key}").json()["error"]
    api_json = logged_in.post("/api/submissions", {"task": task.name, "source": big.decode()},
                              content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}").json()["error"]
    said = "is 300,000 bytes; the limit is 262,144 bytes (256 KiB)."
    assert f"The file {said}" in form and f"The code {said}" in pasted
    assert api == api_json == f"The file {said}"


def test_it_asks_for_a_file_or_code(logged_in, task):
    r = post(logged_in, task)
    assert "Choose a .py file or paste your code." in r.content.decode()


def test_it_refuses_both_a_file_and_code(logged_in, task):
    r = post(logged_in, task, file=SimpleUploadedFile("a.py", GOOD), code=GOOD.decode())
    assert "not both" in r.content.decode()
    assert not Submission.objects.exists()


def test_it_rejects_an_unknown_task(logged_in, task):
    r = logged_in.post(reverse("upload"), {"task": "nope", "mode": "test", "code": GOOD.decode()})
    assert "Select a valid choice" in r.content.decode()


@override_settings(UPLOAD_RATE_LIMIT_PER_HOUR=2)
def test_it_shows_the_rate_limit(logged_in, task, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        for _ in range(2):
            assert post(logged_in, task, code=GOOD.decode()).status_code == 302
        r = post(logged_in, task, code=GOOD.decode())
    assert r.status_code == 429
    assert "Upload limit reached" in r.content.decode()
    assert Submission.objects.count() == 2


def test_it_preselects_the_task_from_the_query(logged_in, task):
    r = logged_in.get(reverse("upload") + "?task=softmax")
    assert r.status_code == 200
    assert re.search(r'<option value="softmax" selected>Softmax \(fp32\) \(softmax\)</option>', r.content.decode())


def test_the_form_says_which_device_evaluates_and_that_a_cpu_is_a_tryout(logged_in, settings, task):
    html = logged_in.get(reverse("upload")).content.decode()
    assert re.search(r'<p id="runs-on">This site evaluates on <strong>CPU</strong>\. That is a try-out', html)
    settings.WORKER_DEVICE, settings.WORKER_GPU_NAME = "cuda", "NVIDIA H200"
    html = logged_in.get(reverse("upload")).content.decode()
    assert "<strong>NVIDIA H200</strong>." in html and "try-out" not in html


def test_the_task_list_starts_on_a_placeholder_and_an_upload_without_a_task_is_refused(client, task, owner):
    client.force_login(owner)
    html = client.get(reverse("upload")).content.decode()
    select = html[html.index('<select name="task"'):]
    select = select[:select.index("</select>")]
    assert '<option value="" selected>Choose a task</option>' in select
    r = client.post(reverse("upload"), {"mode": "test", "code": GOOD.decode()})
    assert r.status_code == 400 and "This field is required" in r.content.decode()
    assert not Submission.objects.exists()


def test_a_file_for_another_task_is_refused_with_the_parameters_it_needs(logged_in, task):
    """A softmax kernel sent to layernorm would be queued only to crash at its first call: the form
    reads custom_kernel's parameters (ast, never run) and names what the task passes."""
    from evaluator.tasks import get_task
    from leaderboard import services

    layernorm, _ = services.task_sync(spec=get_task("layernorm"))
    r = post(logged_in, layernorm, file=SimpleUploadedFile("softmax.py", GOOD))
    html = r.content.decode()
    assert r.status_code == 400
    assert "custom_kernel takes (x, weight, bias) for layernorm; this file&#x27;s takes (x)" in html
    assert not Submission.objects.exists()
    r = post(logged_in, task, code="def custom_kernel(x, weight, bias):\n    return x\n")
    assert "custom_kernel takes (x) for softmax; this code&#x27;s takes (x, weight, bias)" in r.content.decode()
    assert not Submission.objects.exists()


@override_settings(UPLOAD_RATE_LIMIT_PER_HOUR=3, EVAL_MAX_ACTIVE_PER_USER=10)
def test_the_form_and_the_api_say_how_many_uploads_are_left_this_hour(logged_in, task, owner,
                                                                      django_capture_on_commit_callbacks):
    def left_on_form():
        return re.search(r'<p id="uploads-left"[^>]*>(.*?)</p>', logged_in.get(reverse("upload")).content.decode(),
                         re.S).group(1)

    assert left_on_form().startswith("<strong>3</strong> of 3 uploads left this hour")
    from leaderboard import services

    key = services.api_token_create(user=owner)[1]
    with django_capture_on_commit_callbacks(execute=False):
        assert post(logged_in, task, code=GOOD.decode()).status_code == 302
        assert left_on_form().startswith("<strong>2</strong> of 3 uploads left")
        api = logged_in.post("/api/submissions", {"task": task.name, "mode": "test", "source": GOOD.decode()},
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}")
        assert api.status_code == 201
        assert (api["X-Uploads-Left"], api["X-Uploads-Limit"]) == ("1", "3")
        assert post(logged_in, task, code=GOOD.decode(), mode="profile").status_code == 302  # every mode counts
        assert left_on_form().startswith("No uploads left this hour: the limit is 3")
        refused = logged_in.post("/api/submissions", {"task": task.name, "source": GOOD.decode()},
                                 content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}")
    assert refused.status_code == 429 and refused["X-Uploads-Left"] == "0"
