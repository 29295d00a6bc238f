"""The judge's per-batch samples (EVALUATOR_SAMPLES_DIR): what every score is made of. The score
must follow from the judge's own windows and the trusted baseline runner's clock alone."""
import copy
import statistics

import pytest

from evaluator.judge import timed


def _score(row: dict) -> float:
    """speedup vs torch.compile recomputed from the samples: the median overhead of the baseline
    batches (window minus the baseline runner's own time) off every window, per call."""
    gaps = sorted(t["window_ms"] - t["device_ms"] for t in row["eager"] + row["compile"])
    overhead = max(0.0, gaps[len(gaps) // 2])

    def per_call(side):
        return [max(t["window_ms"] - overhead, 1e-6) / row["calls"][side] for t in row[side]]

    return statistics.median(k / c for k, c in zip(per_call("compile"), per_call("cand")))


def test_samples_are_written_and_reproduce_the_score(honest_ranked):
    report, samples = honest_ranked
    assert report["verdict"] == "verified", report["reasons"]
    [row] = samples["shapes"]
    assert row["shape"] == report["shapes"][0]["shape"]
    for side in timed.SIDES:
        assert row[side] and all(t["window_ms"] > 0 for t in row[side])
        assert len(row[side]) == report["shapes"][0]["batches"]
    assert report["speedup_vs_compile"] == pytest.approx(_score(row), rel=1e-9)
    # on the CPU every side loses the one pooled overhead (the GPU takes each side's own and the
    # candidate's by window length: batch.candidate_overhead)
    assert row["overheads"] == {side: row["overhead_ms"] for side in timed.SIDES}
    # where the shape's timing went, and no more than the whole timing phase
    spent = row["spent"]
    budget = spent.pop("budget_s")
    assert budget == timed.REPS["quick"][4]  # quick mode, these tests' default: the least budget
    assert set(spent) == {"sizing_s", "warmup_s", "rounds_s"} and all(v > 0 for v in spent.values())
    assert sum(spent.values()) < report["phases"]["timing_s"]


def test_the_candidates_own_times_do_not_enter_the_score(honest_ranked):
    """The same samples with every time the candidate's runner reported replaced: the score
    recomputed from them does not move."""
    report, samples = honest_ranked
    [row] = copy.deepcopy(samples["shapes"])
    for t in row["cand"]:
        t["device_ms"] = 0.0
    assert _score(row) == pytest.approx(report["speedup_vs_compile"], rel=1e-9)


def test_no_samples_without_the_setting(evaluate, honest, tmp_path, monkeypatch):
    monkeypatch.delenv("EVALUATOR_SAMPLES_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    evaluate(honest, mode="ranked")
    assert not list(tmp_path.rglob("softmax-*.json"))
