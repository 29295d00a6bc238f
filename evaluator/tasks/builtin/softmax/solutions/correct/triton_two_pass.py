"""Triton softmax, one program per row streaming fixed 1024-wide blocks (online max and rescaled sum, then a write pass), any N; should pass."""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _softmax_two_pass(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x_row = x_ptr + row * stride_x
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK):
        ok = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=ok, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.where(ok, tl.exp(x - m_new), 0.0), axis=0)
        m = m_new
    inv = 1.0 / s
    for start in range(0, n_cols, BLOCK):
        ok = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=ok, other=0.0)
        tl.store(out_ptr + row * stride_out + start + cols, tl.exp(x - m) * inv, mask=ok)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    if x.numel():
        _softmax_two_pass[(rows,)](x, out, cols, x.stride(0), out.stride(0), BLOCK=BLOCK)
    return out
