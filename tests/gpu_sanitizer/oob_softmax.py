# Planted bug: a correct Triton softmax whose last program also writes one row past the end of
# the output (an unmasked store) when the matrix is small. The answer is right, so only compute-sanitizer's memcheck can
# catch it.
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
    if (row == n_rows - 1) & (n_rows * n_cols < 65536):
        # the planted out-of-bounds write, on small shapes only: one row beyond the output. Inside
        # PyTorch's cached 2 MB blocks it corrupts a neighbour silently instead of faulting
        tl.store(out_ptr + (row + 1) * n_cols + cols, y, mask=mask)


def custom_kernel(x):
    m, n = x.shape
    out = torch.empty_like(x)
    _softmax[(m,)](x, out, m, n, BLOCK=triton.next_power_of_2(n))
    return out
