import torch
import torch.nn as nn


class Model(nn.Module):
    """A fully connected layer followed by ReLU: out = relu(x @ W^T + b), W [out_features,
    in_features], b [out_features]."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


batch_size = 256
in_features = 512
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
