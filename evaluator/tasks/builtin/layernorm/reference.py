"""Layer normalisation over the last dimension of an fp32 matrix, with weight and bias."""
from __future__ import annotations

import torch

from evaluator.tasks.base import generator, varied_rows

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
    family = shape.get("family")
    if family == "near_constant":
        # rows of one value (about 0.03) plus noise of 3e-3: the variance (about 1e-5) is as
        # large as eps, so eps must be where it belongs, and E[x^2] - E[x]^2 in fp32 loses
        # enough of it to fail; the mean's own rounding leaves an fp32 two-pass kernel within
        # half the tolerance (a row mean ten times larger would fail honest kernels too)
        x = 0.03 * torch.randn(m, 1, **kw) + 3e-3 * torch.randn(m, n, **kw)
    elif family == "large_magnitude":
        x.mul_(1e3)
    weight = 1.0 + 0.5 * torch.randn(n, **kw)
    bias = 0.5 * torch.randn(n, **kw)
    return x, weight, bias


def flops(shape: dict) -> float:
    # mean, centre, square, variance, normalise, scale, shift
    return 8.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    m, n = shape["M"], shape["N"]
    return (2.0 * m * n + 2.0 * n) * 4
