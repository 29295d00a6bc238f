"""Adding tasks for real: `manage.py import_kernelbench`, `add_task`, `load_tasks` and the audit
console's task form, each through `python -m evaluator describe` and `triage` in the box, over
tests/data/site_tasks (a small checkout laid out like KernelBench's; its README says what each
problem should come to). One box of each kind serves a whole level."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from leaderboard import routing, services
from leaderboard.models import Task, TaskAddition
from site_helpers import queued_messages

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

DATA = Path(__file__).resolve().parents[1] / "data" / "site_tasks"


@pytest.fixture
def task_commands(require_sandbox, require_task_commands, monkeypatch):
    """A box, and the evaluator's describe and triage to run in it; quick CPU evaluations."""
    monkeypatch.setenv("EVALUATOR_QUICK", "1")


def lines_of(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def test_import_kernelbench_adds_or_refuses_each_problem_with_its_reason(task_commands, capsys):
    call_command("import_kernelbench", str(DATA))
    lines = lines_of(capsys)
    assert lines[:2] == ["added 1_masked_double (kernelbench-level1)", "added 2_linear_relu (kernelbench-level1)"]
    assert lines[2].startswith("refused level1/3_Broken.py: ") and "SyntaxError" in lines[2]
    assert lines[3].startswith("refused level1/4_Ones.py: triage on cpu: ") and "constant" in lines[3]
    assert lines[4:] == ["added 1_linear_tanh_scale (kernelbench-level2)"]
    assert set(Task.objects.values_list("name", flat=True)) == {"1_masked_double", "2_linear_relu",
                                                               "1_linear_tanh_scale"}
    masked = Task.objects.get(name="1_masked_double")
    assert masked.track == "kernelbench-level1" and masked.format == "kernelbench" and not masked.has_params
    # its definition is its own file, as text, in its level's directory; nothing else of the level
    assert masked.definition == {"level1/1_Masked-Double.py": (DATA / "level1" / "1_Masked-Double.py").read_text()}
    assert masked.input_names == ["x", "mask"] and masked.origin == "level1/1_Masked-Double.py"
    assert "boolean mask" in masked.description
    # floors from the work describe stated, against the site's ceilings
    (cpu,) = masked.floors["cpu"]
    (work,) = masked.work["cpu"]
    assert cpu["shape"] == masked.bench_shapes["cpu"][0]
    assert cpu["floor_ms"] == pytest.approx(max(work["bytes"] / 1e12, work["flops"] / 1e13) * 1e3)
    assert Task.objects.get(name="2_linear_relu").has_params
    assert "ModelNew" in Task.objects.get(name="2_linear_relu").signature
    assert Task.objects.get(name="1_linear_tanh_scale").track == "kernelbench-level2"

    # again, one level, by number and by name: nothing changes, each says why
    call_command("import_kernelbench", str(DATA), "--level", "1", "--only", "1,2_linear_relu")
    again = lines_of(capsys)
    assert again == [
        "refused level1/1_Masked-Double.py: a task named 1_masked_double is on the site already "
        "(kernelbench-level1); nothing changed",
        "refused level1/2_Linear_ReLU.py: a task named 2_linear_relu is on the site already "
        "(kernelbench-level1); nothing changed",
    ]
    assert Task.objects.count() == 3


def test_add_task_puts_a_file_on_the_site_and_its_evaluations_find_it(task_commands, capsys):
    from leaderboard.tasks import sandbox_evaluate

    call_command("add_task", str(DATA / "level1" / "1_Masked-Double.py"))
    assert lines_of(capsys) == ["added 1_masked_double (kernelbench-level1)"]
    call_command("add_task", str(DATA / "level1" / "3_Broken.py"), "--track", "added")
    (refused,) = lines_of(capsys)
    assert refused.startswith("refused 3_Broken.py: ") and "SyntaxError" in refused
    task = Task.objects.get(name="1_masked_double")
    # the box of an evaluation gets the stored definition (EVALUATOR_TASKS_PATH), and judges by it:
    # a kernel that triples instead of doubling is a mismatch against this file's Model
    wrong = ("import torch\n\n\ndef custom_kernel(x, mask):\n"
             "    return torch.where(mask, 3 * x, torch.zeros_like(x))\n")
    result = sandbox_evaluate(source=wrong.encode(), task=task.name, mode="test", device="cpu",
                              definition=task.definition)
    assert result.report["verdict"] == "rejected", result.report["reasons"]
    assert result.report["reason_codes"] == ["mismatch"], result.report["reasons"]


def test_load_tasks_reads_the_builtin_tasks_in_the_box(task_commands, capsys):
    from evaluator.tasks import TASKS

    call_command("load_tasks")
    builtin = set(Task.objects.filter(track=Task.BUILTIN).values_list("name", flat=True))
    assert builtin == set(TASKS)
    softmax = Task.objects.get(name="softmax")
    assert softmax.definition == {} and softmax.format == "folder"
    assert softmax.origin == "evaluator/tasks/builtin/softmax"
    assert softmax.work["cuda"] and len(softmax.work["cuda"]) == len(softmax.bench_shapes["cuda"])
    assert "tasks loaded" in capsys.readouterr().out


def test_the_staff_form_has_the_worker_add_one_file(task_commands, client, staff, users, eval_queue, redis_client,
                                                    django_capture_on_commit_callbacks):
    path = DATA / "level1" / "2_Linear_ReLU.py"
    client.force_login(users["ann"])
    with path.open("rb") as f:
        assert client.post(reverse("console_tasks"), {"file": f, "track": "added"}).status_code == 403
    client.force_login(staff)
    with path.open("rb") as f, django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("console_tasks"), {"file": f, "track": "added"})
    assert answer.status_code == 302
    addition = TaskAddition.objects.get()
    assert addition.status == "queued" and addition.filename == "2_Linear_ReLU.py"
    # the worker's queue gets it by name: the triage runs on the site's device, between evaluations
    (message,) = queued_messages(redis_client, eval_queue)
    assert message["headers"]["task"] == routing.ADD_TASK_FILE
    assert not Task.objects.filter(name="2_linear_relu").exists()  # the web process added nothing

    services.task_addition_run(addition_id=addition.pk)  # what the worker runs
    addition.refresh_from_db()
    assert addition.status == "done" and addition.lines == ["added 2_linear_relu (added)"]
    task = Task.objects.get(name="2_linear_relu")
    assert task.added_by == staff and task.definition == {"added/2_Linear_ReLU.py": path.read_text()}
    page = client.get(reverse("console_tasks")).content.decode()
    assert "added 2_linear_relu (added)" in page

    # a file that does not load: refused, with describe's reason, on the same page
    with (DATA / "level1" / "3_Broken.py").open("rb") as f:
        client.post(reverse("console_tasks"), {"file": f, "track": "added"})
    broken = TaskAddition.objects.exclude(pk=addition.pk).get()
    services.task_addition_run(addition_id=broken.pk)
    broken.refresh_from_db()
    (line,) = broken.lines
    assert line.startswith("refused 3_Broken.py: ") and "SyntaxError" in line
    assert "refused 3_Broken.py: " in client.get(reverse("console_tasks")).content.decode()
    assert services.task_addition_run(addition_id=broken.pk) is None  # claimed once only
