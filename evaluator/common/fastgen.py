"""The checker's fast input writer: signed_matrix and varied_rows (tasks/base.py) drawn in one
pass over memory by a Triton kernel (_gen.py), where torch takes one pass per operation.

Writing inputs is most of what a GPU timing round costs on the memory-bound tasks: every batch,
the baselines' included, gets fresh inputs, and on an H200 torch built a softmax input in about
1.5 ms against 0.15 ms of timed call (docs/bench/checker-cost.md). The fewer milliseconds a batch
costs outside its window, the more batches fit in the timing budget, and the score's error is the
sampling noise of their medians (docs/bench/judge-clock.md).

Only the checker uses it (`base.fast_inputs()`), for the inputs of timed batches: it builds them
and verifies them against its own fingerprints, so nothing else needs the same bytes from the same
seed. The laws are those of the torch path, which stays their definition; the draws differ.
Both functions return None where they cannot run (no Triton, a CPU device) and the caller takes
the torch path.
"""
from __future__ import annotations

import torch

BLOCK = 2048
SPIKE_RATE = 0.02  # the share of a heavy row's elements that carry an outlier (as in base.varied_rows)
_kernels = None


def _load():
    global _kernels
    if _kernels is None:
        try:
            from evaluator.common import _gen

            _kernels = _gen
        except Exception:  # noqa: BLE001 - no Triton: the torch path
            _kernels = False
    return _kernels or None


def _ready(device) -> bool:
    """On the GPU, with Triton (tests run the kernel under Triton's interpreter by patching this)."""
    return torch.device(device).type == "cuda" and _load() is not None


def _seeds(g: torch.Generator, device, count: int) -> list[int]:
    """Philox keys for the kernel, drawn from the caller's generator: the same seed, the same bytes.
    At least 2**32, so that the kernel always sees a 64-bit integer (one compiled variant)."""
    return torch.randint(1 << 32, 1 << 62, (count,), generator=g, device=device).tolist()


def _launch(rows: int, cols: int, device, seed: int, dist: int, row_args=None) -> torch.Tensor:
    out = torch.empty(rows, cols, dtype=torch.float32, device=device)
    if out.numel() == 0:
        return out
    grid = (rows, -(-cols // BLOCK))
    if row_args is None:
        dummy = torch.empty(1, dtype=torch.float32, device=device)
        _kernels.draw_rows[grid](out, cols, seed, dist, dummy, dummy, dummy.view(torch.int32), 1 << 32, 0.0, 0.0,
                                 ROWS=False, BLOCK=BLOCK)
    else:
        scale, shift, heavy, spike_seed, heavy_mag = row_args
        _kernels.draw_rows[grid](out, cols, seed, dist, scale, shift, heavy, spike_seed, SPIKE_RATE, heavy_mag,
                                 ROWS=True, BLOCK=BLOCK)
    return out


def signed_matrix(g: torch.Generator, rows: int, cols: int, device, dist: int) -> torch.Tensor | None:
    """base.signed_matrix in one pass, or None where the kernel cannot run."""
    if not _ready(device):
        return None
    (seed,) = _seeds(g, device, 1)
    return _launch(rows, cols, device, seed, dist)


def varied_rows(g: torch.Generator, rows: int, cols: int, device, dist: int, *, log_scale: float, offset: float,
                heavy_frac: float, heavy_mag: float) -> torch.Tensor | None:
    """base.varied_rows in one pass, or None where the kernel cannot run."""
    if not _ready(device):
        return None
    kw = dict(generator=g, device=device, dtype=torch.float32)
    seed, spike_seed = _seeds(g, device, 2)
    scale = torch.exp((torch.rand(rows, **kw) * 2 - 1) * log_scale)
    shift = torch.randn(rows, **kw) * offset
    heavy = (torch.rand(rows, **kw) < heavy_frac).to(torch.int32)
    return _launch(rows, cols, device, seed, dist, (scale, shift, heavy, spike_seed, float(heavy_mag)))
