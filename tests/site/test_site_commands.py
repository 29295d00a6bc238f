"""Management commands: load_tasks, create_admin, evaluate, warm_judge_cache."""
import json
import re

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from evaluator import verdict_word
from leaderboard.models import Task
from site_helpers import SOURCE

pytestmark = pytest.mark.django_db


def test_load_tasks_syncs_every_task_with_floors(capsys):
    from evaluator.tasks import TASKS

    call_command("load_tasks")
    assert set(Task.objects.values_list("name", flat=True)) == set(TASKS)
    softmax = Task.objects.get(name="softmax")
    assert "def reference" in softmax.reference_source and "torch.softmax" in softmax.reference_source
    assert softmax.signature.startswith("def custom_kernel(x")
    assert softmax.input_names == ["x"]
    spec = TASKS["softmax"]
    assert softmax.bench_shapes["cuda"] == [{"M": 8192, "N": 8192}]
    assert softmax.tolerance == {"atol": spec.tolerance.atol, "rtol": spec.tolerance.rtol}
    (h200,) = softmax.floors["cuda:NVIDIA H200"]
    assert h200["shape"] == {"M": 8192, "N": 8192}
    assert h200["floor_ms"] == pytest.approx(2 * 8192 * 8192 * 4 / 4.27e12 * 1e3)  # 0.126 ms
    matmul = Task.objects.get(name="matmul_bias_relu").floors["cuda:NVIDIA H200"][0]
    assert matmul["floor_ms"] == pytest.approx(TASKS["matmul_bias_relu"].floor_ms(
        matmul["shape"], bandwidth_bytes_s=4.27e12, peak_flop_s=790e12))
    assert [f["shape"] for f in softmax.floors["cpu"]] == softmax.bench_shapes["cpu"]
    # running it again updates in place
    call_command("load_tasks", "--cpu-bandwidth", "50e9")
    assert Task.objects.count() == len(TASKS)
    again = Task.objects.get(name="softmax").floors["cpu"][0]
    shape = again["shape"]
    assert again["floor_ms"] == pytest.approx(2 * shape["M"] * shape["N"] * 4 / 50e9 * 1e3)
    assert "tasks loaded" in capsys.readouterr().out


def test_create_admin_prints_a_working_password_once(capsys):
    call_command("create_admin")
    out = capsys.readouterr().out
    password = re.search(r"password (\S+)", out).group(1)
    user = authenticate(username="admin", password=password)
    assert user is not None and user.is_superuser and user.is_staff
    call_command("create_admin", "--if-missing")
    assert "manage.py changepassword admin" in capsys.readouterr().out
    with pytest.raises(CommandError, match="exists already"):
        call_command("create_admin")
    assert get_user_model().objects.count() == 1


@pytest.mark.slow
def test_evaluate_runs_what_a_worker_runs(tmp_path, capsys, require_sandbox, monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    call_command("load_tasks")
    kernel = tmp_path / "k.py"
    kernel.write_text(SOURCE)
    out_json = tmp_path / "report.json"
    call_command("evaluate", str(kernel), "--task", "softmax", "--mode", "test", "--device", "cpu",
                 "--json", str(out_json))
    out = capsys.readouterr().out
    report = json.loads(out_json.read_text())
    assert report["task"] == "softmax" and report["mode"] == "test" and report["device"] == "cpu"
    assert f"verdict: {verdict_word(report['verdict'], 'test')}" in out and "sandbox: " in out
    # the time split, the sandbox's own part included
    assert report["phases"]["sandbox_s"] > 0 and report["phases"]["correctness_s"] > 0
    time_line = next(line for line in out.splitlines() if line.startswith("time: "))
    assert "correctness " in time_line and "sandbox " in time_line


BAD_FILES = {
    "syntax_error.py": b"def custom_kernel(x)\n    return x\n",
    "no_entry.py": b"def nothing():\n    pass\n",
    "latin1.py": b"# caf\xe9\ndef custom_kernel(x):\n    return x\n",
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_evaluate_and_the_evaluator_cli_share_one_contract_for_refused_files(tmp_path, capsys, name):
    """Both exit 0 and write the same rejected report (the judge refuses the file before anything
    runs, so no sandbox is needed to say so)."""
    import subprocess
    import sys

    bad = tmp_path / name
    bad.write_bytes(BAD_FILES[name])
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    call_command("evaluate", str(bad), "--task", "softmax", "--device", "cpu", "--json", str(ours))
    assert "verdict: Rejected" in capsys.readouterr().out
    cli = subprocess.run([sys.executable, "-m", "evaluator", "run", str(bad), "--task", "softmax",
                          "--device", "cpu", "--json", str(theirs)], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    a, b = json.loads(ours.read_text()), json.loads(theirs.read_text())
    for key in ("verdict", "reasons", "reason_codes", "task", "mode", "device", "shapes", "tests"):
        assert a[key] == b[key], key
    assert a["verdict"] == "rejected" and a["reason_codes"][0] in ("bad_upload", "no_custom_kernel")


def test_evaluate_refuses_a_missing_file(tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("evaluate", str(tmp_path / "missing.py"), "--task", "softmax")


def test_the_published_cpu_floor_is_the_one_the_judge_checks_against():
    """One floor per shape: the site's CPU ceilings are the judge's, so the table and the log of
    one run print the same number."""
    from evaluator.common import timing
    from evaluator.tasks import TASKS

    from leaderboard import scoring

    assert scoring.CEILINGS["cpu"] == {"bandwidth_bytes_s": timing.CPU_BANDWIDTH, "peak_flop_s": timing.CPU_PEAK_FLOPS}
    call_command("load_tasks")
    for name, spec in TASKS.items():
        for entry in Task.objects.get(name=name).floors["cpu"]:
            judge = spec.floor_ms(entry["shape"], bandwidth_bytes_s=timing.CPU_BANDWIDTH,
                                  peak_flop_s=timing.CPU_PEAK_FLOPS)
            assert entry["floor_ms"] == pytest.approx(judge)


@pytest.mark.slow
def test_warm_judge_cache_compiles_each_task_once_into_the_workers_cache(tmp_path, capsys, require_sandbox,
                                                                        monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    cache = tmp_path / "judge-cache"
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", str(cache))
    call_command("warm_judge_cache", "--task", "softmax", "--device", "cpu")
    assert re.search(r"^softmax \(1/1\) \.\.\. compiled in [0-9.]+ s$", capsys.readouterr().out, re.MULTILINE)
    # the box's judge compiled into the host directory the evaluations' boxes bind, root only
    (marker,) = (cache / "compiled").iterdir()
    assert marker.name.startswith("softmax-cpu-")
    assert cache.stat().st_mode & 0o777 == 0o700
    assert any((cache / "inductor").iterdir())
    call_command("warm_judge_cache", "--task", "softmax", "--device", "cpu")
    assert re.search(r"^softmax \(1/1\) \.\.\. already warm", capsys.readouterr().out, re.MULTILINE)


def test_warm_judge_cache_refuses_what_it_cannot_do(monkeypatch):
    monkeypatch.setenv("SANDBOX_JUDGE_CACHE", "off")
    with pytest.raises(CommandError, match="a cpu worker keep no cache to warm here"):
        call_command("warm_judge_cache", "--device", "cpu")
    with pytest.raises(CommandError, match="a cuda worker keep no cache"):
        call_command("warm_judge_cache", "--device", "cuda")
    with pytest.raises(CommandError, match="unknown task 'nope'"):
        call_command("warm_judge_cache", "--task", "nope")
