"""Evaluator tests run the real judge and runner processes on the CPU (Triton interpreter), with
EVALUATOR_QUICK=1 so that each ranked evaluation takes seconds."""
import json
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


@pytest.fixture(scope="session")
def honest_ranked(tmp_path_factory):
    """(report, samples) of one ranked evaluation of the honest kernel with EVALUATOR_SAMPLES_DIR
    set, shared by the tests that only read them (treat both as read-only)."""
    from evaluator.api import evaluate_source

    where = tmp_path_factory.mktemp("samples")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EVALUATOR_SAMPLES_DIR", str(where))
        report = evaluate_source(HONEST_SOFTMAX.read_text(), task="softmax", device="cpu", mode="ranked")
    [path] = sorted(where.glob("softmax-*.json"))
    return report, json.loads(path.read_text())


@pytest.fixture
def pipe():
    """(read end, write end) of a fresh pipe, both closed afterwards if still open."""
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass
