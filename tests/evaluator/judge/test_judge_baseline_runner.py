"""The trusted baseline runner times eager and torch.compile through the candidate's own harness
and protocol; it must never receive the submission (its program is made from the task name)."""
import ast
import os
import shutil
import tempfile

from evaluator.judge import baseline
from evaluator.judge.evaluation import Evaluation

MARKER = "submission_marker_7f3a1c"


def test_baseline_source_depends_on_the_task_name_only():
    text = baseline.source("softmax")
    assert "get_task('softmax').reference" in text and "torch.compile" in text
    assert "custom_kernel" in text and "compiled_kernel" in text
    work = baseline.Workdir("softmax")
    try:
        assert work.submission.read_text() == text
        assert work.path.stat().st_mode & 0o077 == 0  # the judge's own, closed to everyone else
    finally:
        work.remove()


def test_the_baseline_runner_never_receives_the_submission(honest):
    # a directory the runner (nobody, when the tests run as root) can write
    log_dir = tempfile.mkdtemp(prefix="evaluator-imports-")
    os.chmod(log_dir, 0o777)
    imports = os.path.join(log_dir, "imports.log")
    # the submission records every process that imports it: its command line
    source = (f"# {MARKER}\nimport sys as _sys\n"
              f"with open({imports!r}, 'a') as _f:\n    _f.write(repr(_sys.argv) + '\\n')\n"
              + honest)
    try:
        ev = Evaluation(source.encode(), task="softmax", device="cpu", mode="ranked")
        report = ev.run()
        with open(imports) as f:
            lines = f.read().splitlines()
    finally:
        shutil.rmtree(log_dir, ignore_errors=True)
    assert report["verdict"] != "rejected", report["reasons"]
    assert report["shapes"] and report["shapes"][0]["eager_ms"] > 0 and report["shapes"][0]["compile_ms"] > 0
    # imported once, by the candidate's runner only
    assert len(lines) == 1, lines
    argv = ast.literal_eval(lines[0])
    assert "--baseline" not in argv and str(ev.setup.work.submission) in argv
    # the baseline's program, and everything on its command line, is free of the submission
    assert ev.base is not None and ev.base.runner.pid != ev.runner.pid
    assert MARKER not in ev.base.work.text and ev.base.work.text == baseline.source("softmax")
    args = [str(a) for a in ev.base.runner.proc.args]
    assert "--baseline" in args and str(ev.base.work.submission) in args
    assert not any(str(ev.setup.work.path) in a for a in args)


def test_test_mode_starts_no_baseline_runner(evaluate, honest, tmp_path):
    ev = Evaluation(honest.encode(), task="softmax", device="cpu", mode="test")
    report = ev.run()
    assert report["verdict"] == "verified", report["reasons"]
    assert ev.base is None
