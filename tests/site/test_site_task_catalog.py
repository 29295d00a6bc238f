"""Adding tasks for real: `manage.py import_kernelbench`, `add_task`, `load_tasks` and the audit
console's task form, each through `python -m evaluator describe` and `triage` in the box, over
tests/data/kernelbench (problems laid out like a KernelBench checkout; EXPECTED.json says what
each should come to). One box of each kind serves a whole level."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from leaderboard import routing, services
from leaderboard.models import Task, TaskAddition
from site_helpers import queued_messages

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

CORPUS = Path(__file__).resolve().parents[1] / "data" / "kernelbench"
EXPECTED = json.loads((CORPUS / "EXPECTED.json").read_text())
# what a refusal's line says for each kind of refusal EXPECTED.json names
WHY_WORDS = {
    "broken": ("importing it failed",),
    "trivial_constant": ("constant",),
    "trivial_insensitive": ("barely changes",),
    "empty": ("empty",),
    "too_fast": ("too fast to time",),
    "too_large": ("more memory than the device has",),
    "network": ("URLError", "network", "name resolution"),
}


@pytest.fixture
def task_commands(require_sandbox, require_task_commands, monkeypatch):
    """A box, and the evaluator's describe and triage to run in it; quick CPU evaluations."""
    monkeypatch.setenv("EVALUATOR_QUICK", "1")


def lines_of(capsys) -> list[str]:
    return capsys.readouterr().out.strip().splitlines()


def test_import_kernelbench_adds_or_refuses_each_problem_with_its_reason(task_commands, capsys):
    call_command("import_kernelbench", str(CORPUS))
    lines = lines_of(capsys)
    assert len(lines) == len(EXPECTED) >= 20
    by_file = {}
    for line in lines:
        if line.startswith("added "):
            name, track = line[len("added "):].split(" ")
            by_file[next(f for f, e in EXPECTED.items() if e["name"] == name)] = ("added", track.strip("()"), "")
        else:
            assert line.startswith("refused "), line
            source, why = line[len("refused "):].split(": ", 1)
            by_file[source] = ("refused", None, why)
    assert set(by_file) == set(EXPECTED)
    for path, expected in EXPECTED.items():
        outcome, track, why = by_file[path]
        assert outcome == expected["outcome"], (path, why)
        if outcome == "added":
            assert track == f"kernelbench-{path.split('/')[0]}"
            task = Task.objects.get(name=expected["name"])
            assert task.has_params == expected["params"] and task.format == "kernelbench", path
            # its definition is its own file, as text, in its level's directory
            assert task.definition == {path: (CORPUS / path).read_text()} and task.origin == path
        else:
            assert any(w in why for w in WHY_WORDS[expected["why"]]), (path, why)
            assert not Task.objects.filter(name=expected["name"]).exists()
    # a level's problems by number
    level1 = [line.split(" ")[1] for line in lines if "level1" in line]
    assert level1.index("2_scaled_tanh_gelu") < level1.index("10_rmsnorm_noaffine")

    masked = Task.objects.get(name="6_masked_scale")
    assert masked.input_names == ["x", "mask"] and "Masked scale" in masked.description
    # floors from the work describe stated, against the site's ceilings
    (cpu,) = masked.floors["cpu"]
    (work,) = masked.work["cpu"]
    assert cpu["shape"] == masked.bench_shapes["cpu"][0]
    assert cpu["floor_ms"] == pytest.approx(max(work["bytes"] / 1e12, work["flops"] / 1e13) * 1e3)
    assert "ModelNew" in Task.objects.get(name="11_linear_relu").signature

    # again, one level, by number and by name: nothing changes, each says why
    call_command("import_kernelbench", str(CORPUS), "--level", "1", "--only", "6,11_linear_relu")
    assert lines_of(capsys) == [
        f"refused level1/{f}: a task named {n} is on the site already (kernelbench-level1); nothing changed"
        for f, n in (("6_Masked-Scale.py", "6_masked_scale"), ("11_Linear_ReLU.py", "11_linear_relu"))]


def test_add_task_puts_a_file_on_the_site_and_its_evaluations_find_it(task_commands, capsys):
    from leaderboard.tasks import sandbox_evaluate

    call_command("add_task", str(CORPUS / "level1" / "6_Masked-Scale.py"))
    assert lines_of(capsys) == ["added 6_masked_scale (kernelbench-level1)"]
    call_command("add_task", str(CORPUS / "level1" / "80_broken_syntax.py"), "--track", "added")
    (refused,) = lines_of(capsys)
    assert refused.startswith("refused 80_broken_syntax.py: ") and "SyntaxError" in refused
    task = Task.objects.get(name="6_masked_scale")
    # the box of an evaluation gets the stored definition (EVALUATOR_TASKS_PATH) and judges by it:
    # a kernel that inverts the mask is a mismatch against this file's Model
    wrong = (CORPUS / "solutions" / "6_masked_scale" / "wrong_inverted_mask.py").read_bytes()
    result = sandbox_evaluate(source=wrong, task=task.name, mode="test", device="cpu", definition=task.definition)
    assert result.report.task == "6_masked_scale"
    assert result.report.reason_codes == ("mismatch",), result.report.reasons


def test_load_tasks_reads_the_builtin_tasks_in_the_box(task_commands, capsys):
    from evaluator.tasks import TASKS

    call_command("load_tasks")
    builtin = set(Task.objects.filter(track=Task.BUILTIN).values_list("name", flat=True))
    assert builtin == set(TASKS)
    softmax = Task.objects.get(name="softmax")
    assert softmax.definition == {} and softmax.format == "folder"
    assert softmax.origin == "evaluator/tasks/builtin/softmax"
    assert softmax.work["cuda"] and len(softmax.work["cuda"]) == len(softmax.bench_shapes["cuda"])
    assert softmax.hidden and softmax.hidden["count"] > 0
    assert "tasks loaded" in capsys.readouterr().out


def test_the_staff_form_has_the_worker_add_one_file(task_commands, client, staff, users, eval_queue, redis_client,
                                                    django_capture_on_commit_callbacks):
    path = CORPUS / "level1" / "11_Linear_ReLU.py"
    client.force_login(users["ann"])
    with path.open("rb") as f:
        assert client.post(reverse("console_tasks"), {"file": f, "track": "added"}).status_code == 403
    client.force_login(staff)
    with path.open("rb") as f, django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("console_tasks"), {"file": f, "track": "added"})
    assert answer.status_code == 302
    addition = TaskAddition.objects.get()
    assert addition.status == "queued" and addition.filename == "11_Linear_ReLU.py"
    # the worker's queue gets it by name: the triage runs on the site's device, between evaluations
    (message,) = queued_messages(redis_client, eval_queue)
    assert message["headers"]["task"] == routing.ADD_TASK_FILE
    assert not Task.objects.filter(name="11_linear_relu").exists()  # the web process added nothing

    services.task_addition_run(addition_id=addition.pk)  # what the worker runs
    addition.refresh_from_db()
    assert addition.status == "done" and addition.lines == ["added 11_linear_relu (added)"]
    task = Task.objects.get(name="11_linear_relu")
    assert task.added_by == staff and task.has_params
    assert task.definition == {"added/11_Linear_ReLU.py": path.read_text()}
    assert "added 11_linear_relu (added)" in client.get(reverse("console_tasks")).content.decode()

    # a problem the triage refuses: refused, with its reason, on the same page
    with (CORPUS / "level1" / "82_trivial_constant.py").open("rb") as f:
        client.post(reverse("console_tasks"), {"file": f, "track": "added"})
    refused = TaskAddition.objects.exclude(pk=addition.pk).get()
    services.task_addition_run(addition_id=refused.pk)
    refused.refresh_from_db()
    assert refused.lines == ["refused 82_trivial_constant.py: triage on cpu: its output is constant "
                             "(1 everywhere, for two input draws)"]
    assert "refused 82_trivial_constant.py: triage on cpu" in client.get(reverse("console_tasks")).content.decode()
    assert services.task_addition_run(addition_id=refused.pk) is None  # claimed once only


def test_calibrate_measures_an_added_task_from_its_stored_files(task_commands, capsys):
    """`manage.py calibrate --task NAME` of a task added from a file: the evaluator reads the
    stored definition (laid out under EVALUATOR_TASKS_PATH for the command's duration), and the
    ruler's readings land on the task's row for this device type."""
    import os

    call_command("add_task", str(CORPUS / "level1" / "6_Masked-Scale.py"))
    capsys.readouterr()
    before = os.environ.get("EVALUATOR_TASKS_PATH")
    call_command("calibrate", "--task", "6_masked_scale")
    out = capsys.readouterr().out
    assert out.startswith("6_masked_scale") and "reference vs eager" in out, out
    assert os.environ.get("EVALUATOR_TASKS_PATH") == before
    entry = Task.objects.get(name="6_masked_scale").calibration_for("cpu")
    assert entry and not entry["errors"] and entry["reference_vs_eager"] and entry["compile_vs_compile"], entry
