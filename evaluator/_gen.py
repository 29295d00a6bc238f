"""The kernel of the checker's fast input writer (fastgen.py): one pass that draws a matrix of one
of the input laws (tasks/base.py, signed_matrix) and, for varied_rows, adds the heavy rows'
outliers and applies each row's scale and shift. Module level, so that the kernel's globals hold
`tl`."""
import triton
import triton.language as tl

SQRT3 = 1.7320508075688772
INV_SQRT2 = 0.7071067811865476
TWO_PI = 6.283185307179586


@triton.jit
def _normal(u1, u2):
    """Box-Muller: one standard normal from two uniforms in [0, 1)."""
    return tl.sqrt(-2.0 * tl.log(tl.maximum(u1, 1e-7))) * tl.cos(TWO_PI * u2)


# the seeds and the law change from call to call: one compiled kernel serves them all (Triton would
# otherwise compile again for a value of 1 or a multiple of 16)
@triton.jit(do_not_specialize=["seed", "dist", "spike_seed"])
def draw_rows(out, cols, seed, dist, row_scale, row_shift, row_heavy, spike_seed, spike_rate, heavy_mag,
              ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """out[row, col] for one block of one row. Every element has its own Philox counter (its flat
    index), so the values do not depend on the grid. `dist` picks the law: 0 normal, 1 uniform,
    2 laplace, 3 student t with 4 degrees of freedom, each with unit spread as in signed_matrix.
    With ROWS: heavy rows (row_heavy != 0) get outliers (a normal value times heavy_mag, at a
    rate of spike_rate), then the row becomes (x + shift) * scale."""
    row = tl.program_id(0).to(tl.int64)
    col = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = col < cols
    at = row * cols + col
    u1, u2, u3, u4 = tl.rand4x(seed, at)
    if dist == 0:
        x = _normal(u1, u2)
    elif dist == 1:
        x = (u1 * 2.0 - 1.0) * SQRT3
    elif dist == 2:
        sign = tl.where(u2 < 0.5, -1.0, 1.0)
        x = -tl.log(tl.maximum(u1, 1e-7)) * sign * INV_SQRT2
    else:
        # chi-square with 4 degrees of freedom, over 4: minus the mean log of two uniforms
        chi = -(tl.log(tl.maximum(u3, 1e-12)) + tl.log(tl.maximum(u4, 1e-12))) * 0.5
        x = _normal(u1, u2) / tl.maximum(tl.sqrt(chi), 0.05) * INV_SQRT2
    if ROWS:
        if tl.load(row_heavy + row) != 0:
            v1, v2, v3, _ = tl.rand4x(spike_seed, at)
            x += tl.where(v1 < spike_rate, _normal(v2, v3), 0.0) * heavy_mag
        x = (x + tl.load(row_shift + row)) * tl.load(row_scale + row)
    tl.store(out + at, x, mask=mask)
