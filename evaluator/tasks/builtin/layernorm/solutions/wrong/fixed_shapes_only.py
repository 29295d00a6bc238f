"""Correct only at the old fixed test and bench shapes, returns the bias broadcast elsewhere (overfits the published shapes); should fail on hidden shapes."""
import torch

KNOWN = {(1, 1), (7, 131), (33, 1000), (64, 8192), (257, 4099), (3, 20000), (8192, 8192), (256, 1024)}


def custom_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    if tuple(x.shape) in KNOWN:
        return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)
    return bias.expand_as(x).clone()
