"""LayerNorm with the unbiased (N-1) variance, torch.var's default: off by a factor sqrt(N/(N-1)), NaN at N = 1; should fail."""
import torch

EPS = 1e-5


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * weight + bias
