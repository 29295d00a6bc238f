import torch
import torch.nn as nn


class Model(nn.Module):
    """Plain matrix product of two inputs: C = A @ B with A [M, K] and B [K, N], float32."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 512
K = 384
N = 256


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(K, N)
    return [A, B]


def get_init_inputs():
    return []
