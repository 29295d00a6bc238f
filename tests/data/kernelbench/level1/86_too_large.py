"""Refusal case `too_large`: forward allocates a fixed scratch table of 10**13 bytes (10 TB),
whatever the shape constants are, so no shrinking of them makes it fit on any device."""
import torch
import torch.nn as nn

SCRATCH_BYTES = 10 ** 13


class Model(nn.Module):
    """Scale by two through a (pointlessly) huge scratch buffer: x is copied into the start of a
    10 TB float32 table and read back doubled."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = torch.empty(SCRATCH_BYTES // 4, dtype=torch.float32, device=x.device)
        n = x.numel()
        table[:n].copy_(x.reshape(-1))
        return table[:n].view_as(x) * 2.0


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
