"""Shapes as the judge uses them: their size, how a message names one, which ones are timed."""
from __future__ import annotations

import math


def shape_size(shape: dict) -> int:
    return math.prod(v for v in shape.values() if isinstance(v, int))


def fmt(shape: dict) -> str:
    return "{" + ", ".join(f"{k}={v}" for k, v in shape.items()) + "}"


def bench_shapes(task, device: str) -> list[dict]:
    """The timed shapes; with EVALUATOR_QUICK on CPU, one small test shape (fast unit tests)."""
    from evaluator.common.timing import quick

    if device == "cpu" and quick():
        small = sorted(task.test_shapes, key=shape_size)
        return [small[1] if len(small) > 1 else small[0]]
    return list(task.bench_shapes(device))
