"""evaluator/runner/harness.py: its command line refuses missing or wrong arguments, and a real
harness process on the CPU (Triton's interpreter, no privilege drop) says hello, loads a
submission and answers `stats`, or fails with the right code when the submission has no
custom_kernel or cannot be imported."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.runner import harness
from evaluator.wire import channel

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("argv, says", [
    (["--device", "cpu", "--in-fd", "0", "--out-fd", "1", "--source", "s", "--buffer", "b"], "--task"),
    (["--task", "softmax", "--device", "tpu", "--in-fd", "0", "--out-fd", "1", "--source", "s", "--buffer", "b"],
     "invalid choice: 'tpu'"),
    (["--task", "softmax", "--device", "cpu", "--in-fd", "x", "--out-fd", "1", "--source", "s", "--buffer", "b"],
     "invalid int value"),
])
def test_the_command_line_refuses_bad_arguments(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        harness.main(argv)
    assert e.value.code == 2
    assert says in capsys.readouterr().err


def start(tmp_path, source: str):
    (tmp_path / "submission.py").write_text(source)
    (tmp_path / "out.bin").write_bytes(b"")
    to_runner_r, to_runner_w = os.pipe()
    from_runner_r, from_runner_w = os.pipe()
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path),
           "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1", "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evaluator.runner.harness", "--task", "softmax", "--device", "cpu",
         "--in-fd", str(to_runner_r), "--out-fd", str(from_runner_w), "--source", str(tmp_path / "submission.py"),
         "--buffer", str(tmp_path / "out.bin")],
        pass_fds=(to_runner_r, from_runner_w), env=env, stderr=subprocess.PIPE, cwd=str(tmp_path))
    os.close(to_runner_r)
    os.close(from_runner_w)
    return proc, to_runner_w, from_runner_r


def recv(fd):
    return channel.recv(fd, time.monotonic() + 60)


def test_a_harness_loads_the_submission_and_answers(tmp_path):
    proc, to_runner, from_runner = start(tmp_path, "def custom_kernel(x):\n    return x\n")
    try:
        hello = recv(from_runner)
        assert hello["t"] == "hello" and hello["profiler_growth"] == 0 and isinstance(hello["notes"], list)
        channel.send(to_runner, {"op": "load"})
        assert recv(from_runner) == {"t": "ready"}
        channel.send(to_runner, {"op": "stats"})
        assert recv(from_runner) == {"t": "stats", "triton": [], "cuda": [], "aten": None}
        channel.send(to_runner, {"op": "exit"})
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
        os.close(to_runner)
        os.close(from_runner)


@pytest.mark.parametrize("source, code, says", [
    ("custom_kernel = 3\n", "no_custom_kernel", "does not define a callable custom_kernel"),
    ("raise ImportError('no such thing')\n", "import_error", "importing the submission failed: ImportError: no such thing"),
])
def test_a_submission_that_cannot_serve_is_an_error_frame(tmp_path, source, code, says):
    proc, to_runner, from_runner = start(tmp_path, source)
    try:
        assert recv(from_runner)["t"] == "hello"
        channel.send(to_runner, {"op": "load"})
        error = recv(from_runner)
        assert error["t"] == "error" and error["code"] == code and says in error["message"]
        assert proc.wait(timeout=30) == 3
    finally:
        proc.kill()
        proc.wait()
        os.close(to_runner)
        os.close(from_runner)
