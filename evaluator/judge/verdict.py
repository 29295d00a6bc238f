"""The verdict phase: what the runner says ran (kernels, library operators), the GPU probe, and
the report's last fields: reasons, verdict and the overall speedups, all computed by the judge
from data it checked."""
from __future__ import annotations

import math
import time

from evaluator.judge import calls
from evaluator.common import checks
from evaluator.common import opcount
from evaluator.contract import readings
from evaluator.contract import report
from evaluator.common import timing


def stats(ev) -> None:
    """Which kernels of the submission ran, and whether library calls did the task's work."""
    stats = ev.link.stats(time.monotonic() + calls.CALL_LIMIT_S)
    triton_names = [checks.text(n, 200) for n in stats.get("triton", []) or [] if isinstance(n, str)][:32]
    cuda_names = checks.user_cuda_kernels(stats.get("cuda", []) or [])
    names = list(dict.fromkeys(triton_names + [checks.text(n, 200) for n in cuda_names]))[:64]
    ev.report["kernels_launched"] = names
    if not names:
        ev.codes.append(("no_kernel_launched", "no Triton or CUDA kernel of the submission ran "
                                               "(library calls only?)"))
    else:
        library = library_work(ev, stats.get("aten"))
        if library:
            # the submission's own kernels ran: the finding is that library calls did the work
            ran = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
            ev.codes.append(("no_kernel_launched", f"library calls did a large share of the task's work, "
                                                   f"not the submission's own kernels ({ran} ran): "
                                                   + "; ".join(library[:4])))
    probe = ev.setup.probe
    slowdown = probe.slowdown() if probe else 1.0
    if probe:
        ev.report["readings"].update(probe.readings())
    if readings.busy_after_recheck(ev.report["readings"]):
        ev.codes.append(("extra_threads", f"the {ev.device} was busy while the runner was "
                                          f"stopped: a fixed probe ran {slowdown:.1f}x slower than "
                                          f"before the run (work left running in the background; "
                                          f"{probe.describe()})"))
    ev.link.exit()


def library_work(ev, aten) -> list[str]:
    """The profiled call's library operators that did a large share of the task's work."""
    if not isinstance(aten, dict) or ev.profiled is None:
        return []
    ops = {}
    for name, rec in list(aten.items())[:64]:
        if (isinstance(name, str) and isinstance(rec, list) and len(rec) == 3
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rec)):
            ops[name[:64]] = rec
    profiled = ev.profiled
    return opcount.library_work(ops, out_numel=profiled.out_numel, task_flops=ev.setup.task.flops(profiled.shape))


def complete(r: dict, codes: list[tuple[str, str]], *, mode: str, task) -> None:
    """Reasons, codes and verdict from the findings (each once, in order); in a ranked report that
    is not rejected, the overall speedups (geometric means over the shapes)."""
    codes = list(dict.fromkeys(codes))[:report.MAX_REASONS]
    r["reason_codes"] = [c for c, _ in codes]
    r["reasons"] = [m[:report.MAX_TEXT] for _, m in codes]
    r["verdict"] = report.verdict_for(r["reason_codes"])
    if r["verdict"] == "rejected":
        r["shapes"] = []
    elif mode == "ranked" and r["shapes"]:
        r["speedup_vs_compile"] = finite(timing.geomean([s["speedup_vs_compile"] for s in r["shapes"]]))
        r["speedup_vs_eager"] = finite(timing.geomean([s["speedup_vs_eager"] for s in r["shapes"]]))
        limit, sc = task.max_speedup_vs_compile, r["speedup_vs_compile"]
        if sc and sc > limit and "too_fast_vs_compile" not in r["reason_codes"]:
            r["reason_codes"].append("too_fast_vs_compile")
            r["reasons"].append(f"{sc:.2f}x faster than torch.compile overall (above {limit:g}x)")
            r["verdict"] = report.verdict_for(r["reason_codes"])
    for row in r["shapes"]:
        for key, value in row.items():
            if isinstance(value, float):
                row[key] = finite(value)


def finite(x):
    return float(x) if x is not None and math.isfinite(x) else None
