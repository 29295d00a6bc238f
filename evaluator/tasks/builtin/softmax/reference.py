"""Row softmax of an fp32 matrix."""
from __future__ import annotations

import torch

from evaluator.tasks.base import generator, varied_rows


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, dim=-1)


def reference_fp32(x: torch.Tensor) -> torch.Tensor:
    # computed in fp64 and rounded once: the gold answer for an fp32 task should not carry the
    # summation error of one particular fp32 implementation
    return torch.softmax(x.double(), dim=-1).float()


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor]:
    g = generator(seed, device)
    # wide log-scale: some rows nearly uniform, some nearly one-hot, so both the max
    # subtraction and the sum matter
    x = varied_rows(g, shape["M"], shape["N"], device, seed, log_scale=2.5)
    family = shape.get("family")
    if family == "large_magnitude":
        # values to about 1e4: exp overflows fp32 unless the row maximum is subtracted first
        x.mul_(1e3)
    elif family == "neg_inf":
        # a third of the entries masked out as -inf (attention masks do this); one entry of each
        # row, at a random column, stays finite so that every row has an answer
        masked = torch.rand(x.shape, generator=g, device=device) < 0.33
        keep = torch.randint(0, x.shape[1], (x.shape[0],), generator=g, device=device)
        masked[torch.arange(x.shape[0], device=device), keep] = False
        x.masked_fill_(masked, float("-inf"))
    return (x,)


def flops(shape: dict) -> float:
    # max, subtract, exp, sum, divide
    return 5.0 * shape["M"] * shape["N"]


def bytes_moved(shape: dict) -> float:
    return 2.0 * shape["M"] * shape["N"] * 4
