"""relu(a @ b + bias) in bf16."""
from __future__ import annotations

import torch

from evaluator.tasks.base import (full_fp32, functions_of, generator, signed_matrix, Task, Tolerance, varied_rows)


def reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(a @ b + bias)


def reference_fp32(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    with full_fp32():
        return torch.relu(a.float() @ b.float() + bias.float())


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    g = generator(seed, device)
    m, k, n = shape["M"], shape["K"], shape["N"]
    kw = dict(generator=g, device=device, dtype=torch.float32)
    a = varied_rows(g, m, k, device, seed, log_scale=1.0, offset=0.2)
    # columns of b scaled by 1/sqrt(K) (times a varied factor) so that a @ b stays O(1)
    col_scale = torch.exp((torch.rand(1, n, **kw) * 2 - 1) * 0.5) / max(k, 1) ** 0.5
    b = signed_matrix(g, k, n, device, seed + 1) * col_scale
    # a signed bias of the same order as a @ b: relu zeroes a fair share of outputs, not all
    bias = 0.7 * torch.randn(n, **kw)
    return a.bfloat16(), b.bfloat16(), bias.bfloat16()


def flops(shape: dict) -> float:
    m, k, n = shape["M"], shape["K"], shape["N"]
    return 2.0 * m * n * k + 2.0 * m * n


def bytes_moved(shape: dict) -> float:
    m, k, n = shape["M"], shape["K"], shape["N"]
    return 2.0 * (m * k + k * n + n + m * n)


TASK = Task(
    name="matmul_bias_relu",
    title="Matmul + bias + ReLU (bf16)",
    description=(
        "out = relu(a @ b + bias) with a bf16 [M, K], b bf16 [K, N] and bias bf16 [N] added to "
        "every row; the output is bf16 [M, N]. Accumulate in fp32. The output is compared with "
        "the same maths done in fp32, to about 4 % of the output's scale: the rounding of bf16 "
        "passes, fp8 arithmetic or skipped work does not. Compute bound: the benchmark is "
        "M = N = K = 4096, where cuBLAS is already close to the tensor cores' peak."
    ),
    signature=(
        "def custom_kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:\n"
        "    # a: bfloat16 [M, K]; b: bfloat16 [K, N]; bias: bfloat16 [N].\n"
        "    # Return a new bfloat16 [M, N] tensor: torch.relu(a @ b + bias)"
    ),
    input_names=("a", "b", "bias"),
    output_dtype=torch.bfloat16,
    **functions_of(globals()),
    test_shapes=(
        {"M": 1, "K": 1, "N": 1},
        {"M": 7, "K": 33, "N": 131},
        {"M": 33, "K": 100, "N": 65},
        {"M": 64, "K": 256, "N": 128},
        {"M": 257, "K": 129, "N": 300},
        {"M": 5, "K": 1000, "N": 17},
    ),
    bench_shapes_gpu=({"M": 4096, "K": 4096, "N": 4096},),
    bench_shapes_cpu=({"M": 128, "K": 256, "N": 128},),
    tolerance=Tolerance(atol=4e-2, rtol=4e-2),
    max_speedup_vs_compile=1.5,
    bound="compute",
)
