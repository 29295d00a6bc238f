"""The checker's in-window read (checker.Gather): one launch that reads a secret sample of words
from every output of a batch. Module level, so that the kernel's globals hold `tl`."""
import triton
import triton.language as tl


@triton.jit
def gather_words(addrs, idx, samples, n, BLOCK: tl.constexpr):
    k = tl.program_id(0)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = j < n
    base = tl.load(addrs + k).to(tl.pointer_type(tl.int32))
    pos = tl.load(idx + k * n + j, mask=mask, other=0)
    words = tl.load(base + pos, mask=mask, other=0)
    tl.store(samples + k * n + j, words, mask=mask)
