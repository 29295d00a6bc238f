"""How many timed batches the judge runs per side: min_rounds unless the budget runs out, and for
the budget's sake never fewer than min(min_rounds, BUDGET_ROUNDS) (a slow candidate must not run
past its time limit; 3 rounds still give each side three batches)."""
import json

import pytest

from evaluator import timed


def _batches(evaluate, honest, tmp_path, monkeypatch, reps) -> dict:
    monkeypatch.setitem(timed.REPS, "quick", reps)
    where = tmp_path / "samples"
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(where))
    report = evaluate(honest, mode="ranked")
    assert report["verdict"] == "verified", report["reasons"]
    [path] = where.glob("softmax-*.json")
    [row] = json.loads(path.read_text())["shapes"]
    assert report["shapes"][0]["batches"] == len(row["cand"])
    return {side: len(row[side]) for side in timed.SIDES}


@pytest.mark.parametrize("reps, rounds", [
    ((1, 4, 6, 1.0, 1e9), 4),   # stable at once: min_rounds decides
    ((1, 4, 6, 0.0, 1e9), 6),   # never stable, budget unlimited: max_rounds
    ((1, 4, 6, 0.0, 0.0), timed.BUDGET_ROUNDS),  # over budget at once: stops before min_rounds
    ((1, 2, 6, 0.0, 0.0), 2),   # min_rounds below BUDGET_ROUNDS: the budget stops at min_rounds
])
def test_rounds(evaluate, honest, tmp_path, monkeypatch, reps, rounds):
    assert _batches(evaluate, honest, tmp_path, monkeypatch, reps) == dict.fromkeys(timed.SIDES, rounds)


def test_stop_rule():
    assert timed.stop_rounds(5, stable=True, over=False, min_rounds=5)
    assert not timed.stop_rounds(4, stable=True, over=False, min_rounds=5)
    assert timed.stop_rounds(timed.BUDGET_ROUNDS, stable=False, over=True, min_rounds=8)
    assert not timed.stop_rounds(timed.BUDGET_ROUNDS - 1, stable=False, over=True, min_rounds=8)
