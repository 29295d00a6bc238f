"""How many timed batches the judge runs per side: min_rounds unless the budget runs out, and for
the budget's sake never fewer than min(min_rounds, BUDGET_ROUNDS) (a slow candidate must not run
past its time limit; 3 rounds still give each side three batches)."""
import json
import time
import types

import pytest

from evaluator.judge import batch
from evaluator.judge import timed


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


def _process(side: str) -> str:
    return "cand" if side == "cand" else "baseline"


def test_on_the_gpu_no_batch_follows_one_of_its_own_process(monkeypatch):
    monkeypatch.delenv("EVALUATOR_ROUND_ORDER", raising=False)
    sequence = list(timed.SIDES)  # the warm-up batches, which end with torch.compile
    for r in range(7):
        order = timed.round_order(r, "cuda")
        assert sorted(order) == ["cand", "cand", "compile", "eager"], order
        sequence += order
    pairs = list(zip(sequence[3:], sequence[2:]))
    assert all(_process(a) != _process(b) for a, b in pairs), sequence
    # each baseline side follows the candidate, and each takes both places in turn
    assert [timed.round_order(r, "cuda")[1] for r in range(4)] == ["eager", "compile", "eager", "compile"]


def test_the_cpu_and_the_operator_rotate(monkeypatch):
    assert [timed.round_order(r, "cpu") for r in range(3)] == [
        ["cand", "eager", "compile"], ["eager", "compile", "cand"], ["compile", "cand", "eager"]]
    monkeypatch.setenv("EVALUATOR_ROUND_ORDER", "rotate")
    assert timed.round_order(1, "cuda") == ["eager", "compile", "cand"]


def test_a_round_ratio_pairs_the_means_of_each_round():
    cand = timed.by_round([1.0, 3.0, 2.0, 2.0, 4.0, 4.0], [0, 0, 1, 1, 2, 2])
    assert cand == [2.0, 2.0, 4.0]
    base = timed.by_round([4.0, 6.0, 8.0], [0, 1, 2])
    assert timed.round_ratio(base, cand) == 2.0  # ratios 2, 3, 2


def test_a_whole_timing_phase_in_the_gpu_order(evaluate, honest, tmp_path, monkeypatch):
    # the GPU's order on the CPU: two candidate batches a round, each baseline batch scored
    # against the mean of the candidate's two in its round
    gpu_order = timed.round_order
    monkeypatch.setattr(timed, "round_order", lambda r, device: gpu_order(r, "cuda"))
    monkeypatch.delenv("EVALUATOR_ROUND_ORDER", raising=False)
    monkeypatch.setitem(timed.REPS, "quick", (1, 3, 3, 1.0, 1e9))
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(tmp_path / "samples"))
    report = evaluate(honest, mode="ranked")
    assert report["verdict"] == "verified", report["reasons"]
    [path] = (tmp_path / "samples").glob("softmax-*.json")
    [row] = json.loads(path.read_text())["shapes"]
    assert {side: len(row[side]) for side in timed.SIDES} == {"cand": 6, "eager": 3, "compile": 3}
    assert row["rounds"] == {"cand": [0, 0, 1, 1, 2, 2], "eager": [0, 1, 2], "compile": [0, 1, 2]}
    shape = report["shapes"][0]
    assert shape["batches"] == 6

    def per_call(side):  # as the judge reads each batch (batch.per_call)
        batches = [types.SimpleNamespace(**b) for b in row[side]]
        return batch.per_call(batches, row["overheads"][side], row["calls"][side])

    for base, key in (("compile", "speedup_vs_compile"), ("eager", "speedup_vs_eager")):
        expected = timed.round_ratio(timed.by_round(per_call(base), row["rounds"][base]),
                                     timed.by_round(per_call("cand"), row["rounds"]["cand"]))
        assert shape[key] == pytest.approx(expected, rel=1e-9)


def _aged(seconds: float, device: str = "cuda", quick: bool = False):
    return types.SimpleNamespace(device=device, setup=types.SimpleNamespace(quick=quick), t0=time.monotonic() - seconds)


def test_on_the_gpu_the_rounds_run_until_the_evaluation_reaches_its_age(monkeypatch):
    monkeypatch.delenv("EVALUATOR_ROUNDS_UNTIL_S", raising=False)
    least = timed.REPS["cuda"][4]
    young = timed.ROUNDS_UNTIL_S - least - 6.0  # earlier phases quick: more than the least
    assert timed.rounds_budget(_aged(young), least) == pytest.approx(least + 6.0, abs=0.05)
    # an evaluation whose earlier phases were slow keeps the least budget, never less
    assert timed.rounds_budget(_aged(timed.ROUNDS_UNTIL_S), least) == least
    # and none gets more than the most
    assert timed.rounds_budget(_aged(0.0), least) == timed.ROUNDS_MAX_S


def test_the_cpu_the_quick_mode_and_the_operator_keep_the_least(monkeypatch):
    monkeypatch.delenv("EVALUATOR_ROUNDS_UNTIL_S", raising=False)
    assert timed.rounds_budget(_aged(0.0, device="cpu"), 30.0) == 30.0
    assert timed.rounds_budget(_aged(0.0, quick=True), 5.0) == 5.0
    monkeypatch.setenv("EVALUATOR_ROUNDS_UNTIL_S", "0")
    assert timed.rounds_budget(_aged(0.0), 10.0) == 10.0
    monkeypatch.setenv("EVALUATOR_ROUNDS_UNTIL_S", "not a number")
    assert timed.rounds_budget(_aged(0.0), 10.0) == timed.ROUNDS_MAX_S


def test_the_operator_sets_the_cpus_budget_and_nothing_else(monkeypatch):
    monkeypatch.delenv("EVALUATOR_ROUNDS_UNTIL_S", raising=False)
    monkeypatch.setenv("EVALUATOR_CPU_ROUNDS_S", "12")
    assert timed.rounds_budget(_aged(0.0, device="cpu"), 30.0) == 12.0
    assert timed.rounds_budget(_aged(0.0, device="cpu", quick=True), 5.0) == 5.0
    assert timed.rounds_budget(_aged(0.0), 10.0) == timed.ROUNDS_MAX_S  # the GPU's is its own
    for bad in ("not a number", "-1", "nan", "inf"):
        monkeypatch.setenv("EVALUATOR_CPU_ROUNDS_S", bad)
        assert timed.rounds_budget(_aged(0.0, device="cpu"), 30.0) == 30.0, bad
