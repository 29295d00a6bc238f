"""The GPU-only rule of evaluator/judge/touched.py replayed on the CPU: per-batch records of ranked
evaluations on lent GPUs (tests/data/gpu_records, index.json says what each is) go through the
judge's own functions, from the touched rounds to the score. Honest records must not flag;
hostile ones must flag or gain nothing over their honest twin; and the replay must give the
speedups the judge reported, so that a change of a bound is checked here without a GPU."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from evaluator.contract import readings
from evaluator.judge import timed
from evaluator.judge import touched
from evaluator.judge.batch import Timed

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_records"
INDEX = json.loads((DATA / "index.json").read_text())
GAIN = 1.01  # tests/exploits: LEFT_RUNNING_GAIN
FIELDS = {f.name for f in dataclasses.fields(Timed)}
ENTRIES = [(folder, name, meta) for folder, about in INDEX.items() for name, meta in about["records"].items()]
HONEST = [pytest.param(f, n, id=f"{f}/{n}") for f, n, m in ENTRIES if m["kind"] == "honest"]
HOSTILE = [pytest.param(f, n, id=f"{f}/{n}") for f, n, m in ENTRIES if m["kind"] == "hostile"]
HOSTILE_READINGS = [pytest.param(folder, rec, id=f"{folder}/{rec['name']}") for folder, about in INDEX.items()
                    if about.get("readings", {}).get("kind") == "hostile"
                    for rec in json.loads((DATA / folder / about["readings"]["file"]).read_text())]
REPORTED = [pytest.param(f, n, id=f"{f}/{n}") for f, n, m in ENTRIES if m.get("speedup_vs_compile")]


def _shapes(folder: str, name: str) -> list[tuple[dict, dict, dict]]:
    """(got, rounds, calls) of every benchmark shape of a record, as the judge held them."""
    data = json.loads((DATA / folder / f"{name}.json").read_text())
    out = []
    for shape in data["shapes"]:
        got = {side: [Timed(**{k: v for k, v in t.items() if k in FIELDS}) for t in shape[side]]
               for side in timed.SIDES}
        out.append((got, shape["rounds"], shape["calls"]))
    return out


def replay(folder: str, name: str, rule=touched.flags) -> dict:
    """What the judge decides from a record under `rule`: flagged, rounds left out, and the two
    speedups (geometric mean over shapes, as the report gives them)."""
    flagged, left_out, vs_compile, vs_eager = False, 0, [], []
    for got, rounds, calls in _shapes(folder, name):
        found = touched.touched_rounds(got, rounds)
        total = len(set(rounds["cand"]))
        if found:
            got, rounds = touched.untouched(got, rounds, found)
            left_out += total - len(set(rounds["cand"]))
            flagged = flagged or rule(found, total)
        scored = timed.score(got, rounds, calls, "cuda")
        vs_compile.append(scored["speedup_vs_compile"])
        vs_eager.append(scored["speedup_vs_eager"])
    mean = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))  # noqa: E731
    return {"flagged": flagged, "left_out": left_out, "speedup_vs_compile": mean(vs_compile),
            "speedup_vs_eager": mean(vs_eager)}


def the_rule_that_stood(found: dict, total: int) -> bool:
    """Before GPU readings: any touched round flagged, a slow write as much as a waiting probe."""
    return bool(found)


@pytest.mark.parametrize("folder,name", HONEST)
def test_honest_records_are_not_flagged(folder, name):
    assert not replay(folder, name)["flagged"]


def test_the_honest_records_hold_slow_writes_that_the_old_rule_flagged():
    """The data can fail the rule: the honest records taken while the checker still compiled
    inside its writes flag under the rule that stood, and each has rounds left out."""
    before = [n for f, n, m in ENTRIES if f == "h100-before-fix" and m["kind"] == "honest"]
    assert before
    for name in before:
        assert replay("h100-before-fix", name, the_rule_that_stood)["flagged"], name
        assert replay("h100-before-fix", name)["left_out"] >= 1, name


@pytest.mark.parametrize("folder,name", HOSTILE)
def test_hostile_records_flag_or_gain_nothing(folder, name):
    meta = INDEX[folder]["records"][name]
    got, twin = replay(folder, name), replay(folder, meta["twin"])
    gained = [k for k in ("speedup_vs_compile", "speedup_vs_eager") if got[k] > GAIN * twin[k]]
    assert got["flagged"] or not gained, (name, {k: (got[k], twin[k]) for k in gained})


def test_work_that_reaches_every_round_flags_on_the_probe_alone():
    """The spin through every round: its probes flag it even with the write rule left out."""
    only_device = lambda found, total: any(r.kind in touched.DEVICE_KINDS for rs in found.values() for r in rs)  # noqa: E731
    assert replay("h100", "left_running_all", only_device)["flagged"]


@pytest.mark.parametrize("folder,name", REPORTED)
def test_the_replay_gives_the_judges_speedups(folder, name):
    meta = INDEX[folder]["records"][name]
    got = replay(folder, name)
    assert got["speedup_vs_compile"] == pytest.approx(meta["speedup_vs_compile"], rel=1e-3)
    if "speedup_vs_eager" in meta:
        assert got["speedup_vs_eager"] == pytest.approx(meta["speedup_vs_eager"], rel=1e-3)


def test_the_recorded_gpu_states_of_honest_runs_are_not_throttled():
    """gpu_throttled replayed on the NVML readings the same runs reported before and after timing
    (an H100 at 1980 MHz throughout; transformer_block's reading after timing named the power cap,
    which an honest run at full load reaches)."""
    from evaluator.judge import gpustate

    states = [m["gpu_state"] for _, _, m in ENTRIES if m.get("gpu_state")]
    assert len(states) >= 5
    for state in states:
        assert gpustate.throttled(state["before"], state["after"]) is None, state
    # the same readings with the SM clock fallen by a quarter on a busy GPU do throttle
    before, after = states[0]["before"], dict(states[0]["after"], sm_mhz=int(states[0]["before"]["sm_mhz"] * 0.75))
    assert gpustate.throttled(before, after)


def test_there_are_hostile_readings():
    assert len(HOSTILE_READINGS) >= 4


@pytest.mark.parametrize("folder,rec", HOSTILE_READINGS)
def test_hostile_gpu_readings_are_caught_by_one_rule_or_another(folder, rec):
    """The attacks recorded on a GPU with their reports' readings: each was flagged, and the replay
    finds the rule that flags it. The left_running kernels run while the runner is stopped between
    batches, not on a thread of their own and not after the re-check, so the thread count and the
    probe after the re-check read them as honest; the touched-rounds rule over their per-batch
    records is the one that must catch them."""
    got = rec["readings"]
    assert rec["verdict"] == "flagged"
    by_readings = readings.busy_after_recheck(got) or bool(readings.threads_over_base(got))
    by_rounds = replay(folder, rec["name"])["flagged"]
    assert by_readings or by_rounds, rec["name"]
