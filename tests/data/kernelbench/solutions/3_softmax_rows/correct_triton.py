"""Honest Triton row softmax (one program per row, max subtracted): should pass."""
import torch
import triton
import triton.language as tl


@triton.jit
def _row_softmax(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    e = tl.where(mask, e, 0.0)
    tl.store(out_ptr + row * stride_out + cols, e / tl.sum(e, axis=0), mask=mask)


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    out = torch.empty_like(x)
    if x.numel() == 0:
        return out
    _row_softmax[(rows,)](x, out, cols, x.stride(0), out.stride(0),
                          BLOCK=triton.next_power_of_2(cols))
    return out
