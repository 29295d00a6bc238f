"""What a task is: the contract between the evaluator, the examples and the site.

A task is data the loader reads (evaluator/tasks/loader.py): a folder (task.toml + reference.py,
evaluator/tasks/folder.py) or a KernelBench-style file (evaluator/tasks/kernelbench.py); either
becomes one `Task`. Nothing here may import Django: the site stores what `python -m evaluator
describe` prints, the judge uses these objects to build inputs and references.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from typing import Callable, Sequence

import torch

Shape = dict  # e.g. {"M": 8192, "N": 8192}; keys are the task's own dimension names


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """An output passes when every element satisfies

        |out - ref| <= atol * scale + rtol * |ref|

    where `ref` is the reference computed in fp32 from the same inputs (the "gold" answer) and
    `scale` is the root-mean-square of `ref` over the whole output. Relative to the output's
    own scale, so returning zeros or a constant never passes (threat A7).
    """

    atol: float
    rtol: float

    def compare(self, out: torch.Tensor, gold: torch.Tensor) -> tuple[bool, float, float]:
        """(passed, max_abs_err, worst) where worst = max of |out - gold| / allowed over all
        elements (passed means worst <= 1 and out is finite wherever gold is). Both are upcast
        to fp32 (fp64 when gold is fp64)."""
        dtype = torch.float64 if gold.dtype == torch.float64 else torch.float32
        gold = gold.to(dtype)
        out = out.to(device=gold.device, dtype=dtype)
        if gold.numel() == 0:
            return True, 0.0, 0.0
        finite = torch.isfinite(gold)
        if not bool(torch.isfinite(out[finite]).all()):
            return False, float("inf"), float("inf")
        g = torch.where(finite, gold, torch.zeros((), dtype=dtype, device=gold.device))
        o = torch.where(finite, out, torch.zeros((), dtype=dtype, device=gold.device))
        scale = g.square().mean().sqrt()
        err = (o - g).abs()
        allowed = self.atol * scale + self.rtol * g.abs()
        # tiny floor so an all-zero gold (e.g. 1x1 softmax rows never are; relu may be) still
        # demands an exact match rather than dividing by zero
        allowed = allowed.clamp_min(torch.finfo(torch.float32).tiny)
        worst = float((err / allowed).max())
        return worst <= 1.0, float(err.max()), worst


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    title: str
    description: str
    signature: str  # the text of `def custom_kernel(...)` users must write
    input_names: tuple[str, ...]
    output_dtype: torch.dtype
    # eager PyTorch, in the task's own dtypes: what a kernel must match and beat
    reference: Callable[..., torch.Tensor]
    # the same computation carried out in fp32 (upcast inputs): the gold answer outputs are
    # compared against
    reference_fp32: Callable[..., torch.Tensor]
    # make_inputs(shape, seed, device) -> tuple of tensors, deterministic for (shape, seed, device)
    make_inputs: Callable[[Shape, int, str], tuple]
    test_shapes: Sequence[Shape]
    bench_shapes_gpu: Sequence[Shape]
    bench_shapes_cpu: Sequence[Shape]
    tolerance: Tolerance
    flops: Callable[[Shape], float]
    bytes_moved: Callable[[Shape], float]
    # a verified speedup over torch.compile above this is flagged for review
    max_speedup_vs_compile: float = 2.0
    # the floor is set by memory traffic ("memory") or by matrix arithmetic ("compute")
    bound: str = "memory"
    # test shapes drawn per evaluation under the secret seed, and adversarial input families
    hidden: object = None  # evaluator.tasks.hidden.Hidden
    # where the task came from: its definition's path, its format ("folder" or "kernelbench")
    # and its track (a group of tasks on the site: "builtin", "kernelbench-level1", ...)
    source: str = ""
    format: str = "folder"
    track: str = "builtin"
    reference_text: str = ""  # the definition's source, shown on the site
    # a KernelBench-style problem's module (Model, get_init_inputs) and its parameters' seed:
    # None for a task whose submission is a plain custom_kernel (evaluator/tasks/kernelbench.py)
    model: object = None

    def bench_shapes(self, device: str) -> Sequence[Shape]:
        return self.bench_shapes_gpu if device == "cuda" else self.bench_shapes_cpu

    def test_shapes_for(self, seed: int, device: str) -> list[Shape]:
        """The public test shapes, then the hidden ones drawn for this evaluation's seed."""
        drawn = self.hidden.draw(seed, device, self.test_shapes) if self.hidden is not None else []
        return [dict(s) for s in self.test_shapes] + drawn

    def bind(self, params_seed: int | None) -> "Task":
        """The task with its parameters drawn under `params_seed` (a problem with parameters);
        every other task is returned as it is."""
        if self.model is None or params_seed is None:
            return self
        return self.model.bind(self, params_seed)

    @property
    def model_class(self):
        """A KernelBench-style problem's Model class (None for other tasks): the ruler submits it as
        the candidate's ModelNew."""
        return self.model.problem.module.Model if self.model is not None else None

    def entry(self, module, device: str = "cpu") -> Callable:
        """What the judge calls in a loaded submission: its `custom_kernel`, or for a problem with
        parameters its `ModelNew` built, loaded with the reference's parameters and moved to
        `device`. Raises EntryError with a reason code and a message the submitter reads."""
        if self.model is not None:
            return self.model.entry(self, module, device)
        fn = getattr(module, "custom_kernel", None)
        if not callable(fn):
            raise EntryError("no_custom_kernel", "the submission does not define a callable custom_kernel")
        return fn


    def floor_ms(self, shape: Shape, *, bandwidth_bytes_s: float, peak_flop_s: float) -> float:
        """The roofline floor: the least time the shape can take on a device with these ceilings."""
        memory_s = self.bytes_moved(shape) / bandwidth_bytes_s
        compute_s = self.flops(shape) / peak_flop_s
        return max(memory_s, compute_s) * 1e3


class EntryError(Exception):
    """A submission that does not give the judge what the task asks for (code, message)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code


# a folder task's reference.py defines these functions under the Task fields' own names
# (reference_fp32 may be left out: the reference on inputs upcast to fp32 is used then)
FUNCTIONS = ("reference", "reference_fp32", "make_inputs", "flops", "bytes_moved")


def derive_seed(master_seed: int, *parts: object) -> int:
    """A per-call seed from the secret master seed; one-way, so a runner that learns a call's
    seed learns nothing about other calls' seeds."""
    h = hashlib.sha256(str(master_seed).encode())
    for p in parts:
        h.update(b"\0" + str(p).encode())
    return int.from_bytes(h.digest()[:8], "little") & ((1 << 63) - 1)


def generator(seed: int, device: str) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


# ---- input building blocks shared by the task modules ---------------------------------------

N_DISTRIBUTIONS = 4
_fast = False  # inside fast_inputs(): the GPU draws in one pass (evaluator/common/fastgen.py)


@contextlib.contextmanager
def fast_inputs():
    """signed_matrix and varied_rows drawn by evaluator/common/fastgen.py where it can run (a CUDA
    device with Triton): the same laws, other draws. For the checker's timed batches, whose inputs
    only the checker builds and verifies."""
    global _fast
    saved, _fast = _fast, True
    try:
        yield
    finally:
        _fast = saved


def _fastgen():
    from evaluator.common import fastgen

    return fastgen


def signed_matrix(g: torch.Generator, rows: int, cols: int, device: str, dist: int) -> torch.Tensor:
    """fp32 [rows, cols]: signed, unit-ish spread, one of several distributions (picked by the
    caller from the seed so no single input law can be exploited in closed form, threat A8)."""
    kw = dict(generator=g, device=device, dtype=torch.float32)
    dist %= N_DISTRIBUTIONS
    fast = _fastgen().signed_matrix(g, rows, cols, device, dist) if _fast else None
    if fast is not None:
        return fast
    if dist == 0:  # normal
        x = torch.randn(rows, cols, **kw)
    elif dist == 1:  # uniform with unit variance
        x = (torch.rand(rows, cols, **kw) * 2 - 1) * 3 ** 0.5
    elif dist == 2:  # laplace with unit variance
        u = torch.rand(rows, cols, **kw).clamp_min(1e-7)
        sign = torch.randint(0, 2, (rows, cols), generator=g, device=device).float() * 2 - 1
        x = -torch.log(u) * sign / 2 ** 0.5
    else:  # student t, 4 degrees of freedom: heavy tails everywhere
        z = torch.randn(rows, cols, **kw)
        # chi-square with 4 degrees of freedom, over 4: minus the mean log of two uniforms
        u = torch.rand(2, rows, cols, **kw).clamp_min(1e-12)
        chi = -(u[0].log() + u[1].log()) / 2
        x = (z / chi.sqrt().clamp_min(0.05)) / 2 ** 0.5
    return x


def varied_rows(g: torch.Generator, rows: int, cols: int, device: str, dist: int, *,
                log_scale: float = 2.0, offset: float = 0.5, heavy_frac: float = 0.125,
                heavy_mag: float = 8.0) -> torch.Tensor:
    """signed_matrix with a log-uniform scale per row (e^-log_scale .. e^log_scale), a signed mean
    offset per row (offset x the row's scale) and, on each row with probability heavy_frac,
    sparse outliers heavy_mag times the row's scale (so a shape of a few rows has them sometimes).

    The outliers are drawn for the heavy rows only and the rest is done in place: the checker
    builds every input of a timed batch twice (to write it, and to verify it was not changed),
    so the passes over a full-size tensor here are most of the time a timing round takes."""
    if _fast:
        fast = _fastgen().varied_rows(g, rows, cols, device, dist % N_DISTRIBUTIONS, log_scale=log_scale,
                                      offset=offset, heavy_frac=heavy_frac, heavy_mag=heavy_mag)
        if fast is not None:
            return fast
    kw = dict(generator=g, device=device, dtype=torch.float32)
    x = signed_matrix(g, rows, cols, device, dist)
    scale = torch.exp((torch.rand(rows, 1, **kw) * 2 - 1) * log_scale)
    shift = torch.randn(rows, 1, **kw) * offset
    heavy = (torch.rand(rows, **kw) < heavy_frac).nonzero().flatten()
    if len(heavy):
        spikes = (torch.rand(len(heavy), cols, **kw) < 0.02) * torch.randn(len(heavy), cols, **kw)
        x.index_add_(0, heavy, spikes, alpha=heavy_mag)
    return torch.addcmul(shift * scale, x, scale, out=x)  # x * scale + shift * scale, one pass


class full_fp32:
    """Context: fp32 matmuls at full precision (no TF32) while a gold answer is computed."""

    def __enter__(self):
        self._saved = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("highest")
        return self

    def __exit__(self, *exc):
        torch.set_float32_matmul_precision(self._saved)
        return False
