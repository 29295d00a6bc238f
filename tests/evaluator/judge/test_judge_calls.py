"""evaluator/judge/calls.py: Caller.call drives one call through the protocol (prepare, go, done,
result) and checks the bytes the runner stored in the work directory's buffer. The runner here is a
scripted one that speaks the protocol in this process and writes into a real Workdir's buffer
through the judge's descriptor; each test bends one thing it does and expects the Failure the judge
must raise."""
import os

import pytest
import torch

from evaluator.common import checks
from evaluator.common.checks import Failure
from evaluator.judge import calls
from evaluator.tasks import get_task
from evaluator.wire.workdir import Workdir

SHAPE = {"M": 7, "N": 131}


@pytest.fixture
def work():
    w = Workdir(b"def custom_kernel(x):\n    return x\n")
    yield w
    w.remove()


class ScriptedRunner:
    """Answers the judge's frames as an honest runner would, unless told otherwise."""

    def __init__(self, task, work, *, output=None, fp_of=None, meta=None, problems=(), inputs_before=None,
                 inputs_after=None):
        self.task, self.work = task, work
        self.output, self.fp_of, self.meta, self.problems = output, fp_of, meta or {}, list(problems)
        self.inputs_before, self.inputs_after = inputs_before, inputs_after
        self.sent = []
        self.replies = []

    def _store(self, parts):
        data = b"".join(checks.raw_bytes(p).numpy().tobytes() for p in parts)
        os.pwrite(self.work.buffer_fd, data, 0)

    def send(self, msg):
        self.sent.append(msg)
        if msg["op"] == "prepare":
            self.inputs = self.task.make_inputs(msg["shape"], msg["seed"], "cpu")
            if msg["back"]:
                before = self.inputs_before(self.inputs) if self.inputs_before else self.inputs
                self._store(before)
            self.replies = [{"t": "prepared", "stored": True}]
        elif msg["op"] == "go":
            out = self.output(*self.inputs) if self.output else self.task.reference(*self.inputs)
            after = self.inputs_after(self.inputs) if self.inputs_after else self.inputs
            self._store([out, *after] if self.sent[0]["back"] else [out])
            fp_bytes = self.fp_of(out) if self.fp_of else out
            fp = checks.fingerprint(checks.raw_bytes(fp_bytes), msg["key"])
            result = {"t": "result", "problems": self.problems, "dtype": str(out.dtype), "shape": list(out.shape),
                      "device": "cpu", "stored": True, **self.meta}
            self.replies = [{"t": "done", "ms": 0.5, "fp": fp}, result]

    def expect(self, kind, deadline):
        msg = self.replies.pop(0)
        assert msg["t"] == kind
        return msg

    def link(self, fn=None):
        return calls.Link(send=self.send, expect=self.expect, work=self.work, fn=fn)


def make_call(work, *, check=False, fn=None, **runner):
    task = get_task("softmax")
    runner = ScriptedRunner(task, work, **runner)
    caller = calls.Caller(task, "cpu", master=1234)
    return caller, runner, caller.call(runner.link(fn), SHAPE, 99, "test shape {M=7, N=131}", check=check)


def failure_of(work, **kw) -> tuple[str, str]:
    with pytest.raises(Failure) as e:
        make_call(work, **kw)
    [problem] = e.value.problems
    return problem


def test_call_limits():
    assert calls.call_limit_s(True) == calls.FIRST_CALL_LIMIT_S >= calls.call_limit_s(False) == calls.CALL_LIMIT_S


def test_an_honest_call_comes_back_as_the_judges_own_tensor(work):
    caller, runner, call = make_call(work, check=True)
    task = get_task("softmax")
    expect = task.reference(*task.make_inputs(SHAPE, 99, "cpu"))
    assert torch.equal(call.out, expect) and call.ms == 0.5 and call.err <= 1e-6 and call.wall_ms >= 0
    prepare, go = runner.sent
    assert prepare["op"] == "prepare" and prepare["shape"] == SHAPE and prepare["seed"] == 99
    assert prepare["back"] is True and prepare["settle"] == calls.SETTLE_S and "fn" not in prepare
    assert go["op"] == "go" and go["size"] == prepare["size"] >= expect.numel() * 4 * 2
    assert caller.count == 1


def test_the_baseline_link_names_its_function_and_each_call_has_a_new_key(work):
    task = get_task("softmax")
    runner = ScriptedRunner(task, work)
    caller = calls.Caller(task, "cpu", master=1234)
    caller.call(runner.link("compile"), SHAPE, 1, "w")
    caller.call(runner.link("compile"), SHAPE, 1, "w")
    prepares = [m for m in runner.sent if m["op"] == "prepare"]
    keys = [m["key"] for m in runner.sent if m["op"] == "go"]
    assert [p["fn"] for p in prepares] == ["compile", "compile"] and prepares[0]["settle"] == 0.0
    assert keys[0] != keys[1]


def test_bytes_stored_after_the_call_returned_are_a_deferred_write(work):
    code, message = failure_of(work, fp_of=lambda out: out * 0)
    assert code == "deferred_write" and message.startswith("test shape {M=7, N=131}: ")


def test_a_wrong_answer_is_a_mismatch(work):
    code, message = failure_of(work, output=lambda x: torch.zeros_like(x))
    assert code == "mismatch" and "test shape {M=7, N=131}" in message


def test_the_claimed_meta_is_checked(work):
    assert failure_of(work, meta={"dtype": "torch.float64"})[0] == "wrong_dtype"
    assert failure_of(work, meta={"shape": [131, 7]})[0] == "wrong_shape"
    assert failure_of(work, meta={"device": "cuda"})[0] == "wrong_device"
    code, message = failure_of(work, meta={"stored": False})
    assert code == "protocol" and "did not store the output" in message


def test_a_problem_the_runner_reports_fails_the_call_with_its_place(work):
    code, message = failure_of(work, problems=[["aliases_input", "the output is an input"]])
    assert (code, message) == ("aliases_input", "test shape {M=7, N=131}: the output is an input")
    with pytest.raises(Failure) as e:
        make_call(work, problems=[["made_up", "x"]])
    assert e.value.problems[0][0] == "protocol"


def test_inputs_changed_before_or_by_the_call_are_input_modified(work):
    def spoil(inputs):
        x = inputs[0].clone()
        x[0, 0] += 1
        return (x,)

    code, message = failure_of(work, check=True, inputs_before=spoil)
    assert code == "input_modified" and "before the call" in message
    code, message = failure_of(work, check=True, inputs_after=spoil)
    assert code == "input_modified" and "modified its input tensors" in message
