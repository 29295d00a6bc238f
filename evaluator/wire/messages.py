"""The names of the control channel's messages, for both ends: what the judge asks (a frame's
"op") and what the runner or the checker answers (a frame's "t"). The judge speaks them through
one typed link (evaluator/judge/link.py: Link for a runner, CheckerProcess for a checker); the
runner's harness and the checker dispatch on the same names. Plain strings, so a frame is the
same JSON whoever builds it."""
from __future__ import annotations

from typing import Final


class Op:
    """judge -> runner (the candidate's and the trusted baseline's: one harness)."""
    LOAD: Final = "load"  # import the submission (answered READY)
    PREPARE: Final = "prepare"  # build one call's inputs (PREPARED)
    GO: Final = "go"  # make the prepared call (DONE, then RESULT)
    INPUTS: Final = "inputs"  # map a checker's input buffer for the timed batches (MAPPED)
    BATCH: Final = "batch"  # one timed batch (GPU: BATCH_DESCRIBED, then BATCH_DONE; CPU: BATCH_DONE)
    RELEASE: Final = "release"  # drop the inputs kept alive by the correctness calls (RELEASED)
    STATS: Final = "stats"  # which kernels and library operators ran (STATS)
    EXIT: Final = "exit"  # end (no answer)


class Reply:
    """runner -> judge."""
    HELLO: Final = "hello"  # started, before the submission exists
    READY: Final = "ready"
    PREPARED: Final = "prepared"
    DONE: Final = "done"
    RESULT: Final = "result"
    MAPPED: Final = "mapped"
    BATCH_DESCRIBED: Final = "batch_described"
    BATCH_DONE: Final = "batch_done"
    RELEASED: Final = "released"
    STATS: Final = "stats"
    ERROR: Final = "error"  # instead of any answer: what went wrong in the runner


class CheckerOp:
    """judge -> checker (evaluator/judge/checker.py serves each as its method op_<name>)."""
    PING: Final = "ping"
    PLAN: Final = "plan"
    BUFFER: Final = "buffer"
    FILL: Final = "fill"
    REFRESH: Final = "refresh"
    PROBE: Final = "probe"
    ARM: Final = "arm"
    SAMPLE: Final = "sample"
    VERIFY: Final = "verify"
    EXIT: Final = "exit"  # end (no answer)


class CheckerReply:
    """checker -> judge."""
    HELLO: Final = "hello"
    OK: Final = "ok"
    ERROR: Final = "error"
