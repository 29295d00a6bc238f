"""evaluator/judge/link.py: the judge's one link to a runner. Each request is a method that sends
its frame and waits for the answer of its kind (evaluator/wire/messages.py names both); the frames
are the JSON the runner's harness has always read, the baseline's naming its function. The
checker's requests are CheckerProcess's methods on the same names."""
import json

import pytest

from evaluator.judge.checkers import CheckerProcess
from evaluator.judge.link import Link
from evaluator.wire import messages


class Recorder:
    """A runner that answers each expect with a frame of the kind asked for."""

    def __init__(self):
        self.sent, self.expected = [], []

    def send(self, msg):
        self.sent.append(json.dumps(msg))  # as the channel writes it

    def expect(self, kind, deadline, *spin):
        self.expected.append((kind, *spin))
        return {"t": kind}


def test_each_request_sends_its_frame_and_expects_its_answer():
    r = Recorder()
    link = Link(r.send, r.expect, work=None)
    assert link.hello(1.0) == {"t": "hello"} and r.sent == []
    link.load(1.0)
    link.prepare({"shape": {"M": 1}, "seed": 5, "size": 8}, 1.0)
    link.go(8, 42, 1.0)
    link.result(1.0)
    link.inputs({"t": "ok", "handle": "h", "layout": [], "slot_bytes": 64, "slots": 2}, 1.0)
    link.batch(3, 0)
    link.described(1.0, 2.0)
    link.batch_done(1.0, 2.0)
    link.batch_done(1.0)
    link.release(1.0)
    link.stats(1.0)
    link.exit()
    assert r.sent == [
        '{"op": "load"}',
        '{"op": "prepare", "shape": {"M": 1}, "seed": 5, "size": 8}',
        '{"op": "go", "size": 8, "key": 42}',
        '{"op": "inputs", "t": "ok", "handle": "h", "layout": [], "slot_bytes": 64, "slots": 2}',
        '{"op": "batch", "count": 3, "fn": null, "size": 0}',
        '{"op": "release"}',
        '{"op": "stats"}',
        '{"op": "exit"}',
    ]
    assert r.expected == [("hello",), ("ready",), ("prepared",), ("done",), ("result",), ("mapped",),
                          ("batch_described", 2.0), ("batch_done", 2.0), ("batch_done",), ("released",),
                          ("stats",)]


def test_the_baseline_link_names_its_function_last():
    r = Recorder()
    link = Link(r.send, r.expect, work=None, fn="compile")
    link.prepare({"shape": {"M": 1}, "seed": 5}, 1.0)
    link.batch(2, 0)
    assert r.sent == ['{"op": "prepare", "shape": {"M": 1}, "seed": 5, "fn": "compile"}',
                      '{"op": "batch", "count": 2, "fn": "compile", "size": 0}']


def test_an_answer_of_another_kind_is_the_channel_functions_to_refuse():
    def expect(kind, deadline):
        raise RuntimeError(f"expected {kind!r}")

    with pytest.raises(RuntimeError, match="expected 'ready'"):
        Link(lambda msg: None, expect, work=None).load(1.0)


def test_the_link_is_frozen():
    link = Link(print, print, work=None)
    with pytest.raises(AttributeError):
        link.fn = "eager"


def test_message_names_are_plain_strings():
    for cls in (messages.Op, messages.Reply, messages.CheckerOp, messages.CheckerReply):
        names = {k: v for k, v in vars(cls).items() if k.isupper()}
        assert names and all(type(v) is str and v == k.lower() for k, v in names.items())


def test_the_checkers_requests_go_through_its_typed_methods(monkeypatch):
    checker = CheckerProcess.__new__(CheckerProcess)  # no process: call is replaced
    calls = []
    monkeypatch.setattr(checker, "call", lambda op, **kw: calls.append((op, kw)) or {"probe_ms": 1.0, "gen_ms": 2.0},
                        raising=False)
    checker.ping()
    checker.plan({"M": 1})
    checker.buffer(4)
    checker.fill([1, 2])
    checker.refresh()
    checker.probe()
    checker.sample()
    assert [op for op, _ in calls] == ["ping", "plan", "buffer", "fill", "refresh", "probe", "sample"]
    assert calls[1][1] == {"shape": {"M": 1}} and calls[3][1] == {"seeds": [1, 2]}
