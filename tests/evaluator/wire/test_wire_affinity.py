"""evaluator/wire/affinity.py: the optional pinning of a GPU evaluation's processes to cores."""
import os
import subprocess
import sys

import pytest

from evaluator.wire import affinity

CHILD = r"""
import os, sys, threading, time
ready = threading.Event()
threading.Thread(target=lambda: (ready.set(), time.sleep(60)), daemon=True).start()
ready.wait()
print("up", flush=True)
sys.stdin.readline()  # pinned now: a thread started after it inherits the mask
seen = []
t = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))
t.start(); t.join()
print(seen[0], flush=True)
"""


def test_each_role_gets_a_core_of_its_own_and_core_zero_is_spared():
    assert affinity.plan(set(range(16))) == dict(zip(affinity.ROLES, [1, 2, 3, 4, 5]))
    assert affinity.plan({0, 2, 4, 6, 8}) == dict(zip(affinity.ROLES, [0, 2, 4, 6, 8]))
    assert affinity.plan({0, 1, 2, 3}) is None


def test_shared_pinning_puts_both_sides_on_the_same_cores(monkeypatch):
    got = affinity.plan(set(range(16)), shared=True)
    assert got == {"judge": 1, "cand_checker": 2, "base_checker": 2, "cand_runner": 3, "base_runner": 3}
    assert affinity.plan({0, 1, 2}, shared=True) == {"judge": 0, "cand_checker": 1, "base_checker": 1,
                                                     "cand_runner": 2, "base_runner": 2}
    assert affinity.plan({0, 1}, shared=True) is None
    monkeypatch.setenv("EVALUATOR_PIN_CPUS", "shared")
    assert affinity.wanted("cuda") and affinity.plan(set(range(16))) == got


def test_only_gpu_evaluations_are_pinned_and_only_when_asked(monkeypatch):
    monkeypatch.delenv("EVALUATOR_PIN_CPUS", raising=False)
    assert not affinity.wanted("cuda")
    monkeypatch.setenv("EVALUATOR_PIN_CPUS", "1")
    assert affinity.wanted("cuda") and not affinity.wanted("cpu")


def test_every_thread_of_a_process_is_pinned_and_later_threads_inherit_it():
    core = max(os.sched_getaffinity(0))
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        tids = affinity.threads([child.pid])
        assert len(tids) >= 2
        got = affinity.pin({"cand_runner": [child.pid]}, {"cand_runner": core})
        assert got == {"cand_runner": core}
        assert all(os.sched_getaffinity(tid) == {core} for tid in tids)
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == f"[{core}]"
    finally:
        child.kill()
        child.wait()


def test_the_judge_gets_its_own_mask_back():
    before = os.sched_getaffinity(0)
    if len(before) < 2:
        pytest.skip("one core: pinning the judge changes nothing")
    pinned = affinity.Pinned({}, {"judge": min(before)})
    assert os.sched_getaffinity(0) == {min(before)}
    pinned.restore()
    assert os.sched_getaffinity(0) == before
