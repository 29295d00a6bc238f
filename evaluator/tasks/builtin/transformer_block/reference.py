"""The forward pass of one pre-norm decoder block (Llama style) in bf16."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from evaluator.tasks.base import full_fp32, generator, signed_matrix, varied_rows

HEAD_DIM = 128
EPS = 1e-6


def _block(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    b, t, d = x.shape
    heads = d // HEAD_DIM
    n1 = F.rms_norm(x, (d,), w_norm1, EPS)
    q, k, v = (n1 @ w_qkv).view(b, t, 3, heads, HEAD_DIM).permute(2, 0, 3, 1, 4).unbind(0)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    h = x + attn.transpose(1, 2).reshape(b, t, d) @ w_o
    n2 = F.rms_norm(h, (d,), w_norm2, EPS)
    return h + (F.silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down


def reference(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down):
    return _block(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down)


def reference_fp32(*inputs):
    with full_fp32():
        return _block(*(t.float() for t in inputs))


def make_inputs(shape: dict, seed: int, device: str) -> tuple[torch.Tensor, ...]:
    g = generator(seed, device)
    b, t, d, f = shape["B"], shape["T"], shape["D"], shape["F"]
    kw = dict(generator=g, device=device, dtype=torch.float32)
    x = varied_rows(g, b * t, d, device, seed, log_scale=0.7, offset=0.2, heavy_mag=6.0)
    if shape.get("family") == "large_magnitude":
        # a residual stream 30 times larger: RMSNorm takes the scale out, the residual adds keep it
        x.mul_(30.0)
    w_norm1 = 1.0 + 0.3 * torch.randn(d, **kw)
    w_norm2 = 1.0 + 0.3 * torch.randn(d, **kw)
    # q and k columns scaled up so attention scores spread (std about 2.5): each query
    # attends to a handful of keys, and the attention branch is as large as the residual
    qkv_scale = torch.tensor([1.6, 1.6, 1.0], device=device).repeat_interleave(d)
    w_qkv = signed_matrix(g, d, 3 * d, device, seed + 1) * qkv_scale / d ** 0.5
    w_o = signed_matrix(g, d, d, device, seed + 2) / d ** 0.5
    w_gate = signed_matrix(g, d, f, device, seed + 3) / d ** 0.5
    w_up = signed_matrix(g, d, f, device, seed) / d ** 0.5
    w_down = 1.5 * signed_matrix(g, f, d, device, seed + 1) / f ** 0.5
    weights = (w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down)
    return (x.view(b, t, d).bfloat16(),) + tuple(w.bfloat16() for w in weights)


def flops(shape: dict) -> float:
    b, t, d, f = shape["B"], shape["T"], shape["D"], shape["F"]
    tokens = b * t
    projections = 2.0 * tokens * d * (3 * d) + 2.0 * tokens * d * d
    mlp = 3 * 2.0 * tokens * d * f
    # q k^T and p v, each 2 * B * T * T * D, halved by the causal mask
    attention = 2 * 2.0 * b * t * t * d / 2
    return projections + mlp + attention


def bytes_moved(shape: dict) -> float:
    b, t, d, f = shape["B"], shape["T"], shape["D"], shape["F"]
    weights = 3 * d * d + d * d + 3 * d * f + 2 * d
    activations = 2 * b * t * d  # x read, out written
    return 2.0 * (weights + activations)
