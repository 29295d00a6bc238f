import torch
import torch.nn as nn


class Model(nn.Module):
    """A file that does not parse: the colon after forward's parameters is missing."""

    def forward(self, x)
        return x


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
