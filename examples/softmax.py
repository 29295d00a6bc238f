"""softmax: out = softmax(x, dim=-1), x fp32 [M, N].

When a row fits (N <= 16384) it is loaded once into registers, reduced for its maximum and sum,
and written once: one read and one write of memory, the floor. A program takes one row when rows
are long (8192 columns: 16 warps, 16 values per thread) and several short rows otherwise. Wider
rows take two sweeps: an online pass keeps a running maximum and a rescaled running sum per
lane, then a second pass writes exp(x - max) / sum.
"""
import torch
import triton
import triton.language as tl

MAX_ROW_BLOCK = 16384  # fp32 elements of one row held in registers by one program
TILE = 4096  # elements per program when several short rows share one
LOOP_BLOCK = 4096


@triton.jit
def _softmax_rows(x_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
                  ROWS: tl.constexpr, BLOCK: tl.constexpr):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=-float("inf"))
    # rows past the end are all padding: shift by 0 and divide by 1 there, so no inf - inf or 0 / 0
    live = rows < n_rows
    row_max = tl.where(live, tl.max(x, axis=1), 0.0)
    e = tl.exp(x - row_max[:, None])
    total = tl.where(live, tl.sum(e, axis=1), 1.0)
    out = e / total[:, None]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], out, mask=mask)


@triton.jit
def _softmax_row_looped(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK)
    run_max = tl.full([BLOCK], -float("inf"), tl.float32)
    run_sum = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf"))
        new_max = tl.maximum(run_max, x)
        # lanes that have seen only padding keep -inf; shift by 0 there so exp gives 0, not nan
        shift = tl.where(new_max == -float("inf"), 0.0, new_max)
        run_sum = run_sum * tl.exp(run_max - shift) + tl.exp(x - shift)
        run_max = new_max
    row_max = tl.max(run_max, axis=0)
    total = tl.sum(run_sum * tl.exp(run_max - row_max), axis=0)
    inv = 1.0 / total
    for start in range(0, n_cols, BLOCK):
        mask = start + cols < n_cols
        x = tl.load(x_row + start + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + start + cols, tl.exp(x - row_max) * inv, mask=mask)


def _warps(block: int) -> int:
    return 4 if block <= 1024 else 8 if block <= 4096 else 16


def custom_kernel(x: torch.Tensor) -> torch.Tensor:
    if x.stride(-1) != 1:
        x = x.contiguous()
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m == 0 or n == 0:
        return out
    block = triton.next_power_of_2(n)
    if block <= MAX_ROW_BLOCK:
        rows = max(1, TILE // block)
        _softmax_rows[(triton.cdiv(m, rows),)](x, out, m, n, x.stride(0), out.stride(0),
                                               ROWS=rows, BLOCK=block, num_warps=_warps(rows * block))
    else:
        _softmax_row_looped[(m,)](x, out, n, x.stride(0), out.stride(0), BLOCK=LOOP_BLOCK,
                                  num_warps=_warps(LOOP_BLOCK))
    return out
