"""Correct maths but with an extra parameter `gelu_scale` the reference has no value for:
load_state_dict(strict=True) reports a missing key, should be rejected."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.gelu_scale = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.gelu_scale * torch.nn.functional.gelu(self.fc(x))
