import torch
import torch.nn as nn


class Model(nn.Module):
    """Masked scale: out = where(mask, x * 2.5, 0) with x float32 and mask bool of the same
    shape (positions where mask is False are zeroed)."""

    def __init__(self):
        super().__init__()
        self.scale = 2.5

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.where(mask, x * self.scale, torch.zeros_like(x))


batch_size = 64
dim = 16384


def get_inputs():
    x = torch.randn(batch_size, dim)
    mask = torch.rand(batch_size, dim) < 0.7
    return [x, mask]


def get_init_inputs():
    return []
