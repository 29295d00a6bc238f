"""The GPU busy probe's decision (evaluator/common/timing.py, Probe): a slow reading while the runner is
stopped counts only when a second reading, after a pause, is slow too. The device is not needed
to test the decision: the probe's readings are scripted here; the GPU measures them for real in
the exploit tests on a GPU host (tests/exploits, a kernel left running)."""
import pytest

from evaluator.common import timing


class Scripted(timing.Probe):
    def __init__(self, reference: float, readings: list[float]):  # no device: readings given
        self.reference, self.samples, self.confirmed = reference, [], []
        self.readings = iter(readings)

    def once(self) -> float:
        return next(self.readings)


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(timing, "PROBE_PAUSE_S", 0.0)


def test_a_quiet_device_needs_no_confirmation():
    probe = Scripted(1.0, [1.0, 1.1, 0.9])
    probe.sample()
    assert not probe.slow()
    assert probe.slowdown() == pytest.approx(1.0)


def test_work_still_running_when_confirmed_is_flagged():
    probe = Scripted(1.0, [3.0, 2.8, 3.1] + [2.9] * 7)
    probe.sample()
    assert probe.slow()
    probe.confirm()
    assert not probe.slow()  # confirmed once, not again
    assert probe.slowdown() == pytest.approx(2.9)
    assert probe.slowdown() > timing.PROBE_SLOWDOWN
    assert "median 3 ms over 3 samples" in probe.describe() and "2.9 ms when confirmed" in probe.describe()


def test_a_burst_that_has_passed_is_not_flagged():
    probe = Scripted(1.0, [3.0, 2.8, 3.1] + [1.05] * 7)
    probe.sample()
    probe.confirm()
    assert probe.slowdown() == pytest.approx(1.05)


def test_a_confirmation_never_makes_the_reading_worse():
    probe = Scripted(1.0, [1.6, 1.6, 1.6] + [5.0] * 7)
    probe.sample()
    probe.confirm()
    assert probe.slowdown() == pytest.approx(1.6)
