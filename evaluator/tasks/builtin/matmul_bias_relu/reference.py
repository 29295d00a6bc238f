"""relu(a @ b + bias) in bf16."""
from __future__ import annotations

import torch

from evaluator.tasks.base import full_fp32, generator, signed_matrix, varied_rows


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
    if shape.get("family") == "large_magnitude":
        # products to about 1e4: a kernel that accumulates in bf16 loses the small terms
        a.mul_(100.0)
        bias.mul_(100.0)
    return a.bfloat16(), b.bfloat16(), bias.bfloat16()


def flops(shape: dict) -> float:
    m, k, n = shape["M"], shape["K"], shape["N"]
    return 2.0 * m * n * k + 2.0 * m * n


def bytes_moved(shape: dict) -> float:
    m, k, n = shape["M"], shape["K"], shape["N"]
    return 2.0 * (m * k + k * n + n + m * n)
