"""Kernels of the checker's GPU fast path (fastcheck.py): one pass each over a tensor, each program
writing a partial result that torch then reduces. Module level, so that the kernels' globals hold
`tl`."""
import triton
import triton.language as tl


# the key is new for every fill: one compiled kernel serves every key (Triton would otherwise
# specialize on whether each half is divisible by 16, and a fill that met a new case compiled
# inside its timed write, a few hundred milliseconds; docs/evaluator.md, "Work left running")
@triton.jit(do_not_specialize=["k1", "k2"])
def keyed_sum(words, n, k1, k2, partial, BLOCK: tl.constexpr):
    """partial[p] = sum of word[i] * w(i) over the program's block, int64 wrapping. w(i) is a
    32-bit hash of i under the key (k1, k2; each below 2**32, passed above it so that they are
    int64 here): every word has a secret weight of its own. The hash is a few integer
    operations: on an H200 the pass over a softmax input takes 0.16 ms, against 0.40 ms with
    weights from Philox (tl.randint)."""
    p = tl.program_id(0)
    i = p * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    word = tl.load(words + i, mask=mask, other=0).to(tl.int64)
    x = (i.to(tl.int64) + k1) & 0xFFFFFFFF
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    x = x ^ (x >> 16)
    weight = (x ^ k2) & 0xFFFFFFFF
    tl.store(partial + p, tl.sum(word * weight, axis=0))


@triton.jit
def square_sum(gold, n, sums, bad, BLOCK: tl.constexpr):
    """sums[p]: the sum of squares of the block's finite values (fp64); bad[p]: how many are not
    finite."""
    p = tl.program_id(0)
    i = p * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    g = tl.load(gold + i, mask=mask, other=0.0).to(tl.float32)
    finite = (g == g) & (tl.abs(g) < float("inf"))  # noqa: PLR0124 - false for NaN only
    g = tl.where(finite, g, 0.0).to(tl.float64)
    tl.store(sums + p, tl.sum(g * g, axis=0))
    tl.store(bad + p, tl.sum((mask & ~finite).to(tl.int32), axis=0))


@triton.jit
def worst_ratio(out, gold, n, floor, rtol, worst, err_max, bad, BLOCK: tl.constexpr):
    """Over the block: the largest |out - gold| / max(floor + rtol * |gold|, tiny), the largest
    |out - gold|, and how many outputs are not finite (left out of both maxima). `floor` points
    to atol x the gold answer's rms, computed on the device: no wait between the two passes."""
    p = tl.program_id(0)
    i = p * BLOCK + tl.arange(0, BLOCK)
    mask = i < n
    o = tl.load(out + i, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(gold + i, mask=mask, other=0.0).to(tl.float32)
    finite = (o == o) & (tl.abs(o) < float("inf"))  # noqa: PLR0124 - false for NaN only
    err = tl.where(finite, tl.abs(o - g), 0.0)
    allowed = tl.maximum(tl.load(floor) + rtol * tl.abs(g), 1.1754943508222875e-38)
    tl.store(worst + p, tl.max(err / allowed, axis=0))
    tl.store(err_max + p, tl.max(err, axis=0))
    tl.store(bad + p, tl.sum((mask & ~finite).to(tl.int32), axis=0))
