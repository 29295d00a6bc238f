"""Softmax computed in place in the input's storage and the input itself returned (right values, but mutates x and aliases it); should fail."""
import torch


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x.sub_(x.amax(dim=-1, keepdim=True)).exp_()
    x.div_(x.sum(dim=-1, keepdim=True))
    return x
