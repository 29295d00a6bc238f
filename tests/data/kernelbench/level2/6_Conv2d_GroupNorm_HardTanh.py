import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 convolution (padding 1), GroupNorm with 4 groups and affine parameters, then HardTanh
    clamping to [-1, 1]."""

    def __init__(self, in_channels: int, out_channels: int, groups: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)
        self.act = nn.Hardtanh(-1.0, 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


batch_size = 8
in_channels = 16
out_channels = 16
groups = 4
height = 32
width = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, groups]
