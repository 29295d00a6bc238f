"""`python -m evaluator triage PATH ... --device D --json OUT`: each problem run once on the
device before it may reach a board, refused with the reason when it cannot be judged fairly.

A problem is refused when
- its output is empty, or constant (one value everywhere, the same for two input draws);
- its output barely changes between two input draws (relative change below MIN_CHANGE): a
  kernel could answer from a cached output (robust-kbench found many such problems);
- its reference takes less than MIN_MS a call at the benchmark shape: launch overhead, not the
  kernel, would then be timed; on a CPU also when it takes less than MIN_GROWTH times its time
  at its smallest shape (every free constant at 1): a CPU call's overhead moves with the
  machine's load, so an absolute floor alone would decide a small reduction either way (on a
  CPU the reference runs on one thread, and its time is the fastest of its calls);
- it reaches for the network (sockets are refused here; the box has none anyway);
- it runs out of memory at the benchmark shape and at every smaller shape tried.
Runs in the box: the problem file is staff code, and the triage only reports what it saw.
"""
from __future__ import annotations

import math
import socket
import statistics
import time

import torch

from evaluator.tasks import loader
from evaluator.tasks.describe import sources_of

MIN_CHANGE = 1e-3
MIN_MS = {"cuda": 0.01, "cpu": 0.012}
MIN_GROWTH = 1.5
CALLS = 20


NETWORK = "the problem opened a network connection"
NEEDS_NETWORK = "it needs the network (the box has none)"


class NetworkUsed(OSError):
    pass


def _no_network(*args, **kwargs):
    raise NetworkUsed(NETWORK)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _time_ms(fn, inputs, device: str) -> float:
    """Time a call. On a GPU the median of batches of calls between two events, per call: one
    call between two synchronisations reads the host's launch and wait (10-20 us on an H100), not
    the kernel, and would pass any problem as timeable. On a CPU the fastest of CALLS calls: a
    busy machine only adds to a call's time, and a median read under load moved the too-fast
    decisions either way."""
    times = []
    for _ in range(CALLS if device == "cpu" else 5):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(CALLS):
                fn(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / CALLS)
            continue
        t = time.perf_counter()
        fn(*inputs)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times) if device == "cuda" else min(times)


def _oom(e: BaseException) -> bool:
    text = str(e).lower()
    return isinstance(e, (MemoryError, torch.cuda.OutOfMemoryError)) or "out of memory" in text \
        or "can't allocate" in text or "not enough memory" in text


def judge_one(task, device: str) -> tuple[list[str], dict]:
    reasons, readings = [], {}
    shapes = []
    for s in list(task.bench_shapes(device)) + sorted(task.test_shapes, key=lambda s: -sum(s.values())):
        if dict(s) not in shapes:
            shapes.append(dict(s))
    out1 = out2 = None
    for shape in shapes:
        try:
            a = task.make_inputs(shape, 1, device)
            out1 = task.reference(*a)
            b = task.make_inputs(shape, 2, device)
            out2 = task.reference(*b)
            _sync(device)
            readings["shape"] = dict(shape)
            break
        except Exception as e:  # noqa: BLE001
            if NETWORK in str(e):
                return [NEEDS_NETWORK], readings
            if not _oom(e):
                return [f"the reference fails: {type(e).__name__}: {str(e)[:300]}"], readings
            readings.setdefault("out_of_memory_at", []).append(dict(shape))
            out1 = None
            if device == "cuda":
                torch.cuda.empty_cache()
    if out1 is None:
        return ["it needs more memory than the device has at every shape tried"], readings
    if not torch.is_tensor(out1) or out1.numel() == 0:
        return ["its output is empty"], readings
    x1, x2 = out1.double().flatten(), out2.double().flatten()
    finite = torch.isfinite(x1) & torch.isfinite(x2)
    if not bool(finite.any()):
        return ["its output is not finite anywhere"], readings
    x1, x2 = x1[finite], x2[finite]
    if bool((x1 == x1[0]).all()) and bool((x2 == x1[0]).all()):
        return [f"its output is constant ({float(x1[0]):.6g} everywhere, for two input draws)"], readings
    change = float((x1 - x2).norm() / max(float(x1.norm()), 1e-30))
    readings["relative_change"] = change
    if change < MIN_CHANGE:
        reasons.append(f"its output barely changes between two input draws (relative change {change:.2e}, "
                       f"below {MIN_CHANGE:g})")
    ms = _time_ms(task.reference, a, device)
    readings["reference_ms"] = ms
    if ms < MIN_MS[device]:
        reasons.append(f"its reference is too fast to time on this device ({ms * 1e3:.1f} us a call at "
                       f"{readings['shape']}; at least {MIN_MS[device] * 1e3:.0f} us)")
    elif device == "cpu" and (smallest := _smallest(task, readings["shape"], shapes)) is not None:
        try:
            small_ms = ms if smallest == readings["shape"] else \
                _time_ms(task.reference, task.make_inputs(smallest, 1, device), device)
        except Exception:  # noqa: BLE001 (a convolution narrower than its kernel, say: no reading)
            return reasons, readings
        readings["smallest_shape"], readings["smallest_ms"] = smallest, small_ms
        if ms < MIN_GROWTH * small_ms:
            reasons.append(f"its reference is too fast to time on this device ({ms * 1e3:.1f} us a call at "
                           f"{readings['shape']}, {small_ms * 1e3:.1f} us at {smallest}: the call's "
                           f"overhead, not its work, would be timed)")
    return reasons, readings


def _smallest(task, shape: dict, shapes: list[dict]) -> dict | None:
    """The shape to hold the benchmark shape's time against: a KernelBench-style problem's with
    each free constant at 1 (its benchmark shape itself when already there: then it times
    nothing but the call), a folder task's smallest test shape (None when that is the benchmark
    shape: a folder task's shapes are written, not drawn down to 1)."""
    free = getattr(getattr(task.hidden, "problem", None), "free", None)
    if free:
        return {k: 1 if k in free else v for k, v in shape.items()}
    small = min(shapes, key=lambda s: math.prod(s.values()))
    return None if small == shape else small


def triage(paths: list[str], device: str) -> dict:
    saved = socket.socket.connect, socket.getaddrinfo, socket.create_connection
    socket.socket.connect = socket.getaddrinfo = socket.create_connection = _no_network
    threads = torch.get_num_threads()
    if device == "cpu":
        # one thread: on a busy machine threads that wait for each other add milliseconds to every
        # call, whatever its size, and a linear layer then read as fast at one row as at 256
        torch.set_num_threads(1)
    results, errors = [], []
    try:
        for source in sources_of(paths):
            try:
                task = loader.load(source)
            except Exception as e:  # noqa: BLE001
                if NETWORK in str(e):  # wrapped by the loader (urllib wraps it too)
                    results.append({"name": source.name, "source": str(source.path), "ok": False,
                                    "reasons": [NEEDS_NETWORK], "readings": {}})
                    continue
                errors.append({"source": str(source.path), "name": source.name, "error": str(e)[:1000]})
                continue
            reasons, readings = judge_one(task, device)
            results.append({"name": task.name, "source": str(source.path), "ok": not reasons,
                            "reasons": reasons, "readings": readings})
    finally:
        socket.socket.connect, socket.getaddrinfo, socket.create_connection = saved
        torch.set_num_threads(threads)
    return {"device": device, "results": results, "errors": errors}
