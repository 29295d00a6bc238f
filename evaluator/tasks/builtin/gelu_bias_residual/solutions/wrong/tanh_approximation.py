"""Uses the tanh approximation of GELU (off by up to ~1e-3 where x + bias is near -2..2), not the exact erf one; should fail the 4e-5 tolerance."""
import torch


def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + bias, approximate="tanh") + residual
