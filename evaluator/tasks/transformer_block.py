"""The forward pass of one pre-norm decoder block (Llama style) in bf16."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from evaluator.tasks.base import (full_fp32, functions_of, generator, signed_matrix, Task, Tolerance, varied_rows)

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


TASK = Task(
    name="transformer_block",
    title="Transformer block forward (bf16)",
    description=(
        "The forward pass of one pre-norm decoder block, all tensors bf16. With x of shape "
        "[B, T, D] and heads of size 128 (n_heads = D / 128): n1 = rmsnorm(x) * w_norm1; "
        "q, k, v = split(n1 @ w_qkv) (w_qkv is [D, 3D]: q columns, then k, then v, heads side "
        "by side in each); h = x + causal_attention(q, k, v) @ w_o, with softmax(q k^T / "
        "sqrt(128)) over keys at or before each query; n2 = rmsnorm(h) * w_norm2; out = h + "
        "(silu(n2 @ w_gate) * (n2 @ w_up)) @ w_down. RMSNorm eps is 1e-6. The output is compared "
        "with the same maths done in fp32, to about 6 % of the output's scale: bf16 rounding "
        "passes, fp8 weights or a skipped branch do not. Compute bound; the benchmark shapes are "
        "B 4, T 2048, D 2048, F 5632 and B 1, T 4096, D 4096, F 11008, where fusing across the "
        "block leaves more room than on a single operation."
    ),
    signature=(
        "def custom_kernel(x, w_norm1, w_qkv, w_o, w_norm2, w_gate, w_up, w_down) -> torch.Tensor:\n"
        "    # all bfloat16: x [B, T, D]; w_norm1 [D]; w_qkv [D, 3D]; w_o [D, D]; w_norm2 [D];\n"
        "    # w_gate [D, F]; w_up [D, F]; w_down [F, D]. Heads of 128, causal, RMSNorm eps 1e-6.\n"
        "    # Return a new bfloat16 [B, T, D] tensor: the block's output"
    ),
    input_names=("x", "w_norm1", "w_qkv", "w_o", "w_norm2", "w_gate", "w_up", "w_down"),
    output_dtype=torch.bfloat16,
    **functions_of(globals()),
    test_shapes=(
        {"B": 1, "T": 1, "D": 128, "F": 128},
        {"B": 2, "T": 5, "D": 128, "F": 200},
        {"B": 1, "T": 37, "D": 256, "F": 384},
        {"B": 1, "T": 64, "D": 128, "F": 256},
        {"B": 2, "T": 19, "D": 256, "F": 333},
    ),
    bench_shapes_gpu=(
        {"B": 4, "T": 2048, "D": 2048, "F": 5632},
        {"B": 1, "T": 4096, "D": 4096, "F": 11008},
    ),
    bench_shapes_cpu=({"B": 1, "T": 64, "D": 256, "F": 512},),
    tolerance=Tolerance(atol=6e-2, rtol=6e-2),
    max_speedup_vs_compile=2.5,
    bound="compute",
)
