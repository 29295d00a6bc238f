"""timed.ratio_rel_se: the spread of a shape's per-round speedups that the site's tie rule reads."""
import math

import pytest

from evaluator.common import timing
from evaluator.judge import timed


def test_three_rounds_or_more_give_the_relative_standard_error_of_the_median():
    ratios = [1.0, 1.02, 0.98, 1.01, 0.99]
    assert timed.ratio_rel_se(ratios) == pytest.approx(timing.rel_se_of_median(ratios))
    assert 0 < timed.ratio_rel_se(ratios) < 0.02


def test_two_rounds_give_the_standard_error_of_their_mean():
    assert timed.ratio_rel_se([0.9, 1.1]) == pytest.approx(0.1)
    assert timed.ratio_rel_se([1.0, 1.0]) == 0.0


def test_one_round_or_none_gives_no_spread():
    assert timed.ratio_rel_se([1.2]) is None
    assert timed.ratio_rel_se([]) is None


def test_a_wider_spread_reads_wider():
    assert timed.ratio_rel_se([1.0, 1.2, 0.8, 1.1, 0.9]) > timed.ratio_rel_se([1.0, 1.02, 0.98, 1.01, 0.99])


def test_the_score_carries_the_spread_of_its_own_rounds():
    """score() reports the median of the per-round ratios and their spread from the same ratios."""
    from evaluator.judge.batch import Timed

    def t(window):
        return Timed(side="", window_ms=window, device_ms=window, gen_ms=0.0)

    got = {"cand": [t(10.0), t(10.0), t(10.0)], "eager": [t(20.0)] * 3, "compile": [t(10.0), t(11.0), t(9.0)]}
    rounds = {side: [0, 1, 2] for side in got}
    calls = {side: 1 for side in got}
    scored = timed.score(got, rounds, calls, "cpu")
    assert scored["speedup_rounds"] == 3
    assert math.isfinite(scored["speedup_vs_compile"])
    assert scored["speedup_vs_compile_rel_se"] is not None and scored["speedup_vs_compile_rel_se"] > 0
