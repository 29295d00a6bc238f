import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, Swish activation and a learned per-feature scale:
    out = (y * sigmoid(y)) * scale with y = x @ W^T + b and scale a parameter [out_features]."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(out_features) * 0.5 + 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.gemm(x)
        return y * torch.sigmoid(y) * self.scale


batch_size = 128
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
