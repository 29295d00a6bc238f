"""The causal mask is off by one (tril(diagonal=1)): each query also sees the next token, a subtle future leak that changes every row but the last; should fail whenever T > 1."""
import math

import torch
import torch.nn.functional as F

HEAD_DIM = 128
EPS = 1e-6


def _rmsnorm(v, w):
    return v * torch.rsqrt(v.pow(2).mean(dim=-1, keepdim=True) + EPS) * w


def custom_kernel(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    b, t, d = x.shape
    heads = d // HEAD_DIM
    xf = x.float()
    n1 = _rmsnorm(xf, w_norm1.float())
    q, k, v = (n1 @ w_qkv.float()).split(d, dim=-1)
    q, k, v = (z.reshape(b, t, heads, HEAD_DIM).transpose(1, 2) for z in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(HEAD_DIM)
    mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril(diagonal=1)
    probs = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)
    h = xf + (probs @ v).transpose(1, 2).reshape(b, t, d) @ w_o.float()
    n2 = _rmsnorm(h, w_norm2.float())
    out = h + (F.silu(n2 @ w_gate.float()) * (n2 @ w_up.float())) @ w_down.float()
    return out.to(torch.bfloat16)
