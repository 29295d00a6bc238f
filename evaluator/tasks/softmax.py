"""Row softmax of an fp32 matrix."""
from __future__ import annotations

import torch

from evaluator.tasks.base import FP32_ROW_TASK, functions_of, generator, Task, varied_rows


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def reference_fp32(x: torch.Tensor) -> torch.Tensor:
    # computed in fp64 and rounded once: the gold answer for an fp32 task should not carry the
    # summation error of one particular fp32 implementation
    return torch.softmax(x.double(), dim=-1).float()


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor]:
    g = generator(seed, device)
    # wide log-scale: some rows nearly uniform, some nearly one-hot, so both the max
    # subtraction and the sum matter
    x = varied_rows(g, shape["M"], shape["N"], device, seed, log_scale=2.5)
    return (x,)


def flops(shape: dict) -> float:
    # max, subtract, exp, sum, divide
    return 5.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    return 2.0 * shape["M"] * shape["N"] * 4


TASK = Task(
    name="softmax",
    title="Softmax (fp32)",
    description=(
        "Softmax over the last dimension of an fp32 matrix x of shape [M, N]: "
        "out[i, j] = exp(x[i, j]) / sum_k exp(x[i, k]). Rows have very different scales, signed "
        "values, and some rows have outliers, so the row maximum must be subtracted for stability. "
        "The output is fp32 and is compared with an exact reference to within 4e-5 relative: "
        "computing in fp16 or bf16 does not pass. Memory bound: the benchmark is 8192 x 8192."
    ),
    signature=(
        "def custom_kernel(x: torch.Tensor) -> torch.Tensor:\n"
        "    # x: float32 [M, N], contiguous. Return a new float32 [M, N] tensor:\n"
        "    # torch.softmax(x, dim=-1)"
    ),
    input_names=("x",),
    **functions_of(globals()),
    **FP32_ROW_TASK,
    max_speedup_vs_compile=1.5,
)
