"""gelu(x + bias) + residual in plain torch with the erf formula written out, fp32; should pass."""
import math

import torch


def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    z = x + bias
    return 0.5 * z * (1.0 + torch.erf(z * (1.0 / math.sqrt(2.0)))) + residual
