# Planted bug: a correct Triton softmax whose last program also writes one float just past the end
# of the output, when the output's size is not a multiple of 512 bytes. PyTorch's caching
# allocator rounds every block up to 512 bytes, so in a normal run the stray float lands in the
# output's own padding: nothing else changes and every check passes (on the H200 a whole
# stray row instead reaches the next allocation and is caught as a modified
# input). Only compute-sanitizer's memcheck, which runs with the caching allocator off and knows
# each allocation's exact size, can see it.
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y, mask=mask)
    if (row == n_rows - 1) & ((n_rows * n_cols) % 128 != 0):
        # the planted out-of-bounds write: one float after the last element
        tl.store(out_ptr + n_rows * n_cols, tl.sum(y, axis=0))


def custom_kernel(x):
    m, n = x.shape
    out = torch.empty_like(x)
    _softmax[(m,)](x, out, m, n, BLOCK=triton.next_power_of_2(n))
    return out
