"""evaluator/judge/write_readings.py: WriteReadings times each call's issue on the host, counts the
garbage collections that ran during the write, and leaves gc.callbacks as it found them."""
import gc
import time

from evaluator.judge import write_readings
from evaluator.judge.write_readings import WriteReadings


def test_issue_times_gc_and_counters():
    before = list(gc.callbacks)
    r = WriteReadings()
    assert len(gc.callbacks) == len(before) + 1
    for pause in (0.001, 0.03, 0.002):
        time.sleep(pause)
        r.call_issued()
    gc.collect()
    got = r.done()
    assert gc.callbacks == before
    assert set(got) == {"host_ms", "issue_max_ms", "issue_median_ms", "gc_ms", "switches", "waits", "faults",
                        "major_faults"}
    assert len(r.issue_ms) == 3
    assert 30 <= got["issue_max_ms"] < 1000 and got["issue_max_ms"] == max(r.issue_ms)
    assert got["issue_median_ms"] == sorted(r.issue_ms)[1] and got["issue_median_ms"] < got["issue_max_ms"]
    assert got["host_ms"] >= sum(r.issue_ms) - 0.01
    assert got["gc_ms"] > 0  # the gc.collect() above
    assert got["waits"] >= 3  # each sleep gave the CPU up
    assert all(got[k] >= 0 for k in ("switches", "faults", "major_faults"))


def test_a_write_of_no_calls_reads_zero():
    got = write_readings.WriteReadings().done()
    assert got["issue_max_ms"] == 0.0 and got["issue_median_ms"] == 0.0 and got["gc_ms"] == 0.0
