"""Refusal case `broken`: imports a module that does not exist, so importing the file fails
with ModuleNotFoundError."""
import torch
import torch.nn as nn

import fused_ops_that_do_not_exist as fused  # noqa: F401  (no such module anywhere)


class Model(nn.Module):
    """Fused SiLU from a missing extension module; the import above fails first."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fused.silu(x)


batch_size = 16
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
