"""Layer normalisation over the last dimension of an fp32 matrix, with weight and bias."""
from __future__ import annotations

import torch

from evaluator.tasks.base import FP32_ROW_TASK, functions_of, generator, Task, varied_rows

EPS = 1e-5


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)


def reference_fp32(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # computed in fp64 and rounded once (see softmax.reference_fp32)
    out = torch.nn.functional.layer_norm(x.double(), (x.shape[-1],), weight.double(), bias.double(), EPS)
    return out.float()


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    g = generator(seed, device)
    m, n = shape["M"], shape["N"]
    # row means up to a few times the spread: the variance must not cancel away
    x = varied_rows(g, m, n, device, seed, offset=2.0)
    kw = dict(generator=g, device=device, dtype=torch.float32)
    weight = 1.0 + 0.5 * torch.randn(n, **kw)
    bias = 0.5 * torch.randn(n, **kw)
    return x, weight, bias


def flops(shape: dict) -> float:
    # mean, centre, square, variance, normalise, scale, shift
    return 8.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    m, n = shape["M"], shape["N"]
    return (2.0 * m * n + 2.0 * n) * 4


TASK = Task(
    name="layernorm",
    title="LayerNorm (fp32)",
    description=(
        "Layer normalisation over the last dimension of x (fp32, [M, N]) with an elementwise "
        "weight and bias (fp32, [N]) and eps = 1e-5: out = (x - mean) / sqrt(var + eps) * weight "
        "+ bias, where mean and the biased variance are taken over each row. Rows have signed "
        "means several times their spread, so the variance must be computed carefully. The output "
        "is fp32 and compared with an exact reference to within 4e-5 relative: fp16 or bf16 "
        "arithmetic does not pass. Memory bound: the benchmark is 8192 x 8192."
    ),
    signature=(
        "def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:\n"
        "    # x: float32 [M, N]; weight, bias: float32 [N]. Return a new float32 [M, N] tensor:\n"
        "    # torch.nn.functional.layer_norm(x, (N,), weight, bias, eps=1e-5)"
    ),
    input_names=("x", "weight", "bias"),
    **functions_of(globals()),
    **FP32_ROW_TASK,
    max_speedup_vs_compile=1.75,
)
