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
    set, shared by the tests that only read them (treat both as read-only). Under pytest-xdist
    every worker is a session of its own: the first worker that asks evaluates and leaves both in
    the run's common temporary directory, the others wait for it and read them (the recipe in
    pytest-xdist's documentation), so the run makes one evaluation, not one per worker."""
    from filelock import FileLock

    if not os.environ.get("PYTEST_XDIST_WORKER"):  # one process: nobody to share with
        return _honest_ranked(tmp_path_factory.mktemp("samples"))
    # the workers' temporary directories are popen-gw0, popen-gw1, ... in one directory of this run
    shared = tmp_path_factory.getbasetemp().parent / "honest_ranked.json"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            return tuple(json.loads(shared.read_text()))
        found = _honest_ranked(tmp_path_factory.mktemp("samples"))
        shared.write_text(json.dumps(found))
    return found


def _honest_ranked(where: Path) -> tuple[dict, dict]:
    from evaluator.api import evaluate_source

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
