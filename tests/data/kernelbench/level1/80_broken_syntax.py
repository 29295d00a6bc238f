"""Refusal case `broken`: this file does not parse (a missing colon and an unclosed bracket)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Doubles its input; the file has a syntax error, so it cannot even be imported."""

    def __init__(self)
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * 2.0


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
