"""Adds both residual branches into x in place and returns x (values right to bf16 rounding, but the input is mutated and aliased); should fail."""
import torch
import torch.nn.functional as F

HEAD_DIM = 128
EPS = 1e-6


def custom_kernel(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    b, t, d = x.shape
    heads = d // HEAD_DIM
    n1 = F.rms_norm(x, (d,), w_norm1, EPS)
    q, k, v = (n1 @ w_qkv).view(b, t, 3, heads, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x.add_(attn.transpose(1, 2).reshape(b, t, d) @ w_o)  # x is now h
    n2 = F.rms_norm(x, (d,), w_norm2, EPS)
    return x.add_((F.silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down)
