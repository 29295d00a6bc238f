import torch
import torch.nn as nn


class Model(nn.Module):
    """Doubles the float32 entries of x where a boolean mask is set and zeroes the others:
    out = where(mask, 2 * x, 0). No parameters; the two inputs have different dtypes."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.where(mask, 2 * x, torch.zeros_like(x))


batch_size = 16
dim = 65536


def get_inputs():
    x = torch.randn(batch_size, dim)
    mask = torch.rand(batch_size, dim) > 0.5
    return [x, mask]


def get_init_inputs():
    return []
