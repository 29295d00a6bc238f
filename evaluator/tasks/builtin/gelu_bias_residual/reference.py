"""gelu(x + bias) + residual in fp32, with the exact (erf) GELU."""
from __future__ import annotations

import torch

from evaluator.tasks.base import generator, varied_rows


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
    if shape.get("family") == "large_magnitude":
        # |x| to about 100: erf saturates, and a GELU written with exp or tanh of x overflows
        x.mul_(30.0)
    return x, bias, residual


def flops(shape: dict) -> float:
    # add, GELU (about 8 operations with erf), add
    return 10.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    m, n = shape["M"], shape["N"]
    return (3.0 * m * n + n) * 4
