"""Honest masked scale in torch by multiplication with the mask as float: should pass."""
import torch


def custom_kernel(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x * mask.to(x.dtype) * 2.5
