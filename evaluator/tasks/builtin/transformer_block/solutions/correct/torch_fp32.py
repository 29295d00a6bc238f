"""The decoder block in plain torch, all maths in fp32 (explicit masked-softmax attention, no SDPA), rounded once to bf16; should pass."""
import math

import torch
import torch.nn.functional as F

HEAD_DIM = 128
EPS = 1e-6


def _rmsnorm(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return v * torch.rsqrt(v.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def custom_kernel(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    b, t, d = x.shape
    heads = d // HEAD_DIM
    xf = x.float()
    n1 = _rmsnorm(xf, w_norm1.float())
    q, k, v = (n1 @ w_qkv.float()).split(d, dim=-1)

    def split_heads(z):
        return z.reshape(b, t, heads, HEAD_DIM).transpose(1, 2)  # [b, heads, t, 128]

    scores = split_heads(q) @ split_heads(k).transpose(-1, -2) / math.sqrt(HEAD_DIM)
    causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    attn = (probs @ split_heads(v)).transpose(1, 2).reshape(b, t, d)
    h = xf + attn @ w_o.float()
    n2 = _rmsnorm(h, w_norm2.float())
    out = h + (F.silu(n2 @ w_gate.float()) * (n2 @ w_up.float())) @ w_down.float()
    return out.to(torch.bfloat16)
