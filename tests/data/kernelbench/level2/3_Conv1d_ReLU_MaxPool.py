import torch
import torch.nn as nn


class Model(nn.Module):
    """1-D convolution (kernel 5, padding 2) over a [batch, channels, length] signal, then ReLU
    and a max pool of width 2: out = maxpool2(relu(conv1d(x)))."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.pool = nn.MaxPool1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.conv(x)))


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = 5
length = 2048


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
