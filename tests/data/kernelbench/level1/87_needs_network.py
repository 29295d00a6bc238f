"""Refusal case `network`: forward downloads a per-channel scale vector from an external host
(urllib), so it cannot run in a sandbox without network access."""
import urllib.request

import torch
import torch.nn as nn

SCALES_URL = "https://example.com/kernelbench/channel_scales.txt"


class Model(nn.Module):
    """Per-channel scaling with scales fetched over HTTP at every call:
    out[:, c] = x[:, c] * scale[c]."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with urllib.request.urlopen(SCALES_URL, timeout=10) as response:
            text = response.read().decode()
        scales = torch.tensor([float(v) for v in text.split()], dtype=x.dtype, device=x.device)
        return x * scales[: x.shape[1]]


batch_size = 16
channels = 4096


def get_inputs():
    return [torch.randn(batch_size, channels)]


def get_init_inputs():
    return []
