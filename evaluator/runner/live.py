"""Small facts about the runner's live tensors and errors (runner.py, runner_batch.py). torch is
imported inside each function: the runner imports torch only after it has dropped privileges."""
from __future__ import annotations


def plain_tensor(out) -> bool:
    import torch

    return (type(out) is torch.Tensor and out.layout == torch.strided and not out.is_meta
            and not out.is_nested and not out.is_quantized)


def out_of_memory(e: BaseException) -> bool:
    if isinstance(e, MemoryError) or type(e).__name__ == "OutOfMemoryError":
        return True
    text = str(e)
    return isinstance(e, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def raw(t):
    import torch

    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def span(t):
    import torch

    if not isinstance(t, torch.Tensor) or t.numel() == 0:
        return None
    s = t.untyped_storage()
    if s.nbytes() == 0:
        return None
    return (s.data_ptr(), s.data_ptr() + s.nbytes())


def overlap(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def type_name(obj) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"[:200]


def one_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text.splitlines()[0][:500] if text else type(e).__name__
