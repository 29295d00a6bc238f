import torch
import torch.nn as nn


class Model(nn.Module):
    """A small 2-D convolution: 3 input channels to 16 output channels, 3x3 kernel, stride 1,
    padding 1, with bias, on a batch of 64x64 images."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 3
out_channels = 16
kernel_size = 3
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
