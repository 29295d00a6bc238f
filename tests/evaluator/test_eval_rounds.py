"""How many timing rounds the judge runs: min_rounds unless the budget runs out, and for the
budget's sake never fewer than min(min_rounds, BUDGET_ROUNDS) (the CPU's 10-round floor must not
let a slow candidate run past its time limit; 3 rounds still give each side three blocks)."""
import json

import pytest

from evaluator import judge


def _calls(evaluate, honest, tmp_path, monkeypatch, reps) -> dict:
    monkeypatch.setitem(judge.REPS, "quick", reps)
    where = tmp_path / "samples"
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(where))
    report = evaluate(honest, mode="ranked")
    assert report["verdict"] == "verified", report["reasons"]
    [path] = where.glob("softmax-*.json")
    [row] = json.loads(path.read_text())["shapes"]
    return {side: len(row[side]) for side in ("candidate", "eager", "compile")}


@pytest.mark.parametrize("reps, rounds", [
    ((1, 2, 4, 6, 1.0, 1e9), 4),   # stable at once: min_rounds decides
    ((1, 2, 4, 6, 0.0, 1e9), 6),   # never stable, budget unlimited: max_rounds
    ((1, 2, 4, 6, 0.0, 0.0), judge.BUDGET_ROUNDS),  # over budget at once: stops before min_rounds
    ((1, 2, 2, 6, 0.0, 0.0), 2),   # min_rounds below BUDGET_ROUNDS: the budget stops at min_rounds
])
def test_rounds(evaluate, honest, tmp_path, monkeypatch, reps, rounds):
    block = reps[1]
    assert _calls(evaluate, honest, tmp_path, monkeypatch, reps) == dict.fromkeys(
        ("candidate", "eager", "compile"), rounds * block)
