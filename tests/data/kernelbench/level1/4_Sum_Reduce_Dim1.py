import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over dimension 1 of a 3-D tensor [batch, dim1, dim2] -> [batch, dim2]."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


batch_size = 64
dim1 = 4096
dim2 = 128
reduce_dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
