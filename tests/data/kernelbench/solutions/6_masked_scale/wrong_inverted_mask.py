"""Keeps the positions where the mask is False instead of True (inverted mask): should fail."""
import torch


def custom_kernel(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.where(~mask, x * 2.5, torch.zeros_like(x))
