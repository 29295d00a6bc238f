"""Checks the judge applies to what the runner claims and returns. Pure functions, no processes.

Every message from the runner is untrusted: it is validated field by field, and the output is
rebuilt from raw bytes with the dtype and shape the judge expects (never the ones claimed), so no
object made by the submission ever reaches the judge.
"""
from __future__ import annotations

import math
import re

import torch

from evaluator.common import fastcheck

# problems only the runner can see (they need the live tensors) and may report
RUNNER_PROBLEMS = ("wrong_type", "wrong_device", "aliases_input", "aliases_output", "input_modified",
                   "deferred_write")
# failures the runner may report instead of a result
RUNNER_ERRORS = ("import_error", "no_custom_kernel", "crash", "out_of_memory", "params_mismatch")

# two calls on the same input may differ by at most this fraction of the task tolerance
# (atomics may reorder additions; anything larger is not the same answer)
DETERMINISM_FRACTION = 0.5


class Failure(Exception):
    """A check failed: ends the evaluation as rejected with these (code, message) pairs."""

    def __init__(self, *problems: tuple[str, str]):
        super().__init__("; ".join(m for _, m in problems))
        self.problems = list(problems)


def protocol(message: str) -> Failure:
    return Failure(("protocol", f"protocol violation: {message}"))


# ---- runner messages ------------------------------------------------------------------------

def number(msg: dict, key: str, high: float = 1e9) -> float:
    value = msg.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise protocol(f"{key!r} must be a number")
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > high:
        raise protocol(f"{key!r} out of range")
    return value


def text(value, limit: int = 4000) -> str:
    return value[:limit] if isinstance(value, str) else ""


def runner_error(msg: dict) -> Failure:
    code = msg.get("code")
    if code not in RUNNER_ERRORS:
        return protocol(f"unknown error code {str(code)[:40]!r}")
    message = text(msg.get("message"), 1000) or code
    trace = text(msg.get("trace"))
    if trace:
        last = [line for line in trace.strip().splitlines() if line.strip()][-3:]
        message += " | " + " / ".join(s.strip() for s in last)[:1000]
    if code == "out_of_memory":
        message = f"out of memory: {message}"
    return Failure((code, message[:2000]))


def result_problems(msg: dict) -> list[tuple[str, str]]:
    problems = msg.get("problems")
    if not isinstance(problems, list) or len(problems) > 16:
        raise protocol("'problems' must be a short list")
    out = []
    for item in problems:
        if (not isinstance(item, list) or len(item) != 2 or item[0] not in RUNNER_PROBLEMS
                or not isinstance(item[1], str)):
            raise protocol("malformed problem entry")
        out.append((item[0], item[1][:500]))
    return out


def check_meta(msg: dict, *, dtype: torch.dtype, shape: tuple, device: str, where: str) -> None:
    """The claimed dtype / shape / device against what the judge expects."""
    got_dtype, got_shape, got_device = msg.get("dtype"), msg.get("shape"), msg.get("device")
    if got_device != device:
        raise Failure(("wrong_device", f"{where}: the output is on {text(got_device, 40)!r}, expected {device!r}"))
    if got_dtype != str(dtype):
        raise Failure(("wrong_dtype", f"{where}: the output dtype is {text(got_dtype, 40)}, expected {dtype}"))
    if not isinstance(got_shape, list) or got_shape != list(shape):
        raise Failure(("wrong_shape", f"{where}: the output shape is {str(got_shape)[:80]}, expected {list(shape)}"))


def from_bytes(raw: torch.Tensor, dtype: torch.dtype, shape: tuple, device: str) -> torch.Tensor:
    """A judge-owned tensor rebuilt from raw bytes (`raw`: uint8 on the CPU, reused by the caller,
    hence always copied)."""
    if raw.numel() == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    size = torch.empty((), dtype=dtype).element_size()
    if raw.storage_offset() % size:
        # packed behind a tensor of a smaller dtype (a bool mask, then int64 indices)
        raw = raw.clone()
    t = raw.view(dtype).reshape(shape)
    return t.to(device) if device != "cpu" else t.clone()


def same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8))


# ---- binding the output at `done` ------------------------------------------------------------

FP_PERIOD = 65521  # a prime: the weights repeat with this period over the output's 4-byte words


def fingerprint(raw: torch.Tensor, key: int) -> int:
    """A keyed checksum of raw bytes (1-D uint8). Exact integer arithmetic (int64, wrapping: the
    order of the sum does not matter), so runner and judge agree bit for bit; the weights come from
    a key sent only when the call starts, so it cannot be produced without the final bytes."""
    n = raw.numel()
    if n == 0:
        return 0
    pad = (-n) % 4
    if pad or raw.storage_offset() % 4:
        raw = torch.cat([raw, raw.new_zeros(pad)])
    words = raw.view(torch.int32).to(torch.int64)
    g = torch.Generator(device=raw.device)
    g.manual_seed(key & ((1 << 63) - 1))
    w = torch.randint(-(1 << 31), (1 << 31) - 1, (FP_PERIOD,), generator=g, device=raw.device,
                      dtype=torch.int64)
    m = words.numel()
    full = m - m % FP_PERIOD
    total = torch.zeros((), dtype=torch.int64, device=raw.device)
    if full:
        total = total + (words[:full].view(-1, FP_PERIOD) * w).sum()
    if m > full:
        total = total + (words[full:] * w[:m - full]).sum()
    return int(total)


def raw_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


# ---- comparing with the gold answer ----------------------------------------------------------

def compare(out: torch.Tensor, gold: torch.Tensor, tolerance, where: str) -> float:
    """Max abs error when `out` passes; Failure (nonfinite / mismatch) otherwise. On the GPU in
    two passes over memory (fastcheck.compare) wherever that covers the case."""
    fast = fastcheck.compare(out, gold, tolerance.atol, tolerance.rtol) if out.device == gold.device else None
    if fast is None:
        nonfinite = _nonfinite_count(out, gold)
        passed, max_err, worst = tolerance.compare(out, gold) if not nonfinite else (False, 0.0, 0.0)
    else:
        nonfinite, passed, max_err, worst = fast
    if nonfinite:
        raise Failure(("nonfinite", f"{where}: {nonfinite} output element(s) are inf or NaN where the "
                                    "reference is finite"))
    if not passed:
        raise Failure(("mismatch", f"{where}: output differs from the reference: max abs error "
                                   f"{max_err:.3g}, worst element {worst:.3g}x the allowed error "
                                   f"(atol {tolerance.atol:g} x rms, rtol {tolerance.rtol:g})"))
    return max_err


def _nonfinite_count(out: torch.Tensor, gold: torch.Tensor) -> int:
    if not gold.numel():
        return 0
    return int((torch.isfinite(gold) & ~torch.isfinite(out.to(gold.device).float())).sum())


def deterministic(first: torch.Tensor, second: torch.Tensor, tolerance) -> bool:
    if same_bytes(first, second):
        return True
    tight = type(tolerance)(atol=tolerance.atol * DETERMINISM_FRACTION,
                            rtol=tolerance.rtol * DETERMINISM_FRACTION)
    passed, _, _ = tight.compare(second, first.float())
    return passed


# ---- which kernels ran -----------------------------------------------------------------------

_LIBRARY = re.compile(
    r"^(void )?((\(anonymous namespace\)|at|c10|pytorch_flash|cudnn|cublasLt|cutlass)::)*"
    r"(at::|c10::|native::|cunn_|cutlass|cublas|cudnn|ampere_|sm\d+_|volta_|turing_|hopper_|"
    r"nvjet|gemm|gemv|splitK|Memcpy|Memset|flash|fmha|softmax_warp|elementwise_kernel|"
    r"vectorized_|unrolled_|reduce_kernel|triton_|std::|CatArray|"
    r"distribution_|RowwiseMoments|LayerNorm|RMSNorm|GammaBeta|cuComputePart|cuApply)")


def user_cuda_kernels(names) -> list[str]:
    """CUDA kernels from the profiler that are not PyTorch's, cuBLAS's, cuDNN's or inductor's:
    a heuristic on the kernel's name."""
    return [n for n in names if isinstance(n, str) and not _LIBRARY.match(n)]
