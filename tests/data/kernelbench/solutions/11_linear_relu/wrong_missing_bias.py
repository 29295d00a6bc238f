"""Forgets the bias: relu(x @ W^T) instead of relu(x @ W^T + b); state_dict loads, output is
off, should fail."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ self.fc.weight.t())
