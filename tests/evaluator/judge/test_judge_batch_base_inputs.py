"""Which batches get inputs written for them: every batch of every side by default; with
EVALUATOR_REUSE_BASE_INPUTS=1 the trusted baselines run again on the inputs their checker last
wrote, with fresh inputs every REFILL_EVERY rounds."""
import json

import pytest

from evaluator.judge import batch
from evaluator.judge import timed
from evaluator.judge.checker import Checker
from evaluator.tasks import get_task


def test_every_batch_gets_fresh_inputs(honest_ranked):
    _, samples = honest_ranked
    [row] = samples["shapes"]
    for side in timed.SIDES:
        assert all(t["fresh"] and t["calls"] == row["calls"][side] for t in row[side])


def test_baselines_reuse_their_inputs_when_asked(evaluate, honest, tmp_path, monkeypatch):
    monkeypatch.setenv("EVALUATOR_REUSE_BASE_INPUTS", "1")
    monkeypatch.setattr(timed, "REFILL_EVERY", 1)
    monkeypatch.setenv("EVALUATOR_SAMPLES_DIR", str(tmp_path / "samples"))
    report = evaluate(honest, mode="ranked")
    assert report["verdict"] == "verified", report["reasons"]
    [path] = (tmp_path / "samples").glob("softmax-*.json")
    [row] = json.loads(path.read_text())["shapes"]
    assert all(t["fresh"] for t in row["cand"])
    rounds = len(row["cand"])
    assert rounds >= 2
    # round 0 follows the warm-up, which wrote the baselines' inputs: both run on them again
    assert not row["eager"][0]["fresh"] and not row["compile"][0]["fresh"]
    # every later round (REFILL_EVERY = 1) writes them once, for the first baseline side of the
    # round (round r starts with SIDES[r % 3]), and the other side reuses them
    for r in range(1, rounds):
        order = [s for s in timed.SIDES[r % 3:] + timed.SIDES[:r % 3] if s != "cand"]
        assert row[order[0]][r]["fresh"] and not row[order[1]][r]["fresh"], r


def test_a_refresh_needs_written_inputs():
    checker = Checker(get_task("softmax"), "cpu")
    with pytest.raises(ValueError, match="no inputs"):
        checker.refresh()


def test_the_candidates_overhead_follows_its_window_within_the_baselines():
    points = [(21.7, 1.72), (12.1, 1.43)]  # eager, torch.compile: (median window, own overhead)
    assert batch.candidate_overhead(12.1, points) == 1.43
    assert abs(batch.candidate_overhead(16.9, points) - (1.43 + 1.72) / 2) < 1e-9
    # never outside the range the trusted sides span
    assert batch.candidate_overhead(8.0, points) == 1.43
    assert batch.candidate_overhead(40.0, points) == 1.72
    assert abs(batch.candidate_overhead(10.0, [(12.0, 1.2), (12.0, 1.4)]) - 1.3) < 1e-9


def test_a_longer_window_never_pays_for_itself():
    # baselines whose overhead grows steeply with the window: the slope is capped, so a candidate
    # that stretches its windows by d ms loses at least d / 2 of it, whatever the baselines did
    for points in ([(10.0, 1.0), (11.0, 3.0)], [(10.0, 3.0), (11.0, 1.0)], [(12.0, 1.4), (21.0, 1.7)]):
        for w in (9.0, 10.2, 10.5, 10.8, 15.0):
            for d in (0.1, 0.5, 2.0):
                before = w - batch.candidate_overhead(w, points)
                after = w + d - batch.candidate_overhead(w + d, points)
                assert after - before >= d * (1 - batch.MAX_OVERHEAD_SLOPE) - 1e-9, (points, w, d)


def test_on_the_gpu_each_side_loses_its_own_overhead():
    """timed.overheads with the GPU's batches (no GPU needed: it reads only the Timed)."""
    def side(name, window, over, n=5):
        return [batch.Timed(name, window + 0.01 * i, window + 0.01 * i - over, 1.0, calls=10) for i in range(n)]

    got = {"cand": side("cand", 10.6, 99.0),  # its claimed events are ignored
           "eager": side("eager", 21.7, 1.72), "compile": side("compile", 12.1, 1.43)}
    over = timed.overheads(got, "cuda")
    assert over["eager"] == pytest.approx(1.72) and over["compile"] == pytest.approx(1.43)
    assert over["cand"] == pytest.approx(1.43)  # faster than torch.compile: its overhead, no lower
    got["cand"] = side("cand", 16.9, 0.0)
    assert over["eager"] > timed.overheads(got, "cuda")["cand"] > over["compile"]
    cpu = timed.overheads(got, "cpu")
    assert len(set(cpu.values())) == 1
