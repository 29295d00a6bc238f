"""gelu(x + bias) + residual in fp32, with the exact (erf) GELU."""
from __future__ import annotations

import torch

from evaluator.tasks.base import FP32_ROW_TASK, functions_of, generator, Task, varied_rows


def reference(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + bias) + residual


def reference_fp32(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    # computed in fp64 and rounded once (see softmax.reference_fp32)
    return (torch.nn.functional.gelu(x.double() + bias.double()) + residual.double()).float()


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    g = generator(seed, device)
    m, n = shape["M"], shape["N"]
    # scales around 1 so that x + bias spends time in the curved part of GELU, where the
    # tanh approximation differs from erf
    x = varied_rows(g, m, n, device, seed, log_scale=1.0, offset=0.3)
    bias = 0.5 * torch.randn(n, generator=g, device=device, dtype=torch.float32)
    residual = varied_rows(g, m, n, device, seed + 1, log_scale=1.0, offset=0.3)
    return x, bias, residual


def flops(shape: dict) -> float:
    # add, GELU (about 8 operations with erf), add
    return 10.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    m, n = shape["M"], shape["N"]
    return (3.0 * m * n + n) * 4


TASK = Task(
    name="gelu_bias_residual",
    title="GELU + bias + residual (fp32)",
    description=(
        "out = gelu(x + bias) + residual with the exact GELU, gelu(z) = z / 2 * (1 + erf(z / "
        "sqrt(2))). x and residual are fp32 [M, N], bias is fp32 [N] added to every row. The output "
        "is fp32, compared with an exact reference to within 4e-5 relative: the tanh approximation "
        "of GELU, fp16 or bf16 arithmetic do not pass. Memory bound: the benchmark is 8192 x 8192, "
        "where fusing the three steps into one pass is the whole game."
    ),
    signature=(
        "def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:\n"
        "    # x, residual: float32 [M, N]; bias: float32 [N]. Return a new float32 [M, N] tensor:\n"
        "    # torch.nn.functional.gelu(x + bias) + residual   (exact erf GELU)"
    ),
    input_names=("x", "bias", "residual"),
    **functions_of(globals()),
    **FP32_ROW_TASK,
    max_speedup_vs_compile=1.5,
)
