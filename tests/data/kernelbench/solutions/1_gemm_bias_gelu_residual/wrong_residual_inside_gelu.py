"""Adds the residual inside the activation, gelu(fc(x) + x), instead of after it, x + gelu(fc(x)):
state_dict loads, output is clearly off, should fail."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x) + x)
