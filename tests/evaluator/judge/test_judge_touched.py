"""evaluator/judge/touched.py: which timed rounds ran beside work a stopped runner left on the GPU.
The readings are the shapes a real H200 run gives (docs/evaluator.md, "Work left running"): an
idle probe a few hundredths of a millisecond, baselines' device times within a few per cent,
and under a left spin the probe a time slice, the device time doubled, the writes four times."""
from __future__ import annotations

import random

from evaluator.judge import touched
from evaluator.judge.batch import Timed

ROUNDS = 10
CALLS = 70


def _batches(seed=0, spoil=None):
    """got, rounds of ROUNDS honest rounds (cand, eager, cand, compile); `spoil[(side, round)]`
    replaces fields of that side's batches in that round."""
    rng = random.Random(seed)
    got = {"cand": [], "eager": [], "compile": []}
    rounds = {"cand": [], "eager": [], "compile": []}
    per_call = {"cand": 0.15, "eager": 0.28, "compile": 0.15}
    for r in range(ROUNDS):
        for side in ("cand", "eager", "cand", "compile"):
            jitter = 1 + rng.uniform(-0.03, 0.03)
            fields = dict(window_ms=per_call[side] * CALLS * jitter + 1.2, device_ms=per_call[side] * CALLS * jitter,
                          gen_ms=50 * jitter, calls=CALLS, fresh=True)
            fields.update(probe_before_ms=0.03 * jitter, probe_after_ms=0.025 * jitter)
            fields.update((spoil or {}).get((side, r), {}))
            got[side].append(Timed(side, **fields))
            rounds[side].append(r)
    return got, rounds


def test_honest_rounds_are_untouched():
    for seed in range(20):
        assert touched.touched_rounds(*_batches(seed)) == {}


def test_a_probe_that_waited_marks_its_round():
    found = touched.touched_rounds(*_batches(spoil={("eager", 3): {"probe_before_ms": 1.8}}))
    assert list(found) == [3]
    assert found[3][0].kind == "probe"
    assert "probe kernel before the eager baseline's batch waited 1.8 ms" in str(found[3][0])


def test_a_baseline_slowed_on_its_own_clock_marks_its_round():
    slow = {"device_ms": 0.28 * CALLS * 2.1}
    found = touched.touched_rounds(*_batches(spoil={("eager", 5): slow}))
    assert list(found) == [5] and "eager baseline took" in str(found[5][0]) and found[5][0].kind == "device"


def test_a_slow_write_of_any_side_marks_its_round():
    found = touched.touched_rounds(*_batches(spoil={("cand", 7): {"gen_ms": 210.0}}))
    assert list(found) == [7] and "writing the submission's inputs" in str(found[7][0]) and found[7][0].kind == "write"


def test_every_round_touched_is_still_found():
    """Medians over rounds all slowed see nothing; the probe's floor does."""
    spoil = {(side, r): {"probe_before_ms": 1.5, "probe_after_ms": 1.2, "device_ms": 0.28 * CALLS * 2}
             for r in range(ROUNDS) for side in ("eager", "compile")}
    found = touched.touched_rounds(*_batches(spoil=spoil))
    assert sorted(found) == list(range(ROUNDS))


def test_a_kernel_the_candidate_left_waiting_marks_its_round():
    """Its own checker's probe right after the fill: a kernel left resident could read the inputs
    as they are written."""
    found = touched.touched_rounds(*_batches(spoil={("cand", 4): {"probe_before_ms": 2.5}}))
    assert list(found) == [4] and found[4][0].kind == "probe"
    assert "before the submission's batch" in str(found[4][0])


def test_a_probe_or_a_baseline_clock_flags_even_in_one_round():
    for spoil in ({("compile", 2): {"probe_after_ms": 2.3}}, {("eager", 2): {"device_ms": 0.28 * CALLS * 2}}):
        found = touched.touched_rounds(*_batches(spoil=spoil))
        assert list(found) == [2] and touched.flags(found, ROUNDS)


def test_probes_a_little_over_the_floor_flag_only_when_they_reach_many_rounds():
    """Honest runs on an H100 read probes of 0.281 and 0.314 ms in two rounds each: those rounds
    are left out of the score, and flag only as slow writes would, over a quarter of the rounds."""
    found = touched.touched_rounds(*_batches(spoil={("cand", 3): {"probe_after_ms": 0.314},
                                                    ("compile", 5): {"probe_before_ms": 0.281}}))
    assert sorted(found) == [3, 5] and {r.kind for rs in found.values() for r in rs} == {"slow_probe"}
    assert not touched.flags(found, ROUNDS)
    many = touched.touched_rounds(*_batches(spoil={("cand", r): {"probe_after_ms": 0.3} for r in (0, 2, 4)}))
    assert touched.flags(many, ROUNDS)  # 3 of 10
    resident = touched.touched_rounds(*_batches(spoil={("cand", 3): {"probe_after_ms": 1.2}}))
    assert touched.flags(resident, ROUNDS)


def test_isolated_slow_writes_are_left_out_without_a_flag():
    """A checker's write is its own host's time too: a slow one alone (a compile or a stall of
    that process) leaves its round out of the score and flags nothing."""
    spoil = {("cand", 1): {"gen_ms": 230.0}, ("eager", 6): {"gen_ms": 200.0}}
    found = touched.touched_rounds(*_batches(spoil=spoil))
    assert sorted(found) == [1, 6] and not touched.flags(found, ROUNDS)


def test_slow_writes_that_reach_many_rounds_flag():
    spoil = {("cand", r): {"gen_ms": 200.0} for r in (0, 2, 4)}
    found = touched.touched_rounds(*_batches(spoil=spoil))
    assert len(found) == 3 and touched.flags(found, ROUNDS)  # 3 of 10: over a quarter
    assert not touched.flags(dict(list(found.items())[:2]), ROUNDS)


def test_touched_rounds_leave_the_score_whole_rounds_at_a_time():
    got, rounds = _batches()
    kept_got, kept_rounds = touched.untouched(got, rounds, {2: ["x"], 6: ["y"]})
    for side in got:
        assert 2 not in kept_rounds[side] and 6 not in kept_rounds[side]
        assert len(kept_got[side]) == len(kept_rounds[side])
    assert len(kept_rounds["cand"]) == 2 * (ROUNDS - 2) and len(kept_rounds["eager"]) == ROUNDS - 2


def test_nothing_is_dropped_when_every_round_is_touched():
    got, rounds = _batches()
    assert touched.untouched(got, rounds, {r: ["x"] for r in range(ROUNDS)}) == (got, rounds)


def test_the_reason_counts_the_rounds_and_quotes_the_readings():
    text = touched.reason("benchmark shape {M=64}", {1: ["a", "b"], 4: ["c", "d"]}, 10, scored=True)
    assert text.startswith("benchmark shape {M=64}: 2 of 10 timed rounds ran beside other work on the GPU")
    assert "a; b; c (and 1 more readings)" in text
    assert "not a clean measurement" in touched.reason("s", {0: ["a"]}, 1, scored=False)


def test_the_cpu_checker_has_no_probe():
    from evaluator.judge.checker import Checker
    from evaluator.tasks import get_task

    assert Checker(get_task("softmax"), "cpu").probe() == 0.0
