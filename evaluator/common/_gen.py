"""The kernel of the checker's fast input writer (fastgen.py): one pass that draws a matrix of one
of the input laws (tasks/base.py, signed_matrix) and, for varied_rows, adds the heavy rows'
outliers and applies each row's scale and shift. Module level, so that the kernel's globals hold
`tl`."""
import triton
import triton.language as tl


# the seeds and the law change from call to call: one compiled kernel serves them all (Triton would
# otherwise compile again for a value of 1 or a multiple of 16)
@triton.jit(do_not_specialize=["seed", "dist", "spike_seed"])
def draw_rows(out, cols, seed, dist, row_scale, row_shift, row_heavy, spike_seed, spike_rate, heavy_mag,
              ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """out[row, col] for BLOCK columns of one row, in four quarters of BLOCK // 4 columns. One Philox
    call gives four words, one per quarter, so its cost (the kernel's largest) is shared by four
    values; counters are unique over the tensor, so the values do not depend on the grid. `dist`
    picks the law: 0 normal, 1 uniform, 2 laplace, 3 student t with 4 degrees of freedom, each
    with unit spread as in signed_matrix. With ROWS: heavy rows (row_heavy != 0) get outliers (a
    normal value times heavy_mag, at a rate of spike_rate), then the row becomes
    (x + shift) * scale."""
    Q: tl.constexpr = BLOCK // 4
    row = tl.program_id(0).to(tl.int64)
    blocks = tl.cdiv(cols, BLOCK).to(tl.int64)
    j = tl.arange(0, Q)
    col0 = tl.program_id(1) * BLOCK + j
    counter = (row * blocks + tl.program_id(1)) * Q + j
    w1, w2, w3, w4 = tl.randint4x(seed, counter)
    u1, u2, u3, u4 = _unit(w1), _unit(w2), _unit(w3), _unit(w4)
    if dist == 0:
        x1, x2 = _normal_pair(u1, u2)
        x3, x4 = _normal_pair(u3, u4)
    elif dist == 1:
        x1, x2, x3, x4 = _uniform(u1), _uniform(u2), _uniform(u3), _uniform(u4)
    elif dist == 2:
        x1, x2, x3, x4 = _laplace(w1), _laplace(w2), _laplace(w3), _laplace(w4)
    else:
        # student t, four values from eight words: two normal pairs, and for each value a
        # chi-square with 4 degrees of freedom over 4 (minus the mean log of two uniforms) from the
        # two 16-bit halves of one word; sqrt(chi) is clamped at 0.05, far above 16 bits' smallest
        z1, z2 = _normal_pair(u1, u2)
        z3, z4 = _normal_pair(u3, u4)
        v1, v2, v3, v4 = tl.randint4x(seed, counter + (1 << 40))  # counters no other value uses
        x1, x2, x3, x4 = _student(z1, v1), _student(z2, v2), _student(z3, v3), _student(z4, v4)
    for q in tl.static_range(4):
        x = x1 if q == 0 else x2 if q == 1 else x3 if q == 2 else x4
        col = col0 + q * Q
        at = row * cols + col
        if ROWS:
            if tl.load(row_heavy + row) != 0:
                s1, s2, s3, _ = tl.rand4x(spike_seed, at)
                spike, _ = _normal_pair(s2, s3)
                x += tl.where(s1 < spike_rate, spike, 0.0) * heavy_mag
            x = (x + tl.load(row_shift + row)) * tl.load(row_scale + row)
        tl.store(out + at, x, mask=col < cols)


@triton.jit
def _normal_pair(u1, u2):
    """Box-Muller: two independent standard normals from two uniforms in [0, 1)."""
    r = tl.sqrt(-2.0 * tl.log(tl.maximum(u1, 1e-7)))
    return r * tl.cos(6.283185307179586 * u2), r * tl.sin(6.283185307179586 * u2)


@triton.jit
def _unit(w):
    """A uniform in [0, 1) from the top 24 bits of a word (all an fp32 holds)."""
    return ((w >> 8) & 0xFFFFFF).to(tl.float32) * 5.9604644775390625e-08


@triton.jit
def _uniform(u):
    return (u * 2.0 - 1.0) * 1.7320508075688772  # sqrt(3): unit variance


@triton.jit
def _laplace(w):
    """Unit-variance laplace from one word: its sign from the lowest bit, its size from the rest."""
    u = tl.maximum(_unit(w), 1e-7)
    return tl.where((w & 1) == 0, -1.0, 1.0) * -tl.log(u) * 0.7071067811865476


@triton.jit
def _student(z, w):
    lo = tl.maximum((w & 0xFFFF).to(tl.float32) * 1.52587890625e-05, 1e-12)
    hi = tl.maximum(((w >> 16) & 0xFFFF).to(tl.float32) * 1.52587890625e-05, 1e-12)
    chi = -(tl.log(lo) + tl.log(hi)) * 0.5
    return z / tl.maximum(tl.sqrt(chi), 0.05) * 0.7071067811865476
