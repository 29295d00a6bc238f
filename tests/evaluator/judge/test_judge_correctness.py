"""evaluator/judge/correctness.py through real test-mode evaluations on the CPU (the `evaluate`
fixture of tests/evaluator/conftest.py): one row per test shape, the task's public ones in order
and then those drawn for the evaluation (marked hidden), a progress line per shape, the small shapes called twice (a kernel that answers differently the second time
on one of them fails there, and no later shape is called), a large shape called once."""
import json
from types import SimpleNamespace

import pytest

from evaluator.common.shapes import fmt, shape_size
from evaluator.judge import correctness
from evaluator.judge.startup import SMALL_SHAPES_CPU
from evaluator.tasks import get_task

TASK = get_task("softmax")
SMALL = sorted(TASK.test_shapes, key=shape_size)[:SMALL_SHAPES_CPU]
LARGE = [s for s in TASK.test_shapes if s not in SMALL]

TORCH_SOFTMAX = """
import torch

def _softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)
"""

# within tolerance on every call, but a different answer on each call for one shape
TWICE_DIFFERENT = TORCH_SOFTMAX + """
from evaluator.tasks import get_task
_tol = get_task("softmax").tolerance
_calls = [0]

def custom_kernel(x):
    if tuple(x.shape) != {shape}:
        return _softmax(x)
    _calls[0] += 1
    ref = _softmax(x.double())
    allowed = _tol.atol * ref.square().mean().sqrt() + _tol.rtol * ref.abs()
    return (ref + (0.8 if _calls[0] % 2 else -0.8) * allowed).float()
"""


def test_every_test_shape_gets_a_row_and_a_progress_line(evaluate, tmp_path, monkeypatch):
    progress = tmp_path / "progress.jsonl"
    monkeypatch.setenv("EVALUATOR_PROGRESS_FILE", str(progress))
    report = evaluate(TORCH_SOFTMAX + "\ndef custom_kernel(x):\n    return _softmax(x)\n")
    # flagged, not verified: a torch-only kernel launches no Triton kernel (the verdict phase's
    # rule); every correctness check passed
    assert report["verdict"] == "flagged" and "nondeterministic" not in report["reason_codes"], report["reasons"]
    rows = report["tests"]
    public = len(TASK.test_shapes)
    assert [r["shape"] for r in rows[:public]] == [dict(s) for s in TASK.test_shapes]
    assert len(rows) > public and all(r["hidden"] for r in rows[public:])
    assert not any("hidden" in r for r in rows[:public])
    assert {r.get("family") for r in rows[public:]} >= {"large_magnitude", "neg_inf"}
    assert all(r["passed"] and r["message"] == "" and 0 <= r["max_abs_err"] < 1e-5 for r in rows)
    steps = [json.loads(line) for line in progress.read_text().splitlines()]
    shapes = [(p["k"], p["n"]) for p in steps if p["step"] == "correctness"]
    n = len(rows)
    assert shapes == [(k, n) for k in range(1, n + 1)]
    assert report["phases"]["correctness_s"] > 0


@pytest.mark.parametrize("small", [True, False])
def test_two_answers_on_one_input_fail_only_where_the_shape_is_called_twice(evaluate, small):
    # the 1x1 shape is always among the smallest; 257 x 4099 never is (the CPU's hidden shapes
    # have at most 65,536 elements)
    shape = SMALL[0] if small else {"M": 257, "N": 4099}
    src = TWICE_DIFFERENT.replace("{shape}", repr((shape["M"], shape["N"])))
    report = evaluate(src)
    rows = report["tests"]
    if not small:  # called once: each answer alone is within tolerance
        assert report["verdict"] == "flagged" and all(r["passed"] for r in rows) and len(rows) > len(TASK.test_shapes)
        return
    assert report["verdict"] == "rejected"
    assert "nondeterministic" in report["reason_codes"]  # beside suspicious_source (it imports evaluator)
    at = [dict(s) for s in TASK.test_shapes].index(dict(shape))
    assert len(rows) == at + 1 and all(r["passed"] for r in rows[:at])  # no later shape was called
    last = rows[-1]
    assert last["shape"] == dict(shape) and last["passed"] is False and last["max_abs_err"] is None
    assert last["message"].startswith(f"test shape {fmt(shape)}: two calls on the same input")


class Evaluation:
    """The part of an evaluation test_shape uses: its task, its small shapes, its report, and call()
    answering with the outputs given, in order."""

    def __init__(self, outs):
        self.setup = SimpleNamespace(task=TASK, small_shapes=SMALL, test_shapes=[dict(s) for s in TASK.test_shapes])
        self.report = {"tests": []}
        self.outs, self.wheres = list(outs), []

    def call(self, shape, seed, where, **kw):
        import torch

        from evaluator.judge.calls import Call

        self.wheres.append(where)
        return Call(out=torch.tensor(self.outs.pop(0)), ms=0.0, wall_ms=0.0, err=1e-7, checksum_ms=0.0)


def test_test_shape_calls_small_shapes_twice_and_large_ones_once():
    ev = Evaluation([[0.5, 0.5], [0.5, 0.5], [0.25, 0.75]])
    correctness.test_shape(ev, SMALL[0], 1)
    correctness.test_shape(ev, LARGE[0], 2)
    assert ev.wheres == [f"test shape {fmt(SMALL[0])}", f"test shape {fmt(SMALL[0])} (second call, same input)",
                         f"test shape {fmt(LARGE[0])}"]
    assert ev.report["tests"] == [{"shape": dict(s), "passed": True, "max_abs_err": 1e-7, "message": ""}
                                  for s in (SMALL[0], LARGE[0])]
    ev = Evaluation([[0.5, 0.5], [0.0, 1.0]])
    with pytest.raises(correctness.Failure):
        correctness.test_shape(ev, SMALL[0], 1)
    assert ev.report["tests"][0]["passed"] is False and "two calls on the same input" in ev.report["tests"][0]["message"]


class Phase(Evaluation):
    """What correctness.run uses besides: seeds, the runner's threads, its link and the thread check."""

    def __init__(self):
        from evaluator.judge.startup import Threads

        n = len(TASK.test_shapes) + len(SMALL) + 1  # each shape, the small ones again, the profiled call
        super().__init__([[0.0, 0.0]] * (n - 1) + [[[0.0] * 5] * 3])
        self.report["phases"] = {}
        self.master, self.derive = 7, lambda *parts: hash(parts) & 0xFFFF
        self.threads = Threads(names_base=["python"], base=1, profiler_growth=2)
        self.link = SimpleNamespace(release=lambda deadline: self.wheres.append("release"))
        self.check_threads = lambda when, key: self.wheres.append(key)


def test_run_returns_the_profiled_call_as_its_declared_outcome():
    ev = Phase()
    profiled = correctness.run(ev)
    middle = sorted(TASK.test_shapes, key=shape_size)[len(TASK.test_shapes) // 2]
    assert isinstance(profiled, correctness.Profiled)
    assert profiled.shape == middle and profiled.out_numel == 15
    assert ev.wheres[-3:] == [f"test shape {fmt(middle)}", "release", "correctness"]
    assert ev.threads.base == 3 and ev.report["phases"]["correctness_s"] > 0


def test_a_drawn_shape_is_reported_hidden_even_where_it_equals_a_public_one():
    # the rows after the public ones were drawn for this evaluation, whatever shape they came out as
    ev = Phase()
    ev.setup.test_shapes.append(dict(SMALL[0]))
    ev.outs = [[0.0, 0.0]] * 2 + ev.outs  # a small shape is called twice
    correctness.run(ev)
    rows = ev.report["tests"]
    assert len(rows) == len(TASK.test_shapes) + 1 and rows[-1]["shape"] == dict(SMALL[0])
    assert rows[-1].get("hidden") is True and not any("hidden" in r for r in rows[:-1])
