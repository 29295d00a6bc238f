"""Honest ModelNew: same `proj` Linear and `pos` buffer (filled from the reference's
state_dict), bias and position row added in one addmm-style pass; should pass."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, max_len: int):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        # the values come from the reference's state_dict; only the shape matters here
        self.register_buffer("pos", torch.zeros(max_len, out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        shift = (self.pos[:t] + self.proj.bias).repeat(b, 1)  # [b * t, out]
        y = torch.addmm(shift, x.reshape(b * t, d), self.proj.weight.t())
        return torch.tanh(y).view(b, t, -1)
