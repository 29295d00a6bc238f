"""What a task is: the contract between the evaluator, the examples and the site.

A task module builds one `Task` and the registry in `evaluator/tasks/__init__.py` collects them.
Nothing here may import Django: the site reads these objects for its pages, the judge uses them
to build inputs and references.
"""
from __future__ import annotations

import dataclasses
import hashlib
from typing import Callable, Sequence

import torch

Shape = dict  # e.g. {"M": 8192, "N": 8192}; keys are the task's own dimension names


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """An output passes when every element satisfies

        |out - ref| <= atol * scale + rtol * |ref|

    where `ref` is the reference computed in fp32 from the same inputs (the "gold" answer) and
    `scale` is the root-mean-square of `ref` over the whole output. Relative to the output's
    own scale, so returning zeros or a constant never passes (threat A7).
    """

    atol: float
    rtol: float


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    title: str
    description: str
    signature: str  # the text of `def custom_kernel(...)` users must write
    input_names: tuple[str, ...]
    output_dtype: torch.dtype
    # eager PyTorch, in the task's own dtypes: what a kernel must match and beat
    reference: Callable[..., torch.Tensor]
    # the same computation carried out in fp32 (upcast inputs): the gold answer outputs are
    # compared against
    reference_fp32: Callable[..., torch.Tensor]
    # make_inputs(shape, seed, device) -> tuple of tensors, deterministic for (shape, seed, device)
    make_inputs: Callable[[Shape, int, str], tuple]
    test_shapes: Sequence[Shape]
    bench_shapes_gpu: Sequence[Shape]
    bench_shapes_cpu: Sequence[Shape]
    tolerance: Tolerance
    flops: Callable[[Shape], float]
    bytes_moved: Callable[[Shape], float]
    # a verified speedup over torch.compile above this is flagged for review
    max_speedup_vs_compile: float = 2.0
    # the floor is set by memory traffic ("memory") or by matrix arithmetic ("compute")
    bound: str = "memory"

    def bench_shapes(self, device: str) -> Sequence[Shape]:
        return self.bench_shapes_gpu if device == "cuda" else self.bench_shapes_cpu

    def floor_ms(self, shape: Shape, *, bandwidth_bytes_s: float, peak_flop_s: float) -> float:
        """The roofline floor: the least time the shape can take on a device with these ceilings."""
        memory_s = self.bytes_moved(shape) / bandwidth_bytes_s
        compute_s = self.flops(shape) / peak_flop_s
        return max(memory_s, compute_s) * 1e3


def derive_seed(master_seed: int, *parts: object) -> int:
    """A per-call seed from the secret master seed; one-way, so a runner that learns a call's
    seed learns nothing about other calls' seeds."""
    h = hashlib.sha256(str(master_seed).encode())
    for p in parts:
        h.update(b"\0" + str(p).encode())
    return int.from_bytes(h.digest()[:8], "little") & ((1 << 63) - 1)


def generator(seed: int, device: str) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g
