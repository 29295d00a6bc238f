"""Refusal case `trivial_constant`: the softmax is taken over a dimension of size one (the
keepdim mean), so every output element is exactly 1.0 whatever the input."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Attention-style pooling weights: softmax over the last dimension of the per-token mean
    score. The mean is kept as a dimension of size 1, so the softmax is over one element and the
    output is a tensor of ones [batch, seq, 1], independent of x."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = x.mean(dim=-1, keepdim=True)
        return torch.softmax(scores, dim=-1)


batch_size = 64
seq_len = 256
dim = 128


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return []
