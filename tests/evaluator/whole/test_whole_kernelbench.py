"""A KernelBench-style problem the project has never seen, in EVALUATOR_TASKS_PATH, through
`python -m evaluator`: listed under its normalised name (a broken file beside it named with its
error), an honest ModelNew verified, one whose parameters do not match rejected as
`params_mismatch` naming the keys, and a custom_kernel verified on a problem without parameters
whose inputs have three dtypes. (Wrong answers to such problems: tests/evaluator/tasks/test_tasks_corpus.py.)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

LINEAR = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """y = gelu(x @ W^T + b)"""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.proj(x))


batch_size = 48
in_features = 96
out_features = 80


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

GATHER = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Rows of x picked by an int64 index, scaled where a bool mask is set."""

    def __init__(self):
        super().__init__()

    def forward(self, x, index, mask):
        return torch.where(mask, x[index] * 2.0, x[index])


rows = 64
cols = 200
picks = 50


def get_inputs():
    return [torch.randn(rows, cols), torch.randint(0, rows, (picks,)), torch.rand(picks, cols) > 0.5]


def get_init_inputs():
    return []
'''

SUBMISSIONS = {
    "honest": ("41_proj_gelu", '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)

    def forward(self, x):
        z = torch.addmm(self.proj.bias, x, self.proj.weight.t())
        return 0.5 * z * (1 + torch.erf(z / 2 ** 0.5))
''', "verified", None),
    "renamed": ("41_proj_gelu", '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))
''', "rejected", "params_mismatch"),
    "gather": ("7_gather_scale", '''import torch


def custom_kernel(x, index, mask):
    rows = x.index_select(0, index)
    return rows * (1.0 + mask.to(rows.dtype))
''', "verified", None),
}


@pytest.fixture(scope="module")
def problems():
    # readable by the runner (uid nobody when the judge is root): pytest's own temporary
    # directories are 0700
    root = Path(tempfile.mkdtemp(prefix="kb-problems-"))
    root.chmod(0o755)
    (root / "level2").mkdir()
    (root / "level1").mkdir()
    (root / "level2" / "41_Proj-GELU.py").write_text(LINEAR)
    (root / "level1" / "7_Gather+Scale.py").write_text(GATHER)
    (root / "level1" / "8_Broken.py").write_text("import torch\nclass Model(:\n")
    yield root
    shutil.rmtree(root, ignore_errors=True)


def evaluator(problems, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1", "EVALUATOR_TASKS_PATH": str(problems)}
    return subprocess.run([sys.executable, "-m", "evaluator", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_the_problem_is_listed_and_the_broken_file_named(problems):
    p = evaluator(problems, "tasks")
    assert p.returncode == 1, p.stderr
    lines = {line.split()[0]: line for line in p.stdout.splitlines()}
    assert "kernelbench-level2" in lines["41_proj_gelu"] and "41_Proj-GELU.py" in lines["41_proj_gelu"]
    assert "kernelbench-level1" in lines["7_gather_scale"] and "softmax" in lines
    assert "(does not load)" in lines["8_broken"] and "8_Broken.py" in p.stderr and "SyntaxError" in p.stderr


@pytest.mark.parametrize("name", list(SUBMISSIONS))
def test_a_submission_to_the_problem(problems, tmp_path, name):
    task, source, verdict, code = SUBMISSIONS[name]
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    out = tmp_path / "report.json"
    p = evaluator(problems, "run", str(path), "--task", task, "--device", "cpu", "--mode", "test", "--json", str(out))
    assert p.returncode == 0, p.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["verdict"] in ((verdict, "flagged") if verdict == "verified" else (verdict,)), report["reasons"]
    if verdict == "verified":
        assert not set(report["reason_codes"]) - {"no_kernel_launched"}, report["reasons"]
        assert any(t.get("hidden") for t in report["tests"]) and all(t["passed"] for t in report["tests"])
    else:
        assert code in report["reason_codes"], report["reasons"]
    if code == "params_mismatch":
        assert "missing keys ['proj.bias', 'proj.weight']" in " ".join(report["reasons"])
