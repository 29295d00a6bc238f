"""The sanitizer's tools started beside the correctness phase (evaluator/judge/sanitize.py, `Early`).

compute-sanitizer exists only on GPU hosts, so a stand-in tool plays it here: a script that gets
the tool's arguments, prints what the test asks and exits with the code it asks. The containment
is real: the stand-in leaves a double-forked process in its own session behind, and the PID
namespace must take it down with the tool."""
import contextlib
import os
import shutil
import signal
import stat
import tempfile
import time

import pytest

from evaluator.judge import sanitize
from proc_helpers import pids_where

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the tools are contained only when the judge is root")

REPORT = {"device": "cuda", "mode": "ranked", "task": "softmax", "verdict": "verified", "reasons": [],
          "reason_codes": [], "phases": {}}


@pytest.fixture
def tool(monkeypatch):
    """make(body): a stand-in compute-sanitizer running `body` (shell), readable by uid 65534."""
    where = tempfile.mkdtemp(prefix="fake-sanitizer-")
    os.chmod(where, 0o755)

    def make(body: str) -> str:
        path = os.path.join(where, "compute-sanitizer")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body + "\n")
        os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        monkeypatch.setenv("EVALUATOR_SANITIZER", path)
        return path

    yield make
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def drop():
    """A directory uid 65534 can write, where a stand-in leaves the pid of what it detached."""
    where = tempfile.mkdtemp(prefix="fake-sanitizer-drop-")
    os.chmod(where, 0o1777)
    yield where
    shutil.rmtree(where, ignore_errors=True)


def _detach(drop: str, seconds: str) -> str:
    """Shell for a stand-in: start `sleep <seconds>` in a session of its own, wait until it runs."""
    pidfile = os.path.join(drop, "detached.pid")
    return (f"setsid sh -c 'echo $$ > {pidfile}; exec sleep {seconds}' </dev/null >/dev/null 2>&1 &\n"
            f"while [ ! -s {pidfile} ]; do sleep 0.05; done")


def _sleepers(seconds: str) -> list[int]:
    """Host pids of `sleep <seconds>` (a value no other test uses), in any PID namespace."""
    return pids_where(lambda cmdline: cmdline == b"sleep\0" + seconds.encode() + b"\0")


def _end(seconds: str) -> None:
    for pid in _sleepers(seconds):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def test_a_process_left_behind_by_the_tool_dies_with_it(tool, drop):
    seconds = "300.4821"
    tool(_detach(drop, seconds) + "\nexit 0")
    try:
        early = sanitize.Early(b"x = 1\n", "softmax")
        early.join(time_left_s=300, time_limit_s=300)
        assert [r["ok"] for r in early.results] == [True, True]
        assert os.path.exists(os.path.join(drop, "detached.pid"))  # it did start
        time.sleep(0.3)
        assert _sleepers(seconds) == []
    finally:
        _end(seconds)


def test_without_the_namespace_the_same_process_survives(tool, drop):
    """What the namespace prevents: run the same way as the after-the-verdict path does."""
    seconds = "300.4822"
    tool(_detach(drop, seconds) + "\nexit 0")
    try:
        report = sanitize.apply(dict(REPORT, reasons=[], reason_codes=[]), b"x = 1\n")
        assert [r["ok"] for r in report["sanitizer"]] == [True, True]
        time.sleep(0.3)
        assert _sleepers(seconds) != []
    finally:
        _end(seconds)


def test_the_tool_runs_as_the_runners_user_in_a_namespace_of_its_own(tool):
    """The tool is the first child of the namespace's init (pid 2 there)."""
    tool('echo "uid=$(id -u) pid=$$"')
    for contained in (True, False):
        [first, second] = sanitize.start(b"", "softmax", contained=contained)
        second.kill()
        assert first.finish(60)["ok"] is True
        text = first.tail.strip()
        assert text.startswith("uid=65534 pid=")
        assert (text == "uid=65534 pid=2") is contained, text


def test_a_finding_flags_the_report(tool):
    tool('echo "========= Invalid __global__ write of size 4 bytes"\nexit 86')
    early = sanitize.Early(b"", "softmax")
    early.join(time_left_s=300, time_limit_s=300)
    report = sanitize.finish(dict(REPORT, reasons=[], reason_codes=[]), b"", early)
    assert report["verdict"] == "flagged"
    assert report["reason_codes"] == ["sanitizer", "sanitizer"]
    assert "Invalid __global__ write" in report["reasons"][0]


def test_a_tool_past_its_limit_reads_not_finished(tool, monkeypatch, capsys):
    monkeypatch.setattr(sanitize, "LIMIT_S", 1.0)
    tool("sleep 30.25")
    early = sanitize.Early(b"", "softmax")
    t = time.monotonic()
    early.join(time_left_s=300, time_limit_s=300)
    assert time.monotonic() - t < 10
    assert [r["ok"] for r in early.results] == [None, None]
    assert "did not finish within 1 s" in early.results[0]["note"]
    # the operator's log still says where the tools waited when their own limit ended them
    log = capsys.readouterr().err
    assert "racecheck had not ended after" in log and "(sleep 30.25): S" in log


def test_tools_still_running_when_the_timing_needs_the_time_run_again_after_the_verdict(tool, capsys):
    tool("sleep 30.5")
    early = sanitize.Early(b"", "softmax")
    t = time.monotonic()
    early.join(time_left_s=151, time_limit_s=300)  # one second to spare
    assert time.monotonic() - t < 5
    assert early.results == []
    # the operator's log names each process of the stopped tool and where it slept
    log = capsys.readouterr().err
    assert "memcheck beside the correctness phase did not end (stopped for the timing)" in log
    assert "memcheck had not ended after" in log
    assert "(sleep 30.5): S hrtimer_nanosleep" in log or "(sleep 30.5): S -" in log
    tool("exit 0")  # the second run, after the verdict, ends at once
    report = sanitize.finish(dict(REPORT, reasons=[], reason_codes=[]), b"", early)
    assert [r["ok"] for r in report["sanitizer"]] == [True, True]


def test_without_a_pid_namespace_the_tools_wait_for_the_verdict(tool, monkeypatch):
    monkeypatch.setenv("EVALUATOR_PID_NAMESPACE", "0")
    tool("exit 0")
    early = sanitize.Early(b"", "softmax")
    early.join(time_left_s=300, time_limit_s=300)
    assert all(run.uncontained for run in early.runs)
    assert early.results == []
    monkeypatch.setenv("EVALUATOR_PID_NAMESPACE", "1")
    report = sanitize.finish(dict(REPORT, reasons=[], reason_codes=[]), b"", early)
    assert [r["ok"] for r in report["sanitizer"]] == [True, True]


def test_a_rejected_report_stops_the_tools_and_keeps_no_result(tool):
    seconds = "300.4823"
    tool(f"exec sleep {seconds}")
    try:
        early = sanitize.Early(b"", "softmax")
        deadline = time.monotonic() + 30
        while len(_sleepers(seconds)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_sleepers(seconds)) == 2  # both tools run
        report = sanitize.finish(dict(REPORT, verdict="rejected", reasons=[], reason_codes=[]), b"", early)
        assert report.get("sanitizer") is None
        time.sleep(0.3)
        assert _sleepers(seconds) == []
    finally:
        _end(seconds)


def test_the_early_start_is_off_unless_asked_for(tool, monkeypatch):
    from types import SimpleNamespace

    tool("exit 0")
    ev = SimpleNamespace(device="cuda", mode="ranked", source=b"", task_name="softmax", task_ref="softmax")
    monkeypatch.delenv("EVALUATOR_SANITIZE_EARLY", raising=False)
    assert sanitize.Early.begin(ev) is None
    monkeypatch.setenv("EVALUATOR_SANITIZE_EARLY", "1")
    early = sanitize.Early.begin(ev)
    try:
        assert isinstance(early, sanitize.Early) and len(early.runs) == 2
        assert sanitize.Early.begin(SimpleNamespace(**(vars(ev) | {"device": "cpu"}))) is None
        monkeypatch.setenv("EVALUATOR_SANITIZE", "0")
        assert sanitize.Early.begin(ev) is None
    finally:
        early.close()


def test_a_target_that_exits_87_is_not_taken_for_a_failed_namespace(tool):
    tool("exit 87")  # what the wrapper exits with when it cannot contain, without its line
    early = sanitize.Early(b"", "softmax")
    early.join(time_left_s=300, time_limit_s=300)
    assert not any(run.uncontained for run in early.runs)
    assert [r["ok"] for r in early.results] == [None, None]


def test_a_tool_that_cannot_start_is_reported_not_raised(tool):
    path = tool("exit 0")
    os.chmod(path, 0o644)  # not executable
    report = sanitize.finish(dict(REPORT, reasons=[], reason_codes=[]), b"", None)
    assert [r["ok"] for r in report["sanitizer"]] == [None, None]
    assert "could not start" in report["sanitizer"][0]["note"]
    assert report["verdict"] == "verified"
    early = sanitize.Early(b"", "softmax")  # in the namespace the wrapper starts and the exec fails
    early.join(time_left_s=300, time_limit_s=300)
    assert [r["ok"] for r in early.results] == [None, None]


def test_the_wait_for_stopped_early_tools_stays_in_the_phases(tool):
    tool("sleep 30")
    early = sanitize.Early(b"", "softmax")
    early.join(time_left_s=152, time_limit_s=300)  # two seconds to spare
    assert early.results == [] and early.waited_s >= 1.5
    tool("exit 0")
    report = sanitize.finish(dict(REPORT, reasons=[], reason_codes=[]), b"", early)
    assert report["phases"]["sanitizer_s"] >= early.waited_s


def test_after_the_verdict_the_tools_compile_into_the_runners_own_triton_cache(tool, drop, monkeypatch):
    """The judge keeps the candidate runner's work directory until the tools end, and hands them
    its Triton cache: the tools see it as the runner's user, may write it, and it goes after."""
    seen = os.path.join(drop, "seen")
    tool(f'echo "$TRITON_CACHE_DIR" > {seen}\n'
         f'touch "$TRITON_CACHE_DIR/written-by-the-tool" && echo "uid=$(id -u) wrote" >> {seen}')
    monkeypatch.setattr(sanitize, "wanted", lambda report: True)  # a CPU evaluation: no tool otherwise
    from evaluator.judge.evaluation import Evaluation

    source = b"from evaluator.tasks import get_task\ncustom_kernel = get_task('softmax').reference\n"
    report = Evaluation(source, task="softmax", device="cpu", mode="test").run()
    assert report["verdict"] != "rejected", report["reasons"]
    assert [r["ok"] for r in report["sanitizer"]] == [True, True]
    cache, *wrote = open(seen).read().splitlines()
    assert cache.endswith("/r/scratch/triton"), cache
    assert wrote and wrote[0] == "uid=65534 wrote"
    assert not os.path.exists(cache)  # the work directory went after the tools
