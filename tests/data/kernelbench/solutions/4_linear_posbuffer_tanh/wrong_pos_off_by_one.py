"""Off-by-one in the position table: token t gets pos[t + 1] instead of pos[t]; should fail."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, max_len: int):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.register_buffer("pos", torch.zeros(max_len, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        return torch.tanh(self.proj(x) + self.pos[1:t + 1])
