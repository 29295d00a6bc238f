"""The wall-clock cross-check: the trusted baseline's own jitter widens the tolerance, capped."""
from evaluator import checks


def calls(excess_ms, n=10, reported=2.5, overhead=0.3):
    # wall = what the runner reported + the round trip + unexplained extra
    return [(reported, reported + overhead + excess_ms, 0.0)] * n


def test_a_steady_excess_is_flagged_without_jitter():
    tol = checks.CLOCK_REL["cuda"] * 2.5 + checks.CLOCK_ABS_MS["cuda"]
    assert checks.clock_disagreement(calls(tol + 0.2), overhead_ms=0.3, device="cuda")
    assert checks.clock_disagreement(calls(tol - 0.05), overhead_ms=0.3, device="cuda") is None


def test_the_baselines_jitter_is_allowed():
    tol = checks.CLOCK_REL["cuda"] * 2.5 + checks.CLOCK_ABS_MS["cuda"]
    assert checks.clock_disagreement(calls(tol + 0.2), overhead_ms=0.3, device="cuda", jitter_ms=0.3) is None


def test_the_allowance_is_capped():
    # a baseline that jitters by seconds does not license a candidate hiding seconds of work
    tol = checks.CLOCK_REL["cuda"] * 2.5 + checks.CLOCK_ABS_MS["cuda"] + checks.JITTER_CAP_MS["cuda"]
    msg = checks.clock_disagreement(calls(tol + 0.2), overhead_ms=0.3, device="cuda", jitter_ms=50.0)
    assert msg and "10 of 10 calls disagree" in msg
    assert checks.clock_disagreement(calls(0.0), overhead_ms=0.3, device="cuda", jitter_ms=-1.0) is None
