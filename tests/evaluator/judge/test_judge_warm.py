"""evaluator/judge/warm.py: a task's baselines compiled into the judge's cache with no submission, then
recognised as warm; `python -m evaluator warm` reports each task and refuses unknown ones."""
from __future__ import annotations

import subprocess
import sys

from evaluator.judge.warm import warm


def test_warm_compiles_once_and_then_finds_the_task_warm(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_QUICK", "1")
    monkeypatch.setenv("EVALUATOR_JUDGE_CACHE", str(tmp_path / "cache"))
    first = warm("softmax", "cpu")
    assert first["state"] == "compiled" and first["seconds"] > 0, first
    (marker,) = (tmp_path / "cache" / "compiled").iterdir()
    assert marker.name.startswith("softmax-cpu-")
    second = warm("softmax", "cpu")
    assert second["state"] == "already warm", second
    assert marker.exists() and len(list((tmp_path / "cache" / "compiled").iterdir())) == 1


def test_the_warm_command_reports_per_task_and_refuses_unknown_ones(tmp_path):
    out = tmp_path / "warm.json"
    bad = subprocess.run([sys.executable, "-m", "evaluator", "warm", "--task", "nope", "--json", str(out)],
                         check=False, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "unknown task 'nope'" in bad.stderr
    assert not out.exists()

