"""evaluator/judge/evaluation.py: the evaluation's state is declared. Evaluation and each phase's
output are slots dataclasses, so an attribute no declaration names cannot be set (a phase that
tried would fail at once instead of leaving state nobody lists); every phase's output starts
unset."""
import dataclasses

import pytest

from evaluator.judge import baseline_compile
from evaluator.judge import correctness
from evaluator.judge import startup
from evaluator.contract import report
from evaluator.judge.evaluation import Evaluation
from evaluator.judge.link import Link

STATE = (Evaluation, startup.Setup, startup.Threads, baseline_compile.Baseline, correctness.Profiled, Link)


@pytest.mark.parametrize("cls", STATE, ids=lambda c: c.__name__)
def test_state_classes_are_slots_dataclasses(cls):
    assert dataclasses.is_dataclass(cls) and "__slots__" in cls.__dict__ and cls.__bases__ == (object,)
    assert set(cls.__slots__) == {f.name for f in dataclasses.fields(cls)}


def test_an_undeclared_attribute_cannot_be_set_on_an_evaluation():
    ev = Evaluation(b"", task="softmax", device="cpu", mode="ranked")
    with pytest.raises(AttributeError):
        ev.baseline_idle = True  # what baseline_compile once set beside the declared fields
    with pytest.raises(AttributeError):
        ev.task = None
    ev.in_batches = True  # a declared one can
    assert ev.in_batches is True


def test_a_new_evaluation_has_its_settings_and_no_phase_output():
    ev = Evaluation(b"src", task="softmax", device="cpu", mode="test", time_limit_s=12, scan=False)
    assert (ev.source, ev.task_name, ev.device, ev.mode, ev.time_limit_s, ev.scan) == (
        b"src", "softmax", "cpu", "test", 12, False)
    assert ev.setup is ev.base is ev.threads is ev.profiled is ev.runner is ev.link is None
    assert ev.checkers == {} and ev.codes == [] and ev.report["task"] == "softmax"
    assert 0 <= ev.master < 1 << 63
    other = Evaluation(b"src", task="softmax", device="cpu", mode="test")
    assert other.codes is not ev.codes and other.checkers is not ev.checkers


def test_a_phase_output_takes_only_its_fields():
    threads = startup.Threads(names_base=["python"], base=1, profiler_growth=0)
    threads.base += 2
    with pytest.raises(AttributeError):
        threads.extra = 1
    with pytest.raises(AttributeError):
        correctness.Profiled(shape={"M": 1}, out_numel=1).numel = 2


def test_close_of_an_evaluation_that_never_started_ends_nothing_and_raises_nothing():
    ev = Evaluation(b"", task="softmax", device="cpu", mode="ranked")
    ev.close()
    ev.remove_work()
    assert ev.runner_triton_cache() is None
    assert ev.report == report.empty(task="softmax", mode="ranked", device="cpu")  # no logs read
