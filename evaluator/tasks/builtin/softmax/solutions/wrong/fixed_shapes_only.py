"""Correct only at the old fixed test and bench shapes, a uniform 1/N elsewhere (overfits the published shapes); should fail on hidden shapes."""
import torch

KNOWN = {(1, 1), (7, 131), (33, 1000), (64, 8192), (257, 4099), (3, 20000), (8192, 8192), (256, 1024)}


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if tuple(x.shape) in KNOWN:
        return torch.softmax(x, dim=-1)
    return torch.full_like(x, 1.0 / x.shape[-1])
