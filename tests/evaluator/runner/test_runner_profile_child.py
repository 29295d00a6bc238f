"""evaluator/runner/profile_child.py: `child` on the CPU writes the output's bytes and description
and, with the torch tool, profile.json (with ncu, only the output); `launch` refuses an empty
command and, under a root judge, runs the command as the runner's user."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from evaluator.contract import profile_report
from evaluator.runner import profile_child
from evaluator.tasks import get_task

ROOT = Path(__file__).resolve().parents[3]
SHAPE = {"M": 4, "N": 16}


def run(args, tmp_path, timeout=120, home=None):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": home or str(tmp_path),
           "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "evaluator.runner.profile_child", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def child(tmp_path, tool):
    source = tmp_path / "s.py"
    source.write_text("import torch\n\ndef custom_kernel(x):\n    return torch.softmax(x, -1)\n")
    done = run(["child", "--task", "softmax", "--device", "cpu", "--source", str(source), "--shape",
                json.dumps(SHAPE), "--seed", "3", "--dir", str(tmp_path), "--tool", tool], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_child_writes_the_output_and_the_torch_profile(tmp_path):
    child(tmp_path, "torch")
    meta = json.loads((tmp_path / "output.json").read_text())
    assert meta == {"type": "tensor", "dtype": "torch.float32", "shape": [4, 16], "device": "cpu"}
    task = get_task("softmax")
    expect = task.reference(*task.make_inputs(SHAPE, 3, "cpu"))
    got = torch.frombuffer(bytearray((tmp_path / "output.bin").read_bytes()), dtype=torch.float32).view(4, 16)
    assert torch.equal(got, expect)
    profile = json.loads((tmp_path / "profile.json").read_text())
    names = [row["name"] for row in profile["ops"]]
    assert "custom_kernel" in names and "aten::softmax" in names
    assert len(profile["ops"]) <= profile_report.MAX_OPS and len(profile["table"]) <= profile_report.MAX_TABLE
    assert all(row["self_device_us"] is None and row["kind"] == "op" for row in profile["ops"])


def test_with_ncu_the_child_writes_only_the_output(tmp_path):
    child(tmp_path, "ncu")
    assert (tmp_path / "output.json").exists() and (tmp_path / "output.bin").stat().st_size == 4 * 16 * 4
    assert not (tmp_path / "profile.json").exists()


def test_write_output_describes_what_is_not_a_tensor(tmp_path):
    profile_child._write_output([1, 2], str(tmp_path))
    assert json.loads((tmp_path / "output.json").read_text()) == {"type": "list"}
    assert not (tmp_path / "output.bin").exists()
    profile_child._write_output(torch.zeros(0, 3, dtype=torch.float16), str(tmp_path))
    assert json.loads((tmp_path / "output.json").read_text())["shape"] == [0, 3]
    assert (tmp_path / "output.bin").read_bytes() == b""


def test_launch_refuses_an_empty_command(tmp_path):
    done = run(["launch", "--"], tmp_path)
    assert done.returncode == 2 and "no command" in done.stderr
    done = run([], tmp_path)
    assert done.returncode == 2 and "usage" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the launcher drops privileges only as root")
def test_launch_runs_the_command_as_the_runners_user(tmp_path):
    done = run(["launch", "--drop-to", "65534", "--", sys.executable, "-c",
                "import os; print(os.geteuid(), os.getegid(), os.getgroups(), os.getcwd())"], tmp_path, home="/")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["65534", "65534", "[]", "/"]
