"""`python -m evaluator run`: exit 0 whenever an evaluation completed, 2 on usage errors, a short
summary on stdout and a report file that validates."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from evaluator.contract.report import validate

ROOT = Path(__file__).resolve().parents[3]
HONEST = Path(__file__).resolve().parents[1] / "fixtures" / "softmax_triton.py"


def cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1"}
    return subprocess.run([sys.executable, "-m", "evaluator", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=600)


def test_a_verified_run_exits_0_with_a_summary_and_a_valid_report(tmp_path):
    out = tmp_path / "report.json"
    p = cli("run", str(HONEST), "--task", "softmax", "--device", "cpu", "--mode", "test", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "softmax on cpu: Verified (test run)" in p.stdout
    report = validate(json.loads(out.read_text()))
    n = len(report["tests"])
    assert n > 6 and f"{n} of {n} shapes passed" in p.stdout  # six public shapes, then the hidden ones
    assert report["verdict"] == "verified"


def test_a_rejected_run_also_exits_0(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n\ndef custom_kernel(x):\n    return torch.zeros_like(x)\n")
    p = cli("run", str(bad), "--task", "softmax", "--device", "cpu", "--mode", "test", "--json", "-")
    assert p.returncode == 0, p.stderr
    report = validate(json.loads(p.stdout))
    assert report["verdict"] == "rejected" and report["reason_codes"] == ["mismatch"]


@pytest.mark.parametrize("args, message", [
    (["run", "/nonexistent/file.py", "--task", "softmax", "--device", "cpu"], "no such file"),
    (["run", str(HONEST), "--task", "no_such_task", "--device", "cpu"], "unknown task"),
    (["run", str(HONEST)], "--task"),
    (["run", str(HONEST), "--task", "softmax", "--mode", "fast"], "invalid choice"),
])
def test_usage_errors_exit_2(args, message):
    p = cli(*args)
    assert p.returncode == 2
    assert message in p.stderr


def test_asking_for_cuda_without_a_gpu_is_a_usage_error():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    p = cli("run", str(HONEST), "--task", "softmax", "--device", "cuda")
    assert p.returncode == 2 and "no CUDA device" in p.stderr


def test_tasks_lists_the_registry():
    p = cli("tasks")
    assert p.returncode == 0 and "softmax" in p.stdout


def test_the_report_replaces_a_planted_symlink_instead_of_writing_through_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "report.json"
    out.symlink_to(victim)
    p = cli("run", str(HONEST), "--task", "softmax", "--device", "cpu", "--mode", "test", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert victim.read_text() == "precious"
    assert not out.is_symlink()
    assert validate(json.loads(out.read_text()))["verdict"] == "verified"


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_stops_the_judge_and_its_runners():
    """`timeout` or a supervisor sends SIGTERM: the runners live in sessions of their own, so the
    judge must take them down itself rather than leave them holding the device."""
    import signal
    import time

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    judge = subprocess.Popen([sys.executable, "-m", "evaluator", "run", str(HONEST), "--task", "softmax",
                              "--device", "cpu", "--mode", "ranked"], env=env, cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    runners = set()
    # the candidate and the baseline runner (forked from the judge's zygote, which is its child)
    while time.monotonic() < deadline and len(runners) < 3:
        runners = _children(judge.pid)
        runners |= {p for child in runners for p in _children(child)}
        time.sleep(0.2)
    assert len(runners) >= 3, "the judge never started its runners"
    time.sleep(1.0)
    judge.send_signal(signal.SIGTERM)
    assert judge.wait(timeout=60) == 128 + signal.SIGTERM
    # the zygote reads the judge's end on its socket and kills what it forked: a few tenths of a
    # second on an idle machine, longer on one as busy as CI's
    deadline = time.monotonic() + 10
    while [p for p in runners if _alive(p)] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in runners if _alive(p)]


@pytest.mark.skipif(os.geteuid() != 0, reason="a baseline runner is kept only by a root judge")
def test_the_kept_baseline_runner_ends_with_the_command():
    # the command ends with os._exit (cli.finish): what atexit would close, it closes first. Its
    # own temporary directory, which the runner's user (nobody) may traverse, as /tmp
    tmp = Path(tempfile.mkdtemp(prefix="cli-keep-", dir="/tmp"))
    try:
        tmp.chmod(0o711)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1", "TMPDIR": str(tmp)}
        p = subprocess.run([sys.executable, "-m", "evaluator", "run", str(HONEST), "--task", "softmax",
                            "--device", "cpu", "--mode", "ranked", "--json", "-"],
                           capture_output=True, text=True, env=env, cwd=ROOT, timeout=600, check=False)
        assert p.returncode == 0, p.stderr
        assert validate(json.loads(p.stdout))["verdict"] == "verified"
        assert not list(tmp.glob("evaluator-baseline-*"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_failure_of_the_judge_exits_3_with_its_trace_and_no_report(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "inductor").write_text("a file where the judge's compile cache needs a directory\n")
    out = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1", "EVALUATOR_JUDGE_CACHE": str(cache)}
    p = subprocess.run([sys.executable, "-m", "evaluator", "run", str(HONEST), "--task", "softmax", "--device", "cpu",
                        "--mode", "ranked", "--json", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 3, p.stderr[-2000:]
    assert "the judge failed (not the submission's doing)" in p.stderr and "FileExistsError" in p.stderr
    assert not out.exists()


def test_the_summary_says_where_a_failure_stopped_the_test_shapes():
    from evaluator.cli import summary

    tests = [{"shape": {"M": 1, "N": 1}, "passed": True}, {"shape": {"M": 7, "N": 131}, "passed": False}]
    text = summary({"task": "softmax", "device": "cpu", "verdict": "rejected", "mode": "ranked", "tests": tests,
                    "reason_codes": ["mismatch"], "reasons": ["wrong answer"], "phases": {}})
    # how many shapes a failure left unrun is not known: the hidden ones are drawn per evaluation
    assert "tests: 1 of 2 shapes passed (stopped at the first failure)" in text
    text = summary({"task": "softmax", "device": "cpu", "verdict": "verified", "mode": "test",
                    "tests": [{"shape": {}, "passed": True}] * 6, "reason_codes": [], "reasons": [], "phases": {}})
    assert "tests: 6 of 6 shapes passed\n" in text + "\n"


def test_the_log_writes_numbers_as_the_pages_do():
    from evaluator import significant, time_split
    from evaluator.cli import summary

    assert [significant(x) for x in (0.0029612, 1.2, 357.4, 12345.6, 0.0)] == ["0.00296", "1.20", "357", "12,346", "0"]
    text = summary({"task": "softmax", "device": "cpu", "verdict": "verified", "mode": "ranked", "tests": [],
                    "speedup_vs_compile": 0.0029612, "speedup_vs_eager": 0.0022871, "reason_codes": [], "reasons": [],
                    "phases": {}})
    assert "speedup: 0.00296x vs torch.compile, 0.00229x vs eager" in text
    assert time_split({"compile_s": 12.7, "sandbox_s": 0.1, "startup_s": 0.0019}) == \
        "compile 13 s, sandbox 0.10 s, startup 0.0019 s"
