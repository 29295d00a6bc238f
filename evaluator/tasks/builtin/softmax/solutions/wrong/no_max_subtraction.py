"""Softmax without subtracting the row max: exact on tame rows, but rows with large values overflow exp to inf and give NaN; should fail."""
import torch


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    e = torch.exp(x)
    return e / e.sum(dim=-1, keepdim=True)
