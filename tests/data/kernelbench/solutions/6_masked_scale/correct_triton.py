"""Honest Triton masked scale: x float32 and a bool mask (read as bytes), out = mask ? 2.5 x : 0;
should pass."""
import torch
import triton
import triton.language as tl


@triton.jit
def _masked_scale(x_ptr, m_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok, other=0.0)
    keep = tl.load(m_ptr + offs, mask=ok, other=0)
    tl.store(out_ptr + offs, tl.where(keep != 0, x * scale, 0.0), mask=ok)


def custom_kernel(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    m = mask.contiguous().view(torch.uint8)  # same bytes, a dtype every backend loads
    out = torch.empty_like(x)
    n = x.numel()
    if n == 0:
        return out
    block = 4096
    _masked_scale[(triton.cdiv(n, block),)](x, m, out, n, 2.5, BLOCK=block)
    return out
