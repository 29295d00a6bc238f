import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, tanh, then a scale by a constant: out = 0.5 * tanh(x @ W^T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * torch.tanh(self.fc(x))


batch_size = 128
in_features = 256
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
