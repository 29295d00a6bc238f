"""A KernelBench-style problem file loaded as it is: `class Model(nn.Module)`, `get_inputs()`,
`get_init_inputs()` and module-level integer constants that give the problem its shape.

- The task's name is the file's stem lowercased, each run of characters other than a-z0-9
  replaced by `_` (`17_Masked-Scale.py` -> `17_masked_scale`).
- The problem's shape is its module-level integer constants that `get_inputs` or
  `get_init_inputs` read. Those `get_init_inputs` reads fix the parameters' shapes and stay as
  written; the others are rewritten to draw hidden test shapes and to shrink a benchmark shape
  (docs/tasks.md).
- The reference is `Model(*get_init_inputs())` with its parameters drawn under a seed of the
  evaluation (`Task.bind`); inputs are `get_inputs()` under each call's own seed. The gold answer
  is the reference in fp64 for an fp32 problem, in fp32 for lower precisions.
- A submission is a `ModelNew` built with the same init inputs and loaded with the reference's
  `state_dict` strictly, or, where the problem has neither parameters nor buffers, a
  `custom_kernel(*inputs)` (a `ModelNew` is accepted there too).
- `<stem>.toml` beside the file may set `title`, `bound`, `max_speedup_vs_compile` and a
  `[tolerance]` table; tolerances otherwise default by the output's dtype.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import math
import re
import threading
import tomllib
from pathlib import Path

import torch

from evaluator.tasks.base import EntryError, Task, Tolerance
from evaluator.tasks.folder import import_file
from evaluator.tasks.hidden import Dims, Hidden

# |out - gold| <= atol * rms(gold) + rtol * |gold| (evaluator/tasks/base.py Tolerance), by the
# output's dtype: fp32 leaves room for another summation order (gold is fp64), fp16 and bf16 for
# one rounding of the output and of intermediates (gold is fp32)
DEFAULT_TOLERANCE = {torch.float32: (1e-4, 1e-4), torch.float16: (1e-2, 1e-2), torch.bfloat16: (2e-2, 2e-2),
                     torch.float64: (1e-8, 1e-8)}
# a benchmark shape's inputs, output and parameters together may use at most this share of the
# device's memory; the CPU's benchmark and public test shapes are shrunk to these many elements
DEVICE_SHARE = 0.25
CPU_BENCH_ELEMENTS = 1 << 20
CPU_TEST_ELEMENTS = 1 << 16
HIDDEN_COUNT = 3
OVERRIDES = ("title", "bound", "max_speedup_vs_compile", "tolerance")
# a problem's inputs and parameters come from torch's global generator and the module's constants,
# both of the whole process: the judge makes inputs in two threads at once (the compile beside
# the correctness phase), so each draw holds this lock
DRAWING = threading.RLock()


class ProblemError(ValueError):
    """A problem file that cannot be loaded, with the reason."""


def task_name(stem: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", stem.lower())


def is_problem(path: Path) -> bool:
    return path.suffix == ".py" and not path.name.startswith(("_", "."))


def _import(path: Path, name: str):
    # one module per file: two tracks may hold problems of one name
    return import_file(path, f"evaluator_problem_{name}_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]}")


def _names_read(fn) -> set[str]:
    """The global names a function reads, through nested code objects too."""
    names, stack = set(), [fn.__code__]
    while stack:
        code = stack.pop()
        names.update(code.co_names)
        stack.extend(c for c in code.co_consts if inspect.iscode(c))
    return names


@dataclasses.dataclass
class Problem:
    """The loaded module and what was read from it once; shared by every bound copy of the task."""
    path: Path
    module: object
    fixed: dict  # constants get_init_inputs reads: the parameters' shapes
    free: dict  # constants only get_inputs reads: the shape the judge may rewrite
    has_state: bool

    @contextlib.contextmanager
    def at(self, shape: dict):
        """The module's constants set to `shape` while the block runs (one block at a time)."""
        with DRAWING:
            ns = vars(self.module)
            saved = {k: ns[k] for k in shape if k in ns}
            ns.update({k: v for k, v in shape.items() if k in saved})
            try:
                yield
            finally:
                ns.update(saved)

    def inputs(self, shape: dict, seed: int, device: str) -> tuple:
        with self.at(shape), torch.random.fork_rng(devices=[]):
            _seed_cpu(seed)
            made = list(self.module.get_inputs())
        return tuple(x.to(device) if torch.is_tensor(x) else x for x in made)

    def model(self, seed: int):
        with DRAWING, torch.random.fork_rng(devices=[]):
            _seed_cpu(seed)
            return self.module.Model(*self.module.get_init_inputs()).eval()

    def meta_run(self, shape: dict):
        """(inputs, output, model) on the meta device: shapes and dtypes without memory or time."""
        with self.at(shape), torch.device("meta"):
            model = self.module.Model(*self.module.get_init_inputs()).eval()
            inputs = list(self.module.get_inputs())
            with torch.no_grad():
                out = model(*inputs)
        return inputs, out, model


def _seed_cpu(seed: int) -> None:
    # the CPU generator only: torch.manual_seed would also reseed every CUDA device's generator,
    # which fork_rng(devices=[]) does not put back (a problem's get_inputs draws on the CPU)
    torch.random.default_generator.manual_seed(seed)


def _nbytes(t) -> int:
    return t.numel() * t.element_size() if torch.is_tensor(t) else 0


class Parameters:
    """The `model` of a task with parameters: the reference's state drawn under a seed, the
    reference and gold functions built on it, and the submission's ModelNew loaded with it."""

    def __init__(self, problem: Problem, seed: int):
        self.problem = problem
        self.seed = seed
        self._state = None
        self._on = {}

    @property
    def state(self) -> dict:
        # drawn on first use: listing tasks or describing one allocates no parameters
        if self._state is None:
            self._state = {k: v.detach().clone() for k, v in self.problem.model(self.seed).state_dict().items()}
        return self._state

    def bind(self, task: Task, seed: int) -> Task:
        params = Parameters(self.problem, seed)
        return dataclasses.replace(task, model=params, reference=params.reference, reference_fp32=params.gold)

    def _copy(self, device, dtype=None):
        key = (str(device), dtype)
        if key not in self._on:
            m = self.problem.model(self.seed)
            m.load_state_dict(self.state)
            m = m.to(device=device) if dtype is None else m.to(device=device, dtype=dtype)
            self._on[key] = m.eval()
        return self._on[key]

    def reference(self, *inputs):
        with torch.no_grad():
            return self._copy(_device_of(inputs))(*inputs)

    def gold(self, *inputs):
        dtype = _gold_dtype(inputs)
        with torch.no_grad():
            return self._copy(_device_of(inputs), dtype)(*_cast(inputs, dtype))

    def entry(self, task: Task, module, device: str = "cpu"):
        cls = getattr(module, "ModelNew", None)
        if not isinstance(cls, type):
            fn = getattr(module, "custom_kernel", None)
            if callable(fn) and not self.problem.has_state:
                return fn
            what = "a class ModelNew" if self.problem.has_state else "a class ModelNew or a callable custom_kernel"
            raise EntryError("no_custom_kernel", f"the submission does not define {what}")
        model = cls(*self.problem.module.get_init_inputs())
        if not isinstance(model, torch.nn.Module):
            raise EntryError("no_custom_kernel", "ModelNew is not a torch.nn.Module")
        theirs = model.state_dict()
        missing = sorted(set(self.state) - set(theirs))
        unexpected = sorted(set(theirs) - set(self.state))
        resized = sorted(k for k in set(self.state) & set(theirs) if tuple(theirs[k].shape) != tuple(self.state[k].shape))
        if missing or unexpected or resized:
            parts = ([f"missing keys {missing[:8]}"] if missing else []) + \
                    ([f"unexpected keys {unexpected[:8]}"] if unexpected else []) + \
                    ([f"shapes differ for {resized[:8]}"] if resized else [])
            raise EntryError("params_mismatch", "ModelNew's state_dict does not match the reference's: " + "; ".join(parts))
        model.load_state_dict(self.state, strict=True)
        return model.to(device).eval()


def _device_of(inputs) -> torch.device:
    for x in inputs:
        if torch.is_tensor(x):
            return x.device
    return torch.device("cpu")


def _gold_dtype(inputs) -> torch.dtype:
    floats = [x.dtype for x in inputs if torch.is_tensor(x) and x.is_floating_point()]
    return torch.float64 if not floats or all(d in (torch.float32, torch.float64) for d in floats) else torch.float32


def _cast(inputs, dtype):
    return tuple(x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs)


def _plain(problem: Problem):
    """reference and gold of a problem without state (any Model instance does)."""
    cache = {}

    def model(device, dtype=None):
        key = (str(device), dtype)
        if key not in cache:
            m = problem.model(0).to(device)
            cache[key] = m if dtype is None else m.to(dtype)
        return cache[key]

    def reference(*inputs):
        with torch.no_grad():
            return model(_device_of(inputs))(*inputs)

    def gold(*inputs):
        dtype = _gold_dtype(inputs)
        with torch.no_grad():
            return model(_device_of(inputs), dtype)(*_cast(inputs, dtype))
    return reference, gold


class Plain:
    """The `model` of a task without parameters: custom_kernel or a ModelNew."""

    def __init__(self, problem: Problem):
        self.problem = problem

    def bind(self, task: Task, seed: int) -> Task:
        return task

    def entry(self, task: Task, module, device: str = "cpu"):
        fn = getattr(module, "custom_kernel", None)
        if callable(fn):
            return fn
        cls = getattr(module, "ModelNew", None)
        if isinstance(cls, type):
            model = cls(*self.problem.module.get_init_inputs())
            if isinstance(model, torch.nn.Module) and model.state_dict():
                raise EntryError("params_mismatch", "ModelNew has parameters or buffers; the reference has none: "
                                 f"unexpected keys {sorted(model.state_dict())[:8]}")
            return model.to(device).eval() if isinstance(model, torch.nn.Module) else model
        raise EntryError("no_custom_kernel", "the submission does not define a callable custom_kernel or a class ModelNew")


def shrink(problem: Problem, shape: dict, fits) -> dict | None:
    """The shape with its free constants halved, all together, until fits(shape); None when even
    every free constant at 1 does not fit."""
    shape = dict(shape)
    for _ in range(64):
        if fits(shape):
            return shape
        if all(shape[k] <= 1 for k in problem.free):
            return None
        shape.update({k: max(1, shape[k] // 2) for k in problem.free})
    return None


class ProblemHidden:
    """Hidden test shapes of a problem: each free constant drawn between 1 and its written value,
    a draw the reference refuses on the meta device (a convolution narrower than its kernel, say)
    drawn again."""

    def __init__(self, problem: Problem, gpu: Dims, cpu: Dims):
        self.problem = problem
        self.hidden = Hidden(gpu, cpu, (), tuple(problem.fixed) + tuple(problem.free))
        self.families = ()

    def summary(self) -> dict:
        return self.hidden.summary()

    def draw(self, seed: int, device: str, avoid=()) -> list[dict]:
        dims = self.hidden.gpu if device == "cuda" else self.hidden.cpu
        out = []
        for attempt in range(4):
            for shape in self.hidden.draw(seed + attempt, device, avoid):
                if len(out) < dims.count and shape not in out and self._runs(shape):
                    out.append(shape)
        return out

    def _runs(self, shape: dict) -> bool:
        try:
            self.problem.meta_run(shape)
            return True
        except Exception:  # noqa: BLE001 - any refusal of the reference at this shape
            return False


def _elements(problem: Problem, shape: dict) -> int:
    inputs, out, _ = problem.meta_run(shape)
    return sum(x.numel() for x in inputs if torch.is_tensor(x)) + out.numel()


def _device_bytes() -> int:
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(0).total_memory
    return 80 << 30


def load(path: Path, track: str = "kernelbench") -> Task:
    name = task_name(path.stem)
    try:
        module = _import(path, name)
    except BaseException as e:  # noqa: BLE001 - a broken staff file is reported, never raised past
        raise ProblemError(f"importing it failed: {type(e).__name__}: {e}"[:500]) from None
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(getattr(module, attr, None)):
            raise ProblemError(f"it defines no {attr}")
    overrides = _overrides(path)
    ns = vars(module)
    ints = {k: v for k, v in ns.items() if type(v) is int and not k.startswith("_")}
    init_reads, input_reads = _names_read(module.get_init_inputs), _names_read(module.get_inputs)
    fixed = {k: v for k, v in ints.items() if k in init_reads}
    free = {k: v for k, v in ints.items() if k in input_reads and k not in init_reads}
    shape = {**fixed, **free}
    if not shape:
        raise ProblemError("get_inputs and get_init_inputs read no module-level integer constant: "
                           "the problem has no shape the judge can draw or shrink")
    try:
        problem = Problem(path, module, fixed, free, False)
        inputs, out, model = problem.meta_run(shape)
    except Exception as e:  # noqa: BLE001
        raise ProblemError(f"the reference does not run on the meta device at its own shape: {type(e).__name__}: {e}"[:500]) from None
    if not torch.is_tensor(out):
        raise ProblemError(f"Model.forward returns {type(out).__name__}, not one tensor")
    problem.has_state = bool(model.state_dict())
    budget = DEVICE_SHARE * _device_bytes()
    params_bytes = sum(_nbytes(t) for t in model.state_dict().values())

    def fits_device(s):
        i, o, _ = problem.meta_run(s)
        return sum(_nbytes(x) for x in i) + _nbytes(o) + params_bytes <= budget

    bench_gpu = shrink(problem, shape, fits_device)
    if bench_gpu is None:
        raise ProblemError("its parameters and smallest inputs do not fit the device's memory")
    bench_cpu = shrink(problem, shape, lambda s: _elements(problem, s) <= CPU_BENCH_ELEMENTS) or bench_gpu
    small = shrink(problem, shape, lambda s: _elements(problem, s) <= CPU_TEST_ELEMENTS) or bench_cpu
    ranges = {k: (1, v) for k, v in free.items()}
    choices = {k: (v,) for k, v in fixed.items()}
    cap_gpu = max(math.prod(bench_gpu.values()), 1)
    cap_cpu = max(math.prod(small.values()), 1)
    hidden = ProblemHidden(problem, Dims(ranges, choices, HIDDEN_COUNT, cap_gpu),
                           Dims({k: (1, small[k]) for k in free}, choices, 2, cap_cpu))
    dtype = out.dtype
    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (1e-4, 1e-4))
    tol = overrides.get("tolerance", {})
    holder = Parameters(problem, 0) if problem.has_state else Plain(problem)
    reference, gold = (holder.reference, holder.gold) if problem.has_state else _plain(problem)
    input_names = tuple(p for p in inspect.signature(module.Model.forward).parameters if p != "self")
    doc = inspect.getdoc(module.Model) or inspect.getdoc(module) or ""

    def make_inputs(s, seed, device):
        return problem.inputs(s, seed, device)

    def flops(s):
        return _flops(problem, s)

    def bytes_moved(s):
        i, o, _ = problem.meta_run(s)
        return float(sum(_nbytes(x) for x in i) + _nbytes(o) + params_bytes)

    work = flops(bench_gpu) / max(bytes_moved(bench_gpu), 1.0)
    return Task(
        name=name, title=overrides.get("title") or f"{path.stem} ({track})",
        description=doc or f"The KernelBench-style problem {path.name}.",
        signature=_signature(module, input_names, problem.has_state, inputs, out),
        input_names=input_names, output_dtype=dtype, reference=reference, reference_fp32=gold,
        make_inputs=make_inputs, test_shapes=(small,) if small == bench_cpu else (small, bench_cpu),
        bench_shapes_gpu=(bench_gpu,), bench_shapes_cpu=(bench_cpu,),
        tolerance=Tolerance(atol=float(tol.get("atol", atol)), rtol=float(tol.get("rtol", rtol))),
        flops=flops, bytes_moved=bytes_moved,
        max_speedup_vs_compile=float(overrides.get("max_speedup_vs_compile", 2.0)),
        bound=overrides.get("bound") or ("compute" if work > 50 else "memory"),
        hidden=hidden, source=str(path), format="kernelbench", track=track,
        reference_text=path.read_text(), model=holder)


def _overrides(path: Path) -> dict:
    beside = path.with_suffix(".toml")
    if not beside.is_file():
        return {}
    try:
        data = tomllib.loads(beside.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ProblemError(f"{beside.name}: not TOML: {e}") from None
    unknown = sorted(set(data) - set(OVERRIDES))
    if unknown:
        raise ProblemError(f"{beside.name}: unknown keys {unknown}; allowed: {', '.join(OVERRIDES)}")
    return data


def _flops(problem: Problem, shape: dict) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with problem.at(shape), torch.device("meta"):
            model = problem.module.Model(*problem.module.get_init_inputs()).eval()
            inputs = list(problem.module.get_inputs())
            with FlopCounterMode(display=False) as counter, torch.no_grad():
                model(*inputs)
        return float(counter.get_total_flops())
    except Exception:  # noqa: BLE001 - an operator the counter cannot follow: memory bound
        return 0.0


def _signature(module, input_names, has_state: bool, inputs, out) -> str:
    described = ", ".join(f"{n}: {str(x.dtype).replace('torch.', '')} {list(x.shape)}" if torch.is_tensor(x) else n
                          for n, x in zip(input_names, inputs))
    result = f"{str(out.dtype).replace('torch.', '')} {list(out.shape)}"
    init = inspect.signature(module.Model.__init__)
    init_args = ", ".join(p for p in init.parameters if p != "self")
    lines = ["class ModelNew(nn.Module):  # built as ModelNew(*get_init_inputs())",
             f"    def __init__(self{', ' + init_args if init_args else ''}): ...  # the same parameters as Model",
             f"    def forward(self, {', '.join(input_names)}) -> torch.Tensor: ...",
             f"# inputs at the file's shape: {described}; output {result}"]
    if not has_state:
        lines = [f"def custom_kernel({', '.join(input_names)}) -> torch.Tensor: ...  # or a class ModelNew",
                 f"# inputs at the file's shape: {described}; output {result}"]
    return "\n".join(lines)
