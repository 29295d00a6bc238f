"""LayerNorm in plain torch: mean, then the biased variance of the centred values, eps 1e-5, weight and bias; should pass."""
import torch

EPS = 1e-5


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    centred = x - x.mean(dim=-1, keepdim=True)
    var = (centred * centred).mean(dim=-1, keepdim=True)
    return centred * torch.rsqrt(var + EPS) * weight + bias
