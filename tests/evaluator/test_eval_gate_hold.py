"""Which tasks hold the GPU timing gate, and the operator's override for A/B runs."""
from evaluator import timing
from evaluator.tasks import TASKS


def test_only_the_many_kernel_task_holds_the_gate():
    # a held gate made short memory-bound timings noisy on the H200: only the block, whose honest
    # launch takes milliseconds of host work, holds it
    held = {name for name, task in TASKS.items() if task.gpu_gate_hold_ms > 0}
    assert held == {"transformer_block"}
    assert TASKS["transformer_block"].gpu_gate_hold_ms >= 2.0


def test_the_environment_overrides_every_tasks_hold(monkeypatch):
    monkeypatch.delenv("EVALUATOR_GPU_GATE_HOLD_MS", raising=False)
    assert timing.gate_hold_ms(2.0) == 2.0 and timing.gate_hold_ms(0.0) == 0.0
    monkeypatch.setenv("EVALUATOR_GPU_GATE_HOLD_MS", "0")
    assert timing.gate_hold_ms(2.0) == 0.0
    monkeypatch.setenv("EVALUATOR_GPU_GATE_HOLD_MS", "1.5")
    assert timing.gate_hold_ms(0.0) == 1.5
