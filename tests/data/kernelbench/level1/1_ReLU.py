import torch
import torch.nn as nn


class Model(nn.Module):
    """Elementwise ReLU of a float32 matrix: out = max(x, 0)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


batch_size = 16
dim = 131072


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
