"""A trusted baseline runner kept between the CPU evaluations of one process (baseline_keep.py):
the next evaluation of the task gets it, checked again, and scores as before; one that died while
kept, or that the operator turned off, is started afresh; it never outlives the process."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from evaluator.judge import baseline_keep
from evaluator.wire import isolation
from evaluator.judge import runner_process
from evaluator.judge.evaluation import Evaluation

pytestmark = pytest.mark.skipif(not isolation.is_root(), reason="runners are kept only when the judge is root")


def _ranked(source: str) -> Evaluation:
    ev = Evaluation(source.encode(), task="softmax", device="cpu", mode="ranked")
    ev.report = ev.run()
    return ev


@pytest.fixture
def empty_keep():
    baseline_keep.close_all()
    yield
    baseline_keep.close_all()


def test_the_next_evaluation_gets_the_kept_runner_or_a_new_one(honest, empty_keep, monkeypatch):
    first = _ranked(honest)
    assert first.report["verdict"] == "verified", first.report["reasons"]
    pid = first.base.runner.pid
    assert [r.pid for r, _ in baseline_keep._kept.values()] == [pid]
    assert first.base.work.path.is_dir()  # kept with its runner
    assert runner_process.threads_stopped([pid])  # and stopped while it waits
    second = _ranked(honest)
    assert second.report["verdict"] == "verified", second.report["reasons"]
    assert second.base.runner.pid == pid
    # the compiled baselines are already loaded: no new process, no import of torch
    assert second.report["phases"]["compile_s"] < first.report["phases"]["compile_s"] / 2
    row = second.report["shapes"][0]
    assert row["eager_ms"] > 0 and row["compile_ms"] > 0
    # the last evaluation's input files do not pile up in the kept work directory
    assert not list(second.base.work.path.glob("inputs-*.bin"))

    # a runner that died while kept is replaced, and its directory goes with it
    os.kill(pid, signal.SIGKILL)
    second.base.runner.proc.wait(timeout=10)
    third = _ranked(honest)
    assert third.report["verdict"] == "verified", third.report["reasons"]
    assert third.base.runner.pid != pid
    assert not first.base.work.path.exists()

    # passed on to runners (a GPU-only knob, inert here): the kept one was started without it,
    # so another environment gets a runner of its own
    monkeypatch.setenv("EVALUATOR_GPU_WARM_MS", "7")
    fourth = _ranked(honest)
    assert fourth.report["verdict"] == "verified", fourth.report["reasons"]
    assert fourth.base.runner.pid != third.base.runner.pid
    assert len(baseline_keep._kept) == 2


def test_the_operator_can_turn_it_off(honest, empty_keep, monkeypatch):
    monkeypatch.setenv("EVALUATOR_KEEP_BASELINE", "0")
    ev = _ranked(honest)
    assert ev.report["verdict"] == "verified", ev.report["reasons"]
    assert not baseline_keep._kept
    assert ev.base.runner.proc.poll() is not None and not ev.base.work.path.exists()


@pytest.mark.parametrize("how", ["exit", "SIGKILL"])
def test_kept_runners_end_with_the_process(tmp_path, how):
    # killed with no time for atexit (a pool's worker ended by its owner), the kept runner still
    # ends: it dies with the judge that started it (PR_SET_PDEATHSIG); its directory is left
    end = "os.kill(os.getpid(), signal.SIGKILL)" if how == "SIGKILL" else "sys.exit(0)"
    script = tmp_path / "keep.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys, tempfile, time
        sys.path.insert(0, {str(isolation.PACKAGE_ROOT)!r})
        from evaluator.judge import baseline, baseline_keep
        # what a ranked evaluation leaves when it ends: its runner, stopped between two requests
        cache = tempfile.mkdtemp()
        work = baseline.Workdir("softmax")
        runner = baseline.Runner(work, task="softmax", device="cpu", cache=cache)
        runner.expect("hello", time.monotonic() + 120)
        runner.stop()
        assert baseline_keep.give(baseline_keep.key("softmax", "cpu", cache), "cpu", runner, work)
        print(runner.pid, work.path, flush=True)
        {end}
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "EVALUATOR_QUICK": "1"})
    assert out.returncode == (-signal.SIGKILL if how == "SIGKILL" else 0), out.stderr[-3000:]
    pid, path = out.stdout.split()
    deadline = time.monotonic() + 10
    while not _zombie_or_gone(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _zombie_or_gone(int(pid))
    if how == "exit":
        assert not os.path.exists(path)
    shutil.rmtree(path, ignore_errors=True)


def _zombie_or_gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True
