"""gelu_bias_residual: out = gelu(x + bias) + residual, exact erf GELU, fp32 [M, N].

One pass over memory: each program takes a tile of BLOCK_M rows by BLOCK_N columns, loads the
bias slice once for all its rows, and reads x and residual and writes out exactly once. Tiles are
wide along the contiguous dimension so loads are full 128-byte lines.
"""
import torch
import triton
import triton.language as tl

INV_SQRT2 = tl.constexpr(0.7071067811865476)


@triton.jit
def _gelu_bias_residual(x_ptr, bias_ptr, res_ptr, out_ptr, n_rows, n_cols,
                        stride_x, stride_res, stride_out,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_ok[None, :]
    bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0)
    res = tl.load(res_ptr + rows[:, None] * stride_res + cols[None, :], mask=mask, other=0.0)
    z = x + bias[None, :]
    gelu = 0.5 * z * (1.0 + tl.math.erf(z * INV_SQRT2))
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], gelu + res, mask=mask)


def custom_kernel(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    if x.stride(-1) != 1:
        x = x.contiguous()
    if residual.stride(-1) != 1:
        residual = residual.contiguous()
    bias = bias.contiguous()
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m == 0 or n == 0:
        return out
    block_n = min(1024, triton.next_power_of_2(n))
    block_m = max(1, 4096 // block_n)
    grid = (triton.cdiv(m, block_m), triton.cdiv(n, block_n))
    _gelu_bias_residual[grid](x, bias, residual, out, m, n,
                              x.stride(0), residual.stride(0), out.stride(0),
                              BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
    return out
