import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax over a dimension of size one: every output element is 1.0 whatever x holds, so a
    kernel that returns ones would pass without reading its input."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x.sum(dim=-1, keepdim=True), dim=-1)


batch_size = 256
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
