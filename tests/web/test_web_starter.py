"""A starter kernel per task, downloaded from the task page: examples/<task>.py as an attachment,
the same bytes, linked from the page; a 404 for a task that does not exist."""
from __future__ import annotations

from pathlib import Path

from django.urls import reverse

from evaluator import check_signature, validate_source

ROOT = Path(__file__).resolve().parents[2]


def test_the_task_page_links_its_starter_and_it_downloads_as_a_file(client, task):
    html = client.get(reverse("task_detail", args=[task.name])).content.decode()
    url = reverse("task_starter", args=[task.name])
    assert url == "/tasks/softmax/starter.py"
    assert f'<a href="{url}" download id="starter">Download a starter kernel</a>' in html
    r = client.get(url)
    assert r.status_code == 200
    assert r["Content-Disposition"] == 'attachment; filename="softmax.py"'
    assert r["Content-Type"].startswith("text/x-python")
    assert r.content == (ROOT / "examples" / "softmax.py").read_bytes()
    source = r.content.decode()
    # a kernel the upload accepts for this task: custom_kernel, with the task's inputs
    assert validate_source(source) == [] and check_signature(source, task.input_names, task.name) == []
    assert "@triton.jit" in source


def test_an_unknown_task_has_no_starter(client, task):
    assert client.get("/tasks/nope/starter.py").status_code == 404
    # a task that exists only as a file in examples/, not on this site, is no task either
    assert client.get("/tasks/layernorm/starter.py").status_code == 404
