"""Refusal case `empty`: top-k with k = 0 returns a [batch, 0] tensor, zero elements."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """The k largest values of each row, sorted; here k is 0, so the output has no elements."""

    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.topk(x, self.k, dim=-1).values


batch_size = 128
dim = 8192
top_k = 0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [top_k]
