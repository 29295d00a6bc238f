"""Correct only at the old fixed test and bench shapes, zeros elsewhere (overfits the published shapes); should fail on hidden shapes."""
import torch

KNOWN = {(1, 1, 1), (7, 33, 131), (33, 100, 65), (64, 256, 128), (257, 129, 300), (5, 1000, 17),
         (4096, 4096, 4096), (128, 256, 128)}


def custom_kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    if (m, k, n) in KNOWN:
        return torch.relu(a @ b + bias)
    return torch.zeros((m, n), dtype=torch.bfloat16, device=a.device)
