"""Every built-in task's solutions, run as data: each file of `solutions/correct/` is verified in a
test-mode evaluation and each of `solutions/wrong/` rejected, among them one special-cased to the
public test shapes, which the hidden shapes catch (docs/tasks.md)."""
from pathlib import Path

import pytest

from evaluator.api import evaluate_file

ROOT = Path(__file__).resolve().parents[3]
BUILTIN = ROOT / "evaluator" / "tasks" / "builtin"
SOLUTIONS = sorted(BUILTIN.glob("*/solutions/*/*.py"))


def test_every_built_in_task_has_correct_and_wrong_solutions():
    for task in sorted(p.name for p in BUILTIN.iterdir() if (p / "task.toml").is_file()):
        kinds = {p.parent.name for p in SOLUTIONS if p.parents[2].name == task}
        assert kinds == {"correct", "wrong"}, task
        assert sum(p.parents[2].name == task and p.parent.name == "wrong" for p in SOLUTIONS) >= 3, task


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: f"{p.parents[2].name}-{p.parent.name}-{p.stem}")
def test_a_solution(path):
    task, kind = path.parents[2].name, path.parent.name
    report = evaluate_file(path, task=task, device="cpu", mode="test")
    if kind == "correct":
        # a solution in PyTorch alone is flagged `no_kernel_launched`, and nothing else
        assert report["verdict"] in ("verified", "flagged") and \
            set(report["reason_codes"]) <= {"no_kernel_launched"}, report["reasons"]
    else:
        assert report["verdict"] == "rejected", (report["reason_codes"], report["tests"])
