import torch
import torch.nn as nn


class Model(nn.Module):
    """Gated SiLU on bfloat16 inputs: out = silu(gate) * up, all tensors bfloat16."""

    def __init__(self):
        super().__init__()

    def forward(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(gate) * up


batch_size = 32
dim = 32768


def get_inputs():
    gate = torch.randn(batch_size, dim, dtype=torch.bfloat16)
    up = torch.randn(batch_size, dim, dtype=torch.bfloat16)
    return [gate, up]


def get_init_inputs():
    return []
