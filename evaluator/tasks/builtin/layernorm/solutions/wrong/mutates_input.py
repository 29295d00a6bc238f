"""Centres x in place (x -= mean) to save a buffer, then returns a new, correct tensor: the caller's x is changed; should fail."""
import torch

EPS = 1e-5


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    x.sub_(x.mean(dim=-1, keepdim=True))
    rstd = torch.rsqrt((x * x).mean(dim=-1, keepdim=True) + EPS)
    return x * rstd * weight + bias
