"""Which PyTorch operators did the work of one call, and how much of it.

The runner records, during one untimed call, every aten operator the submission ran (a
TorchDispatchMode: Triton launches are not aten operators and pass unseen) with the size of its
largest operand and, for matrix products and attention, its FLOPs. The judge decides from these
numbers whether a library call, not the submission's kernel, did the task's work (threat A14: a
token Triton kernel launched next to torch.softmax).
"""
from __future__ import annotations

import math

# element-wise, normalisation and reduction operators that compute, as opposed to ones that only
# allocate, copy, view or fill (empty, copy_, view, fill_, ...), which honest wrappers use
COMPUTE = frozenset("""
softmax _softmax log_softmax _log_softmax layer_norm native_layer_norm rms_norm _fused_rms_norm
group_norm native_group_norm batch_norm native_batch_norm gelu erf erfc exp exp2 expm1 log log1p
tanh sigmoid silu relu threshold clamp clamp_min clamp_max hardtanh add sub mul div pow rsqrt sqrt
neg reciprocal sum mean var std var_mean std_mean amax amin max min logsumexp cumsum addcmul
addcdiv lerp where maximum minimum
""".split())
MATMUL = frozenset("mm addmm bmm baddbmm matmul linear dot mv addmv _addmm_activation".split())

# the judge's rule: library work is at least this share of the task's work
ELEMENT_SHARE = 0.5  # an operand as large as half the output
FLOP_SHARE = 0.25  # a quarter of the task's FLOPs in library matrix products / attention


def base_name(name: str) -> str:
    return name[:-1] if name.endswith("_") and not name.startswith("_") else name


def matmul_flops(name: str, shapes: list[tuple]) -> float:
    if "attention" in name and len(shapes) >= 2 and len(shapes[0]) >= 2 and len(shapes[1]) >= 2:
        q, k = shapes[0], shapes[1]
        return 4.0 * math.prod(q[:-1]) * k[-2] * q[-1]  # QK^T and PV
    mats = [s for s in shapes if len(s) >= 2][-2:]
    if len(mats) == 2:
        a, b = mats
        return 2.0 * math.prod(a) * b[-1]
    return 0.0


def recorder():
    """A TorchDispatchMode whose .ops is {name: [calls, largest operand, flops]}."""
    import sys

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops: dict[str, list] = {}
            self._outside_dynamo = None

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # torch would wrap __torch_dispatch__ in torch._dynamo.disable, which imports dynamo
            # (about 1.5 s on a CPU) at the first operator; __torch_dispatch__ does the same only
            # once dynamo is loaded: before that, no compiled frame can be running
            return False

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            dynamo = sys.modules.get("torch._dynamo")
            if dynamo is None:
                return self._record(func, args, kwargs or {})
            if self._outside_dynamo is None:
                self._outside_dynamo = dynamo.disable(self._record, recursive=True)
            return self._outside_dynamo(func, args, kwargs or {})

        def _record(self, func, args, kwargs):
            name = base_name(func.overloadpacket.__name__)
            shapes = [tuple(t.shape) for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            if name in COMPUTE or name in MATMUL or "attention" in name:
                rec = self.ops.setdefault(name, [0, 0, 0.0])
                rec[0] += 1
                rec[1] = max(rec[1], max((math.prod(s) for s in shapes), default=0))
                if name in MATMUL or "attention" in name:
                    rec[2] += matmul_flops(name, shapes)
            return func(*args, **kwargs)

    return Recorder()


def library_work(ops: dict, *, out_numel: int, task_flops: float) -> list[str]:
    """The operators (as text) that did at least a set share of the task's work."""
    found = []
    for name, (calls, largest, flops) in sorted(ops.items()):
        if name in MATMUL or "attention" in name:
            if task_flops > 0 and flops >= FLOP_SHARE * task_flops:
                found.append(f"torch {name} ({flops / task_flops:.0%} of the task's FLOPs)")
        elif out_numel > 0 and largest >= ELEMENT_SHARE * out_numel:
            found.append(f"torch {name} on {largest} elements")
    return found
