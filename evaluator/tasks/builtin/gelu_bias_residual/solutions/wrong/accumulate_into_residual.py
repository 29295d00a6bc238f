"""Adds gelu(x + bias) into the residual in place and returns the residual tensor (right values, but mutates an input and aliases it); should fail."""
import torch


def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return residual.add_(torch.nn.functional.gelu(x + bias))
