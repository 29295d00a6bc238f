"""torch.profiler's side of profile mode, run inside the submission's process (profile.py child):
the operator table on the CPU, and on a GPU the same table with the CUDA kernels it recorded."""
from __future__ import annotations


def rows(kernel, inputs, device: str, *, limit: int, table_chars: int) -> dict:
    """One profiled call: {"ops": [row, ...], "table": text}, busiest first (device time on a GPU,
    CPU time otherwise)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    _label_triton_launches()
    with profile(activities=activities) as prof, torch.profiler.record_function("custom_kernel"):
        kernel(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
    averages = prof.key_averages()
    key = "self_device_us" if device == "cuda" else "self_cpu_us"
    ops = sorted((_row(e, device) for e in averages), key=lambda r: -(r[key] or 0.0))[:limit]
    return {"ops": ops, "table": _table(averages, device)[:table_chars]}


def _label_triton_launches() -> None:
    """Each Triton launch becomes a row of its own ("triton <kernel name>"): under the CPU
    interpreter its work is NumPy's, which the profiler does not see otherwise."""
    import torch
    from triton.runtime import jit

    classes = [jit.JITFunction]
    try:
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    except ImportError:
        pass
    for cls in classes:
        original = cls.run

        def run(self, *args, _original=original, **kwargs):
            name = getattr(getattr(self, "fn", None), "__name__", None) or type(self).__name__
            with torch.profiler.record_function(f"triton {name}"):
                return _original(self, *args, **kwargs)

        cls.run = run


def _row(event, device: str) -> dict:
    on_gpu = device == "cuda"
    kernel = on_gpu and str(getattr(event, "device_type", "")).endswith("CUDA")
    return {
        "name": str(event.key)[:300],
        "kind": "kernel" if kernel else "op",
        "calls": int(event.count),
        "self_cpu_us": _us(event.self_cpu_time_total),
        "cpu_total_us": _us(event.cpu_time_total),
        "self_device_us": _us(_device_time(event, "self_")) if on_gpu else None,
        "device_total_us": _us(_device_time(event, "")) if on_gpu else None,
    }


def _device_time(event, prefix: str) -> float:
    # device_time_* in current torch, cuda_time_* in older releases
    for name in (f"{prefix}device_time_total", f"{prefix}cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return value
    return 0.0


def _us(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0.0
    return value if value > 0 and value < 1e15 else 0.0


def _table(averages, device: str) -> str:
    keys = ("self_device_time_total", "self_cuda_time_total") if device == "cuda" else ("self_cpu_time_total",)
    for key in keys:
        try:
            return averages.table(sort_by=key, row_limit=30, max_name_column_width=70)
        except (KeyError, AttributeError, ValueError):
            continue
    return ""
