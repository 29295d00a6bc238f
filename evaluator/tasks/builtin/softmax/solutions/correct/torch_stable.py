"""Softmax in plain torch: subtract the row max, exp, divide by the row sum, all fp32; should pass."""
import torch


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    shifted = x - x.amax(dim=-1, keepdim=True)
    e = torch.exp(shifted)
    return e / e.sum(dim=-1, keepdim=True)
