"""The judge's one typed link to a runner: a method per request of the control channel, each
sending its frame and waiting for its answer (evaluator/wire/messages.py names both). The same
link drives the candidate's runner and the trusted baseline runner; what differs is its channel
functions: the candidate's (Evaluation.send / expect) raise Failure, the baseline's
(baseline.Runner.send / expect) BaselineError. The checker's link is checkers.CheckerProcess."""
from __future__ import annotations

import dataclasses
from typing import Callable

from evaluator.wire.messages import Op, Reply


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """A runner as the judge drives it: its channel functions (`expect(kind, deadline[, spin_s])`
    returns the answer of that kind or raises), its work directory, and for the baseline runner
    the function a call runs (`fn`: "eager" or "compile")."""
    send: Callable[[dict], None]
    expect: Callable[..., dict]
    work: object
    fn: str | None = None

    # ---- start -------------------------------------------------------------------------------
    def hello(self, deadline: float) -> dict:
        """The runner's first frame, sent before the submission exists."""
        return self.expect(Reply.HELLO, deadline)

    def load(self, deadline: float) -> dict:
        self.send({"op": Op.LOAD})
        return self.expect(Reply.READY, deadline)

    # ---- one checked call (calls.Caller) -------------------------------------------------------
    def prepare(self, fields: dict, deadline: float) -> dict:
        """Build one call's inputs; the baseline's frame names its function last."""
        msg = {"op": Op.PREPARE, **fields}
        self.send(msg if self.fn is None else {**msg, "fn": self.fn})
        return self.expect(Reply.PREPARED, deadline)

    def go(self, size: int, key: int, deadline: float) -> dict:
        """Make the prepared call; returns its `done` (the result follows: `result`)."""
        self.send({"op": Op.GO, "size": size, "key": key})
        return self.expect(Reply.DONE, deadline)

    def result(self, deadline: float) -> dict:
        return self.expect(Reply.RESULT, deadline)

    # ---- timed batches (batch.Side) ------------------------------------------------------------
    def inputs(self, fields: dict, deadline: float) -> dict:
        """Map a checker's input buffer (`fields`: the checker's description and the layout)."""
        self.send({"op": Op.INPUTS, **fields})
        return self.expect(Reply.MAPPED, deadline)

    def batch(self, count: int, size: int) -> None:
        """Start one batch; its answers are `described` (GPU) and `batch_done`."""
        self.send({"op": Op.BATCH, "count": count, "fn": self.fn, "size": size})

    def described(self, deadline: float, spin_s: float) -> dict:
        return self.expect(Reply.BATCH_DESCRIBED, deadline, spin_s)

    def batch_done(self, deadline: float, spin_s: float | None = None) -> dict:
        return self.expect(Reply.BATCH_DONE, deadline) if spin_s is None else \
            self.expect(Reply.BATCH_DONE, deadline, spin_s)

    # ---- the end -------------------------------------------------------------------------------
    def release(self, deadline: float) -> dict:
        self.send({"op": Op.RELEASE})
        return self.expect(Reply.RELEASED, deadline)

    def stats(self, deadline: float) -> dict:
        self.send({"op": Op.STATS})
        return self.expect(Reply.STATS, deadline)

    def exit(self) -> None:
        self.send({"op": Op.EXIT})
