"""The judge's thread-count rule and its busy probe after the re-check (evaluator/contract/readings.py),
replayed on the CPU over the readings that ranked evaluations on lent GPUs wrote into their reports
(tests/data/gpu_records, index.json: the entries with `readings`). Honest readings must pass both
rules; a planted reading past either bound must flag, so that a change of a bound is checked here
without a GPU."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.contract import readings

DATA = Path(__file__).resolve().parents[2] / "data" / "gpu_records"
INDEX = json.loads((DATA / "index.json").read_text())
RECORDS = [(folder, rec) for folder, about in INDEX.items() if about.get("readings", {}).get("kind") == "honest"
           for rec in json.loads((DATA / folder / about["readings"]["file"]).read_text())]
HONEST = [pytest.param(rec, id=f"{folder}/{rec['name']}") for folder, rec in RECORDS]


def test_there_are_gpu_readings():
    assert len(RECORDS) >= 10


@pytest.mark.parametrize("rec", HONEST)
def test_honest_readings_pass_both_rules(rec):
    got = rec["readings"]
    assert rec["verdict"] == "verified"
    assert not readings.busy_after_recheck(got), got
    assert readings.threads_over_base(got) == {}, got
    # the readings are whole: every phase counted, the probe read before and while stopped
    assert {f"threads_{p}" for p in readings.THREAD_PHASES} <= set(got)
    assert got["probe_reference_ms"] > 0 and got["probe_stopped_ms"] > 0


def test_honest_probe_has_headroom():
    """The bound stands well clear of what honest runs read: the largest honest slowdown is under
    the bound by more than the spread of the honest readings themselves."""
    slow = [rec["readings"]["probe_slowdown"] for _, rec in RECORDS]
    assert max(slow) < readings.PROBE_SLOWDOWN - (max(slow) - min(slow))


@pytest.mark.parametrize("rec", HONEST[:3])
def test_planted_breaches_flag(rec):
    got = dict(rec["readings"])
    busy = {**got, "probe_slowdown": readings.PROBE_SLOWDOWN * 1.05}
    assert readings.busy_after_recheck(busy)
    grown = {**got, "threads_timing": got["threads_base"] + 1}
    assert readings.threads_over_base(grown) == {"timing": got["threads_base"] + 1}


def test_older_reports_without_readings_flag_nothing():
    assert not readings.busy_after_recheck({})
    assert readings.threads_over_base({}) == {}
