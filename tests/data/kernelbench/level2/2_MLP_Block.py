import torch
import torch.nn as nn


class Model(nn.Module):
    """A pre-norm MLP block: out = x + W2 gelu(W1 layernorm(x) + b1) + b2, with hidden width
    4x the model width (LayerNorm with affine parameters, two Linear layers with bias)."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.up(self.norm(x)))
        return x + self.down(h)


batch_size = 8
seq_len = 64
dim = 256
hidden = 1024


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return [dim, hidden]
