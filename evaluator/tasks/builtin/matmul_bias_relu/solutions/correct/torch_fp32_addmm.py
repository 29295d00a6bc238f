"""relu(a @ b + bias) as one fp32 addmm (fp32 accumulation), rounded once to bf16; should pass."""
import torch


def custom_kernel(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = torch.addmm(bias.float(), a.float(), b.float())
    return out.relu_().to(torch.bfloat16)
