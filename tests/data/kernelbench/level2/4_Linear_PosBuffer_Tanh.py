import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear projection plus a fixed sinusoidal position table, then tanh:
    out[b, t] = tanh(x[b, t] @ W^T + bias + pos[t]). The position table is a registered buffer
    (state in the state_dict that is not a parameter), built from the constructor's arguments."""

    def __init__(self, in_features: int, out_features: int, max_len: int):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
        freq = torch.exp(torch.arange(0, out_features, 2, dtype=torch.float32)
                         * (-math.log(10000.0) / out_features))
        pos = torch.zeros(max_len, out_features)
        pos[:, 0::2] = torch.sin(position * freq)
        pos[:, 1::2] = torch.cos(position * freq)
        self.register_buffer("pos", pos)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        return torch.tanh(self.proj(x) + self.pos[:t])


batch_size = 16
seq_len = 128
in_features = 256
out_features = 512
max_len = 256


def get_inputs():
    return [torch.randn(batch_size, seq_len, in_features)]


def get_init_inputs():
    return [in_features, out_features, max_len]
