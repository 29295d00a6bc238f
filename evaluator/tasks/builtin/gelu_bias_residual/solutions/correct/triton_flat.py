"""Triton gelu(x + bias) + residual over the flattened matrix (the bias column is offset % N), exact erf GELU in fp32; should pass."""
import torch
import triton
import triton.language as tl

BLOCK = 4096


@triton.jit
def _gelu_bias_residual_flat(x_ptr, b_ptr, r_ptr, out_ptr, total, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < total
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    b = tl.load(b_ptr + offs % n_cols, mask=ok, other=0.0)
    r = tl.load(r_ptr + offs, mask=ok, other=0.0)
    z = x + b
    tl.store(out_ptr + offs, 0.5 * z * (1.0 + tl.math.erf(z * 0.7071067811865476)) + r, mask=ok)


def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    residual = residual.contiguous()
    bias = bias.contiguous()
    out = torch.empty_like(x)
    total = x.numel()
    if total:
        _gelu_bias_residual_flat[(triton.cdiv(total, BLOCK),)](x, bias, residual, out, total,
                                                               x.shape[-1], BLOCK=BLOCK)
    return out
