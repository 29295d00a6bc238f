"""Rounds a and b to fp8 (e4m3, 3 mantissa bits) before the fp32 matmul, the classic 'free speed' cut: errors of several percent of the output's scale; should fail the 4 % tolerance."""
import torch


def custom_kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    a8 = a.to(torch.float8_e4m3fn).float()
    b8 = b.to(torch.float8_e4m3fn).float()
    return torch.relu(a8 @ b8 + bias.float()).to(torch.bfloat16)
