"""evaluator/judge/zygote_client.py and evaluator/runner/zygote.py: a CPU runner forked from the
judge's zygote is the runner a fresh interpreter would be. It holds no descriptor but its own (never
the zygote's socket), its environment and working directory are the request's, the harness runs as
__main__, both runners of a ranked evaluation come from it, and the zygote ends with the judge."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evaluator.api import evaluate_source
from evaluator.judge import zygote_client
from evaluator.runner import zygote

ROOT = Path(__file__).resolve().parents[3]

PROBE = """\
import os, sys, torch
links = []
for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
    try:
        links.append(f"{fd}={os.readlink(f'/proc/self/fd/{fd}')}")
    except OSError:
        pass
main = sys.modules["__main__"]
sys.stderr.write("PROBE fds " + " ".join(links) + "\\n")
sys.stderr.write(f"PROBE home={os.environ.get('HOME')} cwd={os.getcwd()} main={hasattr(main, 'Harness')} "
                 f"uid={os.getuid()} sid={os.getsid(0) == os.getpid() or os.getpid() == 1}\\n")


def custom_kernel(x):
    return torch.softmax(x, dim=-1)
"""


def _probe_lines(report) -> dict:
    lines = [ln for ln in report["logs"].splitlines() if ln.startswith("PROBE ")]
    assert lines, report["logs"][-2000:]
    return {ln.split()[1]: ln for ln in lines}


def test_a_forked_runner_holds_only_its_own_descriptors_and_the_requests_environment():
    report = evaluate_source(PROBE, task="softmax", device="cpu", mode="test")
    assert report["verdict"] != "rejected", report["reasons"]  # flagged: the probe reads sys.modules
    assert zygote_client._zygotes, "the runner did not come from a zygote"
    probe = _probe_lines(report)
    fds = probe["fds"].split()[2:]
    # no socket at all: the zygote's is closed before the harness runs, and no other is passed
    assert not [f for f in fds if "socket:" in f], fds
    assert all(int(f.split("=")[0]) in (0, 1, 2) or "pipe:" in f or f.endswith((".bin", ".log"))
               or "/dev/" in f for f in fds), fds
    line = next(v for k, v in probe.items() if k.startswith("home="))
    assert "/scratch" in line and "main=True" in line, line
    if os.geteuid() == 0:
        assert "uid=65534" in line, line


def test_both_runners_of_a_ranked_evaluation_come_from_the_zygote(monkeypatch):
    from evaluator.judge.evaluation import Evaluation

    monkeypatch.setenv("EVALUATOR_KEEP_BASELINE", "0")  # a baseline runner of this evaluation's own

    ev = Evaluation((ROOT / "examples" / "softmax.py").read_bytes(), task="softmax", device="cpu", mode="ranked")
    report = ev.run()
    assert report["verdict"] == "verified", report["reasons"]
    assert isinstance(ev.runner.proc, zygote_client.Child) and isinstance(ev.base.runner.proc, zygote_client.Child)
    assert ev.runner.proc.poll() is not None  # ended with the evaluation, and the judge heard of it


def test_without_the_zygote_the_runner_is_a_fresh_interpreter(monkeypatch):
    monkeypatch.setenv("EVALUATOR_ZYGOTE", "0")
    report = evaluate_source(PROBE, task="softmax", device="cpu", mode="test")
    assert report["verdict"] != "rejected", report["reasons"]
    line = next(v for k, v in _probe_lines(report).items() if k.startswith("home="))
    assert "main=True" in line


def test_the_zygote_imports_libraries_and_the_harness_only():
    # what every runner inherits: nothing of a task, a submission or the judge
    assert all(name in ("numpy", "torch", "triton", "triton.language") or name.startswith("evaluator.runner.")
               for name in zygote.PRELOAD), zygote.PRELOAD


def test_the_zygote_ends_with_its_judge():
    code = (
        "import os, sys\n"
        "from evaluator.judge import zygote_client\n"
        "env = {k: v for k, v in os.environ.items() if k in zygote_client.START_KEYS}\n"
        "z = zygote_client.Zygote(env)\n"
        "print(z.pid, flush=True)\n"
        "os._exit(0)\n"  # no close: the judge simply ends
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)


def _reads_eof(fd: int, within_s: float) -> bool:
    import select

    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0] and os.read(fd, 65536) == b"":
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    if state == "Z":
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def test_a_runner_killed_by_the_judge_reads_as_popen_would(tmp_path):
    env = {k: v for k, v in os.environ.items() if k in zygote_client.START_KEYS}
    env.update(PYTHONPATH=str(ROOT), TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    buffer = tmp_path / "out.bin"
    buffer.write_bytes(b"")
    z = zygote_client.Zygote(env)
    try:
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        log = os.open(tmp_path / "runner.log", os.O_WRONLY | os.O_CREAT, 0o600)
        child = z.spawn(["--task", "softmax", "--device", "cpu", "--in-fd", str(to_r), "--out-fd", str(from_w),
                         "--source", str(ROOT / "examples" / "softmax.py"), "--buffer", str(buffer)],
                        env, str(ROOT), {0: to_r, 1: log, 2: log, to_r: to_r, from_w: from_w})
        for fd in (to_r, from_w, log):
            os.close(fd)
        assert child.poll() is None, (tmp_path / "runner.log").read_text()[-2000:]
        os.killpg(child.pid, signal.SIGKILL)  # a session of its own, as Popen's start_new_session
        assert child.wait(timeout=10) == -signal.SIGKILL and child.poll() == -signal.SIGKILL
        assert _reads_eof(from_r, 5.0)  # the zygote kept no copy of the runner's end
    finally:
        z.close()
