"""`python -m leaderboard.cli list | show ID | wait ID`, run as a user runs them (a subprocess)
against a live server: the tables and their three significant digits, the CPU try-out note, the
phases `wait` prints as they change, its exit statuses, and a clear line for every refusal."""
import os
import queue
import re
import signal
import subprocess
import sys
import threading

import pytest

from leaderboard import services
from leaderboard.models import Submission
from site_helpers import H200, SOURCE, make_done, make_queued, report_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def key(owner):
    return services.api_token_create(user=owner)[1]


def _as_from_a_terminal():
    # a command started from a terminal gets SIGINT's default; a test run started in the
    # background of a non-interactive shell passes SIGINT ignored to its children, and Python then
    # installs no KeyboardInterrupt handler (the Ctrl-C test's CLI went on for ever in such a run)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args, token=None):
    env = {k: v for k, v in os.environ.items() if k not in ("LEADERBOARD_TOKEN", "LEADERBOARD_URL")}
    if token:
        env["LEADERBOARD_TOKEN"] = token
    env["PYTHONFAULTHANDLER"] = "1"
    return subprocess.Popen([sys.executable, "-m", "leaderboard.cli", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_as_from_a_terminal)


def cli(*args, token=None):
    proc = start(*args, token=token)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in out + err, (out, err)
    return proc.returncode, out, err


class Lines:
    """A running command's stdout, line by line as it prints them."""

    def __init__(self, proc):
        self.proc, self.lines, self.seen = proc, queue.Queue(), []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next(self, timeout=20) -> str:
        line = self.lines.get(timeout=timeout)
        assert line is not None, ("the command ended", self.seen, self.proc.stderr.read())
        self.seen.append(line)
        return line

    def rest(self) -> list[str]:
        out = []
        while (line := self.lines.get(timeout=60)) is not None:
            out.append(line)
        return out


# three significant digits in plain notation: 1.23, 12.3, 123, 1230, 0.0123
SIG3 = re.compile(r"[1-9]\.\d\d|[1-9]\d\.\d|[1-9]\d\d+|0\.0*[1-9]\d\d")


def rows(out: str) -> list[list[str]]:
    """The table's lines after its header, split on runs of two spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("id "))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[start + 1:] if line.startswith("#")]


def test_list_shows_your_submissions_newest_first(live_server, task, owner, other, key):
    gpu = make_done(task, owner, device_type=H200, speedup=1.23456)
    cpu = make_done(task, owner, device_type="cpu", speedup=0.0013444)
    tryout = make_done(task, owner, mode="test")
    running = make_queued(task, owner)
    theirs = make_done(task, other)
    code, out, err = cli("list", "--url", live_server.url, token=key)
    assert code == 0, err
    table = rows(out)
    assert [r[0] for r in table] == [f"#{s.pk}" for s in (running, tryout, cpu, gpu)]  # not #{theirs.pk}
    assert f"#{theirs.pk}" not in out
    assert table[3][1:6] == ["softmax", "ranked", "Done", "Verified", "1.23x"]
    assert table[2][5] == "0.00134x" and table[1][2:6] == ["test", "Done", "Verified (test run)", "-"]
    assert table[0][3:6] == ["Queued", "-", "-"]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", r[6]) for r in table)
    assert out.splitlines()[0].split() == ["id", "task", "mode", "status", "verdict", "vs", "torch.compile",
                                           "uploaded"]

    code, out, _ = cli("list", "--limit", "2", "--task", "softmax", "--url", live_server.url, "--token", key)
    assert code == 0 and [r[0] for r in rows(out)] == [f"#{running.pk}", f"#{tryout.pk}"]
    assert "the newest 2 of 4: --limit N shows more" in out


def test_list_pages_through_the_api_past_its_largest_page(live_server, task, owner, key):
    Submission.objects.bulk_create([Submission(user=owner, task=task, device_type="cpu", source=SOURCE,
                                               filename="k.py") for _ in range(103)])
    code, out, _ = cli("list", "--limit", "101", "--url", live_server.url, token=key)
    newest = list(Submission.objects.filter(user=owner).order_by("-created_at", "-pk").values_list("pk", flat=True))
    assert code == 0 and [r[0] for r in rows(out)] == [f"#{pk}" for pk in newest[:101]]
    assert "the newest 101 of 103" in out


def test_list_says_what_is_wrong(live_server, task, owner, key):
    code, out, err = cli("list", "--url", live_server.url, token=key)
    assert code == 0 and out.strip() == "no submissions yet"
    code, out, err = cli("list", "--task", "softmax", "--url", live_server.url, token=key)
    assert code == 0 and out.strip() == "no submissions for softmax yet"
    code, _, err = cli("list", "--task", "nope", "--url", live_server.url, token=key)
    assert code == 2 and "no task named 'nope'; the tasks: softmax" in err
    for bad in ("0", "-3", "many"):
        code, _, err = cli("list", "--limit", bad, "--url", live_server.url, token=key)
        assert code == 2 and "--limit" in err and "whole number of 1 or more" in err
    code, _, err = cli("list", "--url", live_server.url)
    assert code == 2 and "an API token is needed" in err


def test_show_prints_the_verdict_reasons_and_per_shape_times(live_server, task, owner, key):
    sub = make_done(task, owner, device_type=H200, verdict="flagged", speedup=1.23456, candidate_ms=0.0123456,
                    codes=("too_fast_vs_compile",))
    code, out, err = cli("show", sub.pk, "--url", live_server.url, token=key)
    assert code == 0, err
    assert f"submission #{sub.pk}  task softmax  mode ranked  device {H200}" in out
    assert "status: Done" in out and "verdict: Flagged" in out
    assert "  - [too_fast_vs_compile] reason for too_fast_vs_compile" in out and "admin's review" in out
    assert "speedup_vs_compile: 1.23x" in out and "speedup_vs_eager: 2.47x" in out
    header = next(line for line in out.splitlines() if line.startswith("shape"))
    assert header.split() == ["shape", "yours", "ms", "eager", "ms", "compile", "ms", "floor", "ms", "%", "of",
                              "floor", "vs", "compile", "vs", "eager"]
    shape = ", ".join(f"{k}={v}" for k, v in task.bench_shapes["cuda"][0].items())
    row = next(line for line in out.splitlines() if line.startswith(shape))
    cells = re.split(r"\s{2,}", row.strip())[1:]
    assert cells[:3] == ["0.0123", "0.280", "0.0152"] and cells[-2:] == ["1.23x", "2.47x"]
    assert all(SIG3.fullmatch(c) for c in cells[3:5]), cells  # the floor and the share of it
    assert "CPU try-out" not in out and "NVIDIA H200" in out
    assert f"/submissions/{sub.pk}/" in out


def test_show_says_yours_only_to_the_owner(live_server, task, owner, other, key):
    """A public entry is read by anyone: its kernel's column is "yours" to its owner only, as on its page."""
    entry = make_done(task, owner, device_type=H200)

    def header(out):
        return next(line for line in out.splitlines() if line.startswith("shape")).split()[1:3]

    url = ("--url", live_server.url)
    code, out, _ = cli("show", entry.pk, *url, token=key)
    assert code == 0 and header(out) == ["yours", "ms"]
    code, out, _ = cli("show", entry.pk, *url)  # no token
    assert code == 0 and header(out) == ["kernel", "ms"]
    code, out, _ = cli("show", entry.pk, *url, token=services.api_token_create(user=other)[1])
    assert code == 0 and header(out) == ["kernel", "ms"] and "yours" not in out


def test_show_on_a_cpu_says_it_is_a_try_out(live_server, task, owner, key):
    sub = make_done(task, owner, device_type="cpu", speedup=0.0013444, candidate_ms=357.123)
    code, out, _ = cli("show", sub.pk, "--url", live_server.url, token=key)
    assert code == 0
    assert "CPU try-out: every correctness and integrity check ran in full" in out
    assert "interpreter timings" in out and "speedup_vs_compile: 0.00134x" in out
    header = next(line for line in out.splitlines() if line.startswith("shape"))
    assert "% of floor" not in header and "share of the roofline floor" not in out
    row = next(line for line in out.splitlines() if line.startswith("M="))
    assert re.split(r"\s{2,}", row.strip())[1] == "357" and row.rstrip().endswith("0.00134x  0.00269x")
    assert "attempt" not in out
    retried = make_done(task, owner, device_type="cpu", speedup=0.0013444)
    Submission.objects.filter(pk=retried.pk).update(attempts=2)  # a worker lost on the first: said once
    code, out, _ = cli("show", retried.pk, "--url", live_server.url, token=key)
    assert code == 0 and out.count("attempt 2: an earlier attempt ended without a result") == 1
    # the note is about times: a test run has none to explain
    test_run = make_done(task, owner, device_type="cpu", mode="test")
    code, out, _ = cli("show", test_run.pk, "--url", live_server.url, token=key)
    assert code == 0 and "Verified (test run)" in out and "interpreter timings" not in out


def test_show_of_an_unfinished_submission_points_at_wait(live_server, task, owner, key):
    sub = make_queued(task, owner)
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    services.submission_set_phase(submission=claimed, phase="correctness: shape 2 of 5")
    code, out, _ = cli("show", sub.pk, "--url", live_server.url, token=key)
    assert code == 0 and "status: Running: correctness: shape 2 of 5" in out
    assert f"python -m leaderboard.cli wait {sub.pk}" in out and "verdict" not in out


def test_show_and_wait_refuse_clearly(live_server, task, owner, other, key):
    mine_private = make_done(task, owner, mode="test")
    mine_public = make_done(task, owner)
    theirs_private = make_done(task, other, mode="test")
    missing = theirs_private.pk + 1000
    url = ("--url", live_server.url)
    for command in ("show", "wait"):
        code, _, err = cli(command, "abc", *url, token=key)
        assert code == 2 and "'abc' is not a submission number" in err
        code, _, seen = cli(command, theirs_private.pk, *url, token=key)
        code2, _, unseen = cli(command, missing, *url, token=key)
        assert code == code2 == 2 and f"no submission #{theirs_private.pk} that you can read" in seen
        assert seen.replace(str(theirs_private.pk), str(missing)) == unseen  # nothing tells them apart
        code, _, err = cli(command, mine_private.pk, *url)
        assert code == 2 and "is not public: an API token is needed" in err
        code, out, _ = cli(command, mine_public.pk, *url)  # a ranked entry is public: no token needed
        assert code == 0 and "verdict: Verified" in out
        code, _, err = cli(command, mine_public.pk, *url, "--token", "lb_wrong")
        assert code == 2 and "HTTP 401: Invalid or revoked API token." in err
        code, _, err = cli(command, mine_public.pk, "--url", "http://127.0.0.1:9", token=key)
        assert code == 2 and "cannot reach http://127.0.0.1:9" in err and "is the site running?" in err
        code, _, err = cli(command, mine_public.pk, "--url", "127.0.0.1:8000", token=key)
        assert code == 2 and "is not the site's address" in err


def test_an_address_that_is_not_the_leaderboard_is_named(tmp_path, db):
    """A --url that answers, but not in JSON (another web server): a line that says so."""
    (tmp_path / "api" / "submissions").mkdir(parents=True)
    (tmp_path / "api" / "submissions" / "5").write_text("<html>a page</html>")
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = re.search(r"port (\d+)", server.stdout.readline()).group(1)
        code, _, err = cli("show", "5", "--url", f"http://127.0.0.1:{port}", token="lb_x")
        assert code == 2 and "did not answer in JSON: is --url the leaderboard's address?" in err
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_wait_prints_each_phase_as_it_changes_then_the_result(live_server, task, owner, key):
    sub = make_queued(task, owner, device_type="cpu")
    Submission.objects.filter(pk=sub.pk).update(phase="waiting for a worker")
    proc = start("wait", sub.pk, "--poll", "0.1", "--url", live_server.url, token=key)
    lines = Lines(proc)
    assert lines.next() == "  Queued, 1st in line"  # the API says a queued one's place
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    assert lines.next() == f"  Running: {claimed.phase}"
    for phase in ("compile", "correctness: shape 1 of 3", "timing: round 2 of 5"):
        services.submission_set_phase(submission=claimed, phase=phase)
        assert lines.next() == f"  Running: {phase}"
    report = report_for(task, device="cpu", speedup=0.0013444)
    assert services.submission_store_result(submission=claimed, report=report)
    rest = "\n".join(lines.rest())
    assert proc.wait(timeout=30) == 0, (rest, proc.stderr.read())
    assert f"submission #{sub.pk}" in rest and "status: Done" in rest and "verdict: Verified" in rest
    assert "CPU try-out" in rest and "0.00134x" in rest
    assert len(lines.seen) == 5  # each phase once, however many polls saw it


@pytest.mark.parametrize("verdict, codes, status", [("verified", (), 0), ("rejected", ("mismatch",), 1),
                                                    ("flagged", ("too_fast_vs_compile",), 4)])
def test_wait_exits_with_the_verdict(live_server, task, owner, key, verdict, codes, status):
    sub = make_done(task, owner, verdict=verdict, codes=codes)
    code, out, _ = cli("wait", sub.pk, "--url", live_server.url, token=key)
    assert code == status and f"verdict: {verdict.capitalize()}" in out


def test_wait_exits_3_for_a_failed_run_and_when_the_time_is_up(live_server, task, owner, key):
    sub = make_queued(task, owner)
    code, _, err = cli("wait", sub.pk, "--timeout", "0.5", "--poll", "0.1", "--url", live_server.url, token=key)
    assert code == 3 and "gave up waiting after 0.5 s; status Queued" in err
    claimed = services.submission_claim(submission_id=sub.pk, worker="test")
    services.submission_fail(submission=claimed, error="The evaluation could not run: the sandbox failed.")
    code, out, _ = cli("wait", sub.pk, "--url", live_server.url, token=key)
    assert code == 3 and "status: Failed" in out and "the sandbox failed" in out


def test_ctrl_c_stops_waiting_without_a_traceback(live_server, task, owner, key):
    sub = make_queued(task, owner)
    proc = start("wait", sub.pk, "--poll", "0.1", "--url", live_server.url, token=key)
    Lines(proc).next()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # say where it is stuck
        proc.send_signal(signal.SIGABRT)  # faulthandler (PYTHONFAULTHANDLER) prints every thread's stack
        proc.wait(timeout=10)
        raise AssertionError(f"the CLI went on after SIGINT; stderr: {proc.stderr.read()[-3000:]}") from None
    assert code == 130
    err = proc.stderr.read()
    assert "interrupted" in err and "Traceback" not in err
