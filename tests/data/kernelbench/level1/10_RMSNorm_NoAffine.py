import torch
import torch.nn as nn


class Model(nn.Module):
    """RMS normalisation over the last dimension with no learned scale:
    out = x / sqrt(mean(x^2, dim=-1) + eps), eps = 1e-6."""

    def __init__(self, eps: float = 1e-6):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms


batch_size = 512
features = 2048


def get_inputs():
    # per-row scales from 0.1 to 10 so the normalisation matters
    scale = torch.exp(torch.empty(batch_size, 1).uniform_(-2.3, 2.3))
    return [torch.randn(batch_size, features) * scale]


def get_init_inputs():
    return [1e-6]
