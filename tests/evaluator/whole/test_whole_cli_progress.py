"""The judge's progress: with EVALUATOR_PROGRESS_FILE set, a ranked evaluation writes its steps
in order (setup, compile, each correctness shape, each timing round, the re-check, the verdict),
and the runner, which imports the submission, never sees the variable."""
import json
import os
import subprocess
import sys
from pathlib import Path

from evaluator import progress_latest, progress_words

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "softmax.py"
LEAK = '''import os
print("PROGRESS_FILE_SEEN=" + repr(os.environ.get("EVALUATOR_PROGRESS_FILE")))
from evaluator.tasks import get_task
custom_kernel = get_task("softmax").reference
'''


def run(source: Path, path: Path, out: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "EVALUATOR_QUICK": "1", "EVALUATOR_PROGRESS_FILE": str(path)}
    return subprocess.run([sys.executable, "-m", "evaluator", "run", str(source), "--task", "softmax", "--device",
                           "cpu", "--mode", "ranked", "--json", str(out)], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)


def test_a_ranked_evaluation_writes_its_steps_in_order(tmp_path):
    path = tmp_path / "progress.jsonl"
    p = run(EXAMPLE, path, tmp_path / "r.json")
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    steps = [line["step"] for line in lines]
    assert steps[:3] == ["setup", "compile", "correctness"] and steps[-2:] == ["recheck", "verdict"]
    correctness = [line for line in lines if line["step"] == "correctness"]
    assert [c["k"] for c in correctness] == list(range(1, correctness[0]["n"] + 1))
    timing = [line for line in lines if line["step"] == "timing"]
    assert timing and timing[0]["round"] == 1 and timing[0]["shape"] == 1
    words = {progress_words(line) for line in lines}
    n = correctness[0]["n"]  # the public test shapes and the hidden ones drawn for this evaluation
    assert n > 6 and f"correctness: shape 1 of {n}" in words and len(words) >= 6
    assert progress_latest(str(path))["step"] == "verdict"


def test_the_runner_never_sees_where_the_progress_goes(tmp_path):
    source = tmp_path / "leak.py"
    source.write_text(LEAK)
    out = tmp_path / "r.json"
    p = run(source, tmp_path / "progress.jsonl", out)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "PROGRESS_FILE_SEEN=None" in json.loads(out.read_text())["logs"]
