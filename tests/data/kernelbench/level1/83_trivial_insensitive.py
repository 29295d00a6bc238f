"""Refusal case `trivial_insensitive`: the output is the mean of each row of a huge input whose
rows are a fixed offset plus a tiny jitter, so it varies across elements (0.005, 1.005, 2.005,
...) but changes by about 1e-6 of its scale between two input draws: a kernel returning a
precomputed answer would pass."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean of each row of x [rows, samples]: per-bucket average timestamp, where bucket i holds
    timestamps i + 0.01 * u with u uniform in [0, 1)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


rows = 64
samples = 32768


def get_inputs():
    offsets = torch.arange(rows, dtype=torch.float32).unsqueeze(1)
    return [offsets + 0.01 * torch.rand(rows, samples)]


def get_init_inputs():
    return []
