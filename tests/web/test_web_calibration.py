"""The ruler's calibration is published per task and device type: `manage.py calibrate` stores it,
the task page shows it, and says plainly when it is missing or outside the target."""
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from leaderboard.models import Task
from web_helpers import make_done

H200 = "cuda:NVIDIA H200"
pytestmark = pytest.mark.django_db


def _rows(tmp_path, *rows):
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(list(rows)))
    return str(path)


def _row(task, ref, comp, errors=()):
    return {"task": task, "reference_vs_eager": ref, "compile_vs_compile": comp, "errors": list(errors)}


def _section(client, task, device=H200):
    url = reverse("task_detail", args=[task.name]) + f"?device={device.replace(' ', '%20')}"
    html = client.get(url).content.decode()
    start = html.index('<div id="calibration">')
    return html[start:html.index("</div>", start)]


def test_an_imported_calibration_within_target_is_shown_as_calibrated(client, task, tmp_path, capsys):
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.02, 0.99)),
                 "--device-type", H200, "--source", "bench/gpu_proof.sh run d4")
    assert "calibrated on cuda:NVIDIA H200" in capsys.readouterr().out
    entry = Task.objects.get(pk=task.pk).calibration[H200]
    assert entry["ok"] is True and entry["reference_vs_eager"] == 1.02
    section = _section(client, task)
    assert "1.020x" in section and "0.990x" in section
    assert "Calibrated" in section and "Not calibrated" not in section
    assert "bench/gpu_proof.sh run d4" in section


def test_a_reading_outside_the_target_is_said_to_be_not_calibrated(client, task, tmp_path):
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.02, 0.95)), "--device-type", H200)
    section = _section(client, task)
    assert "0.950x" in section and "Not calibrated" in section and "1.00 ± 0.03" in section


def test_a_failed_calibration_shows_no_number(client, task, tmp_path):
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.0, 1.0, errors=["crash"])),
                 "--device-type", H200)
    section = _section(client, task)
    assert "failed" in section and "Not calibrated" in section and "1.000x" not in section


def test_calibration_belongs_to_one_device_type(client, task, tmp_path, owner):
    make_done(task, owner, speedup=1.1, device_type="cpu")
    make_done(task, owner, speedup=1.2)  # H200
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.0, 1.01)), "--device-type", H200)
    assert "Calibrated" in _section(client, task)
    assert "Not calibrated on this device yet" in _section(client, task, device="cpu")


def test_bad_imports_are_refused_and_change_nothing(task, tmp_path):
    with pytest.raises(CommandError, match="--device-type"):
        call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.0, 1.0)))
    with pytest.raises(CommandError, match="unknown task"):
        call_command("calibrate", "--from-json", _rows(tmp_path, _row("no_such_task", 1.0, 1.0)), "--device-type", H200)
    with pytest.raises(CommandError, match="not a positive number"):
        call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, "1.0", 1.0)), "--device-type", H200)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CommandError, match="cannot read"):
        call_command("calibrate", "--from-json", str(bad), "--device-type", H200)
    assert Task.objects.get(pk=task.pk).calibration == {}


@pytest.mark.slow
def test_calibrating_here_runs_the_evaluator_and_publishes_it(client, task, capsys, monkeypatch):
    """On this machine (the worker's device, the CPU here): the real evaluator's calibration."""
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    call_command("calibrate", "--task", task.name)
    entry = Task.objects.get(pk=task.pk).calibration["cpu"]
    assert entry["errors"] == [] and entry["reference_vs_eager"] and entry["compile_vs_compile"]
    assert "manage.py calibrate" in _section(client, task, device="cpu")


def test_the_submission_page_says_whether_its_speedup_was_measured_with_a_calibrated_ruler(client, task, owner,
                                                                                         tmp_path):
    sub = make_done(task, owner, speedup=1.3)  # H200
    client.force_login(owner)
    url = reverse("submission_detail", args=[sub.pk])

    def ruler():
        html = client.get(url).content.decode()
        start = html.index('<dd id="ruler">')
        return html[start:html.index("</dd>", start)]

    assert "not calibrated on this device yet" in ruler()
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.02, 0.95)), "--device-type", H200)
    assert "outside 1.00 ± 0.03" in ruler()
    call_command("calibrate", "--from-json", _rows(tmp_path, _row(task.name, 1.01, 0.99)), "--device-type", H200)
    assert "calibrated (reference vs eager 1.01, torch.compile vs itself 0.99)" in ruler()


def test_the_published_h200_ruler_imports_with_the_readme_command(client, capsys):
    """README's one command: the committed H200 ruler has a reading inside 1.00 +- 0.01 for
    every task in both columns, and the task pages show it."""
    from pathlib import Path

    from evaluator import TASKS

    root = Path(__file__).resolve().parents[2]
    published = root / "bench" / "results" / "calibration" / "h200.json"
    readme = (root / "README.md").read_text()
    ruler_section = readme[readme.index("## The H200 ruler"):].split("\n## ", 1)[0]
    assert "bench/results/calibration/h200.json" in ruler_section
    if not published.exists():
        # until an H200 run publishes it, the README must say so rather than promise a file
        assert "Not published yet" in ruler_section
        with pytest.raises(CommandError):
            call_command("calibrate", "--from-json", str(published), "--device-type", H200)
        return
    assert "Not published yet" not in ruler_section
    call_command("load_tasks")
    call_command("calibrate", "--from-json", str(published), "--device-type", H200)
    out = capsys.readouterr().out
    for name in TASKS:
        entry = Task.objects.get(name=name).calibration[H200]
        # a ruler outside its own bar is never published
        for column in ("reference_vs_eager", "compile_vs_compile"):
            assert 0.99 <= entry[column] <= 1.01, (name, column, entry)
        assert name in out
    section = _section(client, Task.objects.get(name="softmax"))
    assert "h200.json" in section
