"""Scales a by 1/16 and b by 16 in place (exact in bf16, so the product and the output are right) and never restores them: the caller's inputs are changed; should fail."""
import torch


def custom_kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    a.mul_(1.0 / 16)
    b.mul_(16.0)
    out = torch.addmm(bias.float(), a.float(), b.float())
    return out.relu_().to(torch.bfloat16)
