"""Tasks as the pages show them: grouped in tracks on the home page (built-in first, then each
added track), the task page's description, signature, public and hidden shapes, and a retired
task (out of the upload form and the API's uploads, its page and board kept, marked retired).

The rows are stored from describe entries written here in the evaluator's JSON contract: these
tests are of the pages, the box's part is tests/site/test_site_task_catalog.py's."""
from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse

from leaderboard import services
from leaderboard.models import Submission, Task
from web_helpers import make_done

pytestmark = pytest.mark.django_db


def entry(name: str, *, track="kernelbench-level1", has_params=False, hidden=None, **extra) -> dict:
    """One task of `python -m evaluator describe`'s answer, as the contract has it."""
    return {
        "name": name, "format": "kernelbench", "source": f"/tasks/level1/{name}.py", "track": track,
        "title": name.replace("_", " "), "description": f"The {name} problem: what Model computes.",
        "signature": "class ModelNew(nn.Module): ..." if has_params else "def custom_kernel(x, mask): ...",
        "reference_source": "class Model(nn.Module): ...", "input_names": ["x", "mask"], "output_dtype": "float32",
        "test_shapes": [{"batch_size": 2, "dim": 8192}], "hidden": hidden,
        "bench_shapes": {"cpu": [{"batch_size": 16, "dim": 65536}], "cuda": [{"batch_size": 512, "dim": 65536}]},
        "work": {"cpu": [{"flops": 2e6, "bytes": 9e6}], "cuda": [{"flops": 6.7e7, "bytes": 2.9e8}]},
        "tolerance": {"atol": 1e-4, "rtol": 1e-4}, "bound": "memory", "max_speedup_vs_compile": 2.0,
        "has_params": has_params, **extra,
    }


def add(name: str, **kw) -> Task:
    task, _ = services.task_store(entry=entry(name, **kw), definition={f"level1/{name}.py": "# the file\n"})
    return task


def test_the_home_page_groups_tasks_in_tracks_builtin_first(client, task):
    add("10_masked_double")
    add("2_linear_relu", has_params=True)
    add("1_linear_tanh", track="kernelbench-level2")
    page = client.get(reverse("home")).content.decode()
    order = [page.index(s) for s in ('data-track="builtin"', "KernelBench-style, level 1", 'data-track="kernelbench-level1"',
                                     "KernelBench-style, level 2", 'data-track="kernelbench-level2"')]
    assert order == sorted(order)
    level1 = page[order[2]:order[3]]
    # by problem number within a track: 2 before 10, though "10_" sorts before "2_" as text
    assert level1.index("/tasks/2_linear_relu/") < level1.index("/tasks/10_masked_double/")
    assert "/tasks/softmax/" in page[order[0]:order[1]]


def test_the_task_page_shows_what_to_implement_and_the_hidden_shapes(client):
    add("2_linear_relu", has_params=True, hidden={"count": 3, "families": ["large_magnitude", "near_constant"]})
    page = client.get(reverse("task_detail", args=["2_linear_relu"])).content.decode()
    assert "The 2_linear_relu problem: what Model computes." in page
    assert 'id="signature">class ModelNew(nn.Module): ...' in page
    assert "state_dict" in page  # what a problem with parameters asks of a ModelNew
    assert "batch_size=2" in page or "batch_size" in page
    assert ("plus 3 hidden test shapes drawn per evaluation, adversarial families: large_magnitude, "
            "near_constant.") in page
    assert "KernelBench-style, level 1" in page
    assert 'id="calibration"' in page  # the ruler's state on the device stays
    add("1_masked_double")
    plain = client.get(reverse("task_detail", args=["1_masked_double"])).content.decode()
    assert "hidden test shape" not in plain and "custom_kernel(*inputs)" in plain


def test_a_retired_task_leaves_the_upload_form_and_keeps_its_page_and_board(client, owner, task):
    added = add("1_masked_double")
    make_done(added, owner, speedup=1.3, device_type="cpu")
    client.force_login(owner)
    assert 'value="1_masked_double"' in client.get(reverse("upload")).content.decode()

    call_command("retire_task", "1_masked_double")
    added.refresh_from_db()
    assert added.retired
    form = client.get(reverse("upload")).content.decode()
    assert 'value="1_masked_double"' not in form and 'value="softmax"' in form
    answer = client.post(reverse("upload"), {"task": "1_masked_double", "mode": "test",
                                             "code": "def custom_kernel(x, mask):\n    return x\n"})
    assert answer.status_code == 400 and Submission.objects.filter(mode="test").count() == 0
    page = client.get(reverse("task_detail", args=["1_masked_double"]) + "?device=cpu").content.decode()
    assert 'id="retired"' in page and "takes no new uploads" in page
    assert "1.30" in page and "Upload a kernel for this task" not in page  # the board stays
    assert "(retired)" in client.get(reverse("home")).content.decode()

    call_command("retire_task", "1_masked_double", "--undo")
    assert 'value="1_masked_double"' in client.get(reverse("upload")).content.decode()


def test_the_api_refuses_an_upload_to_a_retired_task(client, owner):
    from leaderboard.services.tokens import api_token_create

    add("1_masked_double")
    services.task_retire(task=Task.objects.get(name="1_masked_double"))
    _, key = api_token_create(user=owner, name="t")
    answer = client.post("/api/submissions", {"task": "1_masked_double", "mode": "test",
                                              "source": "def custom_kernel(x, mask):\n    return x\n"},
                         content_type="application/json", HTTP_AUTHORIZATION=f"Token {key}")
    assert answer.status_code == 400 and answer.json()["code"] == "retired_task"
    listed = {t["name"]: t for t in client.get("/api/tasks").json()["tasks"]}
    assert listed["1_masked_double"]["retired"] is True
    assert listed["1_masked_double"]["track"] == "kernelbench-level1"


def test_the_console_retires_and_brings_back_a_task(client, staff, owner):
    add("1_masked_double")
    url = reverse("console_task_retire", args=["1_masked_double"])
    client.force_login(owner)
    assert client.post(url).status_code == 403
    client.force_login(staff)
    assert client.post(url).status_code == 302
    assert Task.objects.get(name="1_masked_double").retired
    page = client.get(reverse("console_tasks")).content.decode()
    assert "Take uploads again" in page and "KernelBench-style, level 1" in page
    client.post(url, {"undo": "1"})
    assert not Task.objects.get(name="1_masked_double").retired
