"""Evaluator tests run the real judge and runner processes on the CPU (Triton interpreter), with
EVALUATOR_QUICK=1 so that each ranked evaluation takes seconds."""
import os
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("EVALUATOR_QUICK", "1")

FIXTURES = Path(__file__).parent / "fixtures"
HONEST_SOFTMAX = FIXTURES / "softmax_triton.py"


@pytest.fixture
def evaluate(tmp_path):
    """evaluate(source_text, mode="test", **kw) -> report, through evaluate_file on the CPU."""
    from evaluator.api import evaluate_file

    def run(source: str, *, task="softmax", mode="test", **kw):
        path = tmp_path / "submission.py"
        path.write_text(textwrap.dedent(source))
        return evaluate_file(path, task=task, device="cpu", mode=mode, **kw)

    return run


@pytest.fixture
def honest():
    return HONEST_SOFTMAX.read_text()
